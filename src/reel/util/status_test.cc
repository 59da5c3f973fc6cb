// Status and Result<T> (reel/status.h): the rule id is a field that survives context,
// and Result is as strict as Arrow's (misuse aborts with a message, never UB).
#include "reel/status.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>
#include "testing/status_matchers.h"

namespace reel {
namespace {

TEST(StatusTest, RuleIsAFieldKeptThroughContext) {
  const Status st = Status::Invalid("zip.traversal: entry '../x' leaves the task").WithRule("zip.traversal");
  EXPECT_EQ(st.rule(), "zip.traversal");
  const Status wrapped = st.WithContext("upload.zip").WithContext("project p");
  EXPECT_EQ(wrapped.rule(), "zip.traversal");
  EXPECT_EQ(wrapped.code(), StatusCode::kInvalid);
  EXPECT_EQ(wrapped.message(), "project p: upload.zip: zip.traversal: entry '../x' leaves the task");
  EXPECT_EQ(Status::Invalid("zip.traversal: looks like one").rule(), "");  // text is not a rule
}

TEST(StatusTest, OkCarriesNoRule) {
  EXPECT_EQ(Status::OK().WithRule("zip.name").rule(), "");
  EXPECT_OK(Status::OK().WithRule("zip.name"));
}

Result<int> Half(int x) {
  if (x % 2) return Status::Invalid("odd: " + std::to_string(x)).WithRule("test.odd");
  return x / 2;
}

TEST(ResultTest, ValueAndErrorRoundTrip) {
  auto ok = Half(4);
  ASSERT_OK(ok);
  EXPECT_EQ(*ok, 2);
  EXPECT_OK(ok.status());
  auto bad = Half(3);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().rule(), "test.odd");
  EXPECT_EQ(bad.ValueOr(-1), -1);
}

using ResultDeathTest = ::testing::Test;

TEST_F(ResultDeathTest, ConstructingFromAnOkStatusAborts) {
  // On main this made a Result that was neither a value nor an error: ok() false and
  // status() OK, so REEL_ASSIGN_OR_RETURN returned "OK" from a failed call.
  EXPECT_DEATH({ Result<int> r(Status::OK()); (void)r; }, "Result constructed from an OK Status");
}

TEST_F(ResultDeathTest, ValueOfAnErrorAbortsNamingTheStatus) {
  // On main this dereferenced an empty std::optional (undefined behaviour).
  EXPECT_DEATH({ (void)*Half(5); }, "value of an error: Invalid: odd: 5");
  EXPECT_DEATH({ (void)Half(7).value(); }, "value of an error: Invalid: odd: 7");
  EXPECT_DEATH(
      {
        Result<std::vector<int>> r(Status::NotFound("meta/info.json"));
        (void)r->size();
      },
      "value of an error: NotFound: meta/info.json");
}

}  // namespace
}  // namespace reel
