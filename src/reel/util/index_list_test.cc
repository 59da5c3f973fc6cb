// "1,3,5-9": the one parser of episode lists and frame ranges.
#include "reel/index_list.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>
#include "testing/status_matchers.h"

namespace reel {
namespace {

std::vector<int64_t> Parsed(std::string_view text) {
  auto r = ParseIndexList(text);
  EXPECT_OK(r) << text;
  return r.ok() ? *r : std::vector<int64_t>{};
}

std::string Refusal(std::string_view text, int64_t max_size = kMaxIndexListSize) {
  auto r = ParseIndexList(text, max_size);
  EXPECT_FALSE(r.ok()) << text;
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalid);
  return r.status().message();
}

TEST(IndexList, NumbersAndInclusiveRangesInTheOrderWritten) {
  EXPECT_EQ(Parsed("7"), (std::vector<int64_t>{7}));
  EXPECT_EQ(Parsed("1,3,5-9"), (std::vector<int64_t>{1, 3, 5, 6, 7, 8, 9}));
  EXPECT_EQ(Parsed("9,2-3"), (std::vector<int64_t>{9, 2, 3}));
  EXPECT_EQ(Parsed("0-0"), (std::vector<int64_t>{0}));
  EXPECT_EQ(Parsed(" 1 , 2 - 3 "), (std::vector<int64_t>{1, 2, 3}));
}

TEST(IndexList, RepeatsStayUntilDropped) {
  EXPECT_EQ(Parsed("3,1-4,3"), (std::vector<int64_t>{3, 1, 2, 3, 4, 3}));
  EXPECT_EQ(DropRepeats(Parsed("3,1-4,3")), (std::vector<int64_t>{3, 1, 2, 4}));
}

TEST(IndexList, MalformedItemsAreRefusedNamingTheItem) {
  EXPECT_NE(Refusal("1,,2").find("empty item"), std::string::npos);
  EXPECT_NE(Refusal("1,").find("empty item"), std::string::npos);
  EXPECT_NE(Refusal("").find("empty item"), std::string::npos);
  EXPECT_NE(Refusal("x").find("\"x\""), std::string::npos);
  EXPECT_NE(Refusal("1-").find("\"1-\""), std::string::npos);
  EXPECT_NE(Refusal("-3").find("negative"), std::string::npos);
  EXPECT_NE(Refusal("+3").find("\"+3\""), std::string::npos);
  EXPECT_NE(Refusal("1.5").find("\"1.5\""), std::string::npos);
  EXPECT_NE(Refusal("99999999999999999999").find("too large"), std::string::npos);
}

TEST(IndexList, BackwardsAndColonRangesShowTheRightSpelling) {
  EXPECT_NE(Refusal("9-5").find("write 5-9"), std::string::npos);
  EXPECT_NE(Refusal("0:10").find("e.g. 0-10"), std::string::npos);
}

TEST(IndexList, AbsurdRangesAreRefusedBeforeAnythingIsAllocated) {
  EXPECT_NE(Refusal("0-9007199254740992").find("more than 1000000"), std::string::npos);
  EXPECT_NE(Refusal("1-5,10-20", 10).find("more than 10"), std::string::npos);
  EXPECT_EQ(ParseIndexList("1-10", 10)->size(), 10u);
}

}  // namespace
}  // namespace reel
