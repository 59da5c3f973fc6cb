// io/arrow_take.h: gathering rows with nulls or empty values, list -> fixed_size_list,
// frame_index validation.
#include "io/arrow_take.h"

#include <arrow/api.h>
#include <gtest/gtest.h>
#include "testing/status_matchers.h"

namespace reel::internal {
namespace {

std::shared_ptr<arrow::ChunkedArray> ListOfDoubles(const std::vector<std::vector<double>>& rows) {
  arrow::ListBuilder b(arrow::default_memory_pool(), std::make_shared<arrow::DoubleBuilder>());
  auto* values = static_cast<arrow::DoubleBuilder*>(b.value_builder());
  for (const auto& r : rows) {
    EXPECT_OK(b.Append());
    for (double v : r) EXPECT_TRUE(values->Append(v).ok());
  }
  return std::make_shared<arrow::ChunkedArray>(b.Finish().ValueOrDie());
}

TEST(TakeRows, MissingRowsBecomeEmptyListsOrNulls) {
  auto column = ListOfDoubles({{1, 2}, {3}});
  auto empty = TakeRows(*column, {1, -1, 0}, MissingRow::kEmpty);
  ASSERT_OK(empty);
  const auto& list = static_cast<const arrow::ListArray&>(**empty);
  ASSERT_EQ(list.length(), 3);
  EXPECT_EQ(list.value_length(0), 1);
  EXPECT_EQ(list.value_length(1), 0);
  EXPECT_FALSE(list.IsNull(1));
  EXPECT_EQ(list.value_length(2), 2);
  auto nulls = TakeRows(*column, {-1, 0}, MissingRow::kNull);
  ASSERT_OK(nulls);
  EXPECT_TRUE((*nulls)->IsNull(0));
  EXPECT_FALSE(TakeRows(*column, {2}, MissingRow::kNull).ok());
}

TEST(ListToFixed, AcceptsOnlyTheFixedLength) {
  auto fixed = ListToFixed(*ListOfDoubles({{1, 2}, {3, 4}}), 2, "f");
  ASSERT_OK(fixed);
  EXPECT_EQ((*fixed)->type()->ToString(), arrow::fixed_size_list(arrow::float64(), 2)->ToString());
  auto bad = ListToFixed(*ListOfDoubles({{1, 2}, {3}}), 2, "f.parquet: column x");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "f.parquet: column x: row 1 holds 1 values, expected 2");
}

TEST(FrameIndexValues, RefusesDuplicatesNegativesAndOtherTypes) {
  auto ints = [](std::vector<int64_t> v) {
    arrow::Int64Builder b;
    EXPECT_OK(b.AppendValues(v));
    return std::make_shared<arrow::ChunkedArray>(b.Finish().ValueOrDie());
  };
  auto ok = FrameIndexValues(*ints({2, 0, 1}), "p");
  ASSERT_OK(ok);
  EXPECT_EQ(*ok, (std::vector<int64_t>{2, 0, 1}));
  EXPECT_EQ(FrameIndexValues(*ints({0, 1, 1}), "p").status().message(), "p: frame_index 1 appears more than once");
  EXPECT_EQ(FrameIndexValues(*ints({0, -3}), "p").status().message(), "p: frame_index -3 (row 1) is negative");
  EXPECT_FALSE(FrameIndexValues(*ListOfDoubles({{1}}), "p").ok());
}

}  // namespace
}  // namespace reel::internal
