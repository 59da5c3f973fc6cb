// The test kit's own assertions fail, and say what they got, when they should.
#include "testing/status_matchers.h"

#include <gtest/gtest-spi.h>

namespace reel {
namespace {

using ::reel::testing::IsOk;
using ::reel::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

Result<int> Seven() { return 7; }
Result<int> Missing() { return Status::NotFound("meta/info.json: no such file"); }

TEST(StatusMatchersTest, OkPassesForStatusAndResult) {
  ASSERT_OK(Status::OK());
  EXPECT_OK(Seven());
  ASSERT_OK_AND_ASSIGN(int seven, Seven());
  EXPECT_EQ(seven, 7);
  EXPECT_THAT(Seven(), IsOk());
  EXPECT_THAT(Missing(), Not(IsOk()));
}

TEST(StatusMatchersTest, AFailureNamesTheExpressionTheStatusAndTheRule) {
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(Missing()), "Missing() is not OK: NotFound: meta/info.json: no such file");
  EXPECT_FATAL_FAILURE(ASSERT_OK(Status::Invalid("bad").WithRule("zip.traversal")), "[rule zip.traversal]");
  EXPECT_FATAL_FAILURE(
      {
        ASSERT_OK_AND_ASSIGN(int value, Missing());
        (void)value;
      },
      "Missing() is not OK");
}

TEST(StatusMatchersTest, StatusIsMatchesTheCodeAndTheMessage) {
  EXPECT_THAT(Missing(), StatusIs(StatusCode::kNotFound));
  EXPECT_THAT(Missing(), StatusIs(StatusCode::kNotFound, HasSubstr("info.json")));
  EXPECT_THAT(Missing(), Not(StatusIs(StatusCode::kInvalid)));
  EXPECT_THAT(Missing(), Not(StatusIs(StatusCode::kNotFound, HasSubstr("stats.json"))));
  EXPECT_NONFATAL_FAILURE(EXPECT_THAT(Missing(), StatusIs(StatusCode::kInvalid)), "which is NotFound");
}

}  // namespace
}  // namespace reel
