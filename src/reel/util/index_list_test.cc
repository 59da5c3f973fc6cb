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
  EXPECT_THAT(Refusal("1,,2"), ::testing::HasSubstr("empty item"));
  EXPECT_THAT(Refusal("1,"), ::testing::HasSubstr("empty item"));
  EXPECT_THAT(Refusal(""), ::testing::HasSubstr("empty item"));
  EXPECT_THAT(Refusal("x"), ::testing::HasSubstr("\"x\""));
  EXPECT_THAT(Refusal("1-"), ::testing::HasSubstr("\"1-\""));
  EXPECT_THAT(Refusal("-3"), ::testing::HasSubstr("negative"));
  EXPECT_THAT(Refusal("+3"), ::testing::HasSubstr("\"+3\""));
  EXPECT_THAT(Refusal("1.5"), ::testing::HasSubstr("\"1.5\""));
  EXPECT_THAT(Refusal("99999999999999999999"), ::testing::HasSubstr("too large"));
}

TEST(IndexList, BackwardsAndColonRangesShowTheRightSpelling) {
  EXPECT_THAT(Refusal("9-5"), ::testing::HasSubstr("write 5-9"));
  EXPECT_THAT(Refusal("0:10"), ::testing::HasSubstr("e.g. 0-10"));
}

TEST(IndexList, AbsurdRangesAreRefusedBeforeAnythingIsAllocated) {
  EXPECT_THAT(Refusal("0-9007199254740992"), ::testing::HasSubstr("more than 1000000"));
  EXPECT_THAT(Refusal("1-5,10-20", 10), ::testing::HasSubstr("more than 10"));
  EXPECT_EQ(ParseIndexList("1-10", 10)->size(), 10u);
}

}  // namespace
}  // namespace reel
