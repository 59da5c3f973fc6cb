// FirstNonFiniteRow and FixedRowValues (io/arrow_values.h) on arrays built here with Arrow's
// builders: the row found through lists, fixed-size lists, slices, chunks and null rows.
#include "io/arrow_values.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include "testing/status_matchers.h"

namespace reel::internal {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

std::shared_ptr<arrow::Array> Doubles(const std::vector<double>& v) {
  arrow::DoubleBuilder b;
  EXPECT_OK(b.AppendValues(v));
  return *b.Finish();
}

// A list<double> of `rows`; nullopt is a null row, holding one NaN underneath.
std::shared_ptr<arrow::Array> Lists(const std::vector<std::optional<std::vector<double>>>& rows) {
  std::vector<int32_t> offsets = {0};
  std::vector<double> values;
  std::vector<uint8_t> valid;
  for (const auto& r : rows) {
    const std::vector<double> vals = r ? *r : std::vector<double>{kNan};  // a null row's junk
    values.insert(values.end(), vals.begin(), vals.end());
    offsets.push_back(static_cast<int32_t>(values.size()));
    valid.push_back(r ? 1 : 0);
  }
  arrow::TypedBufferBuilder<bool> bits;
  EXPECT_OK(bits.Reserve(valid.size()));
  for (uint8_t v : valid) bits.UnsafeAppend(v != 0);
  auto null_bitmap = *bits.Finish();
  auto offsets_array = std::make_shared<arrow::Int32Array>(static_cast<int64_t>(offsets.size()),
                                                           arrow::Buffer::FromVector(offsets));
  return std::make_shared<arrow::ListArray>(arrow::list(arrow::float64()), static_cast<int64_t>(rows.size()),
                                            offsets_array->values(), Doubles(values), null_bitmap);
}

TEST(FirstNonFiniteRow, FindsTheRowThroughEveryShape) {
  EXPECT_EQ(FirstNonFiniteRow(*Doubles({1, 2, 3})), std::nullopt);
  EXPECT_EQ(FirstNonFiniteRow(*Doubles({1, 2, INFINITY})), 2);
  EXPECT_EQ(FirstNonFiniteRow(*Doubles({1, kNan, 3})->Slice(2)), std::nullopt);
  EXPECT_EQ(FirstNonFiniteRow(*Doubles({kNan, 1, kNan})->Slice(1)), 1);
  // A null row's values are not the column's: the NaN under row 1 is skipped, row 3's found.
  auto lists = Lists({{{1, 2}}, std::nullopt, {{}}, {{3, -INFINITY}}});
  EXPECT_EQ(FirstNonFiniteRow(*lists), 3);
  EXPECT_EQ(FirstNonFiniteRow(*lists->Slice(1, 2)), std::nullopt);
  EXPECT_EQ(FirstNonFiniteRow(*lists->Slice(2)), 1);
  auto fixed = *arrow::FixedSizeListArray::FromArrays(Doubles({0, 1, 2, 3, 4, kNan}), 2);
  EXPECT_EQ(FirstNonFiniteRow(*fixed), 2);
  EXPECT_EQ(FirstNonFiniteRow(*fixed->Slice(0, 2)), std::nullopt);
  EXPECT_EQ(FirstNonFiniteRow(*fixed->Slice(1)), 1);
  arrow::ChunkedArray chunks({Doubles({1, 2}), Doubles({3}), Doubles({4, kNan})});
  EXPECT_EQ(FirstNonFiniteRow(chunks), 4);
  arrow::Int64Builder ints;
  EXPECT_EQ(FirstNonFiniteRow(**ints.Finish()), std::nullopt);
}

// A v1.0 sensor whose every value is 0 was absent (reel migrate); a null row's values are
// not the column's, and NaN is a value.
TEST(FirstNonZeroRow, FindsTheFirstSampleAndSkipsNullRows) {
  auto zeros = *arrow::FixedSizeListArray::FromArrays(Doubles({0, 0, 0, 0}), 2);
  EXPECT_EQ(FirstNonZeroRow(arrow::ChunkedArray({zeros})), std::nullopt);
  auto later = *arrow::FixedSizeListArray::FromArrays(Doubles({0, 0, 0, 0.5}), 2);
  EXPECT_EQ(FirstNonZeroRow(arrow::ChunkedArray({zeros, later})), 3);
  auto lists = Lists({{{0, 0}}, std::nullopt, {{}}});  // the null row holds a NaN underneath
  EXPECT_EQ(FirstNonZeroRow(arrow::ChunkedArray({lists})), std::nullopt);
  EXPECT_EQ(FirstNonZeroRow(arrow::ChunkedArray({Lists({{{0, kNan}}})})), 0);
  EXPECT_TRUE(HoldsFloats(*arrow::list(arrow::fixed_size_list(arrow::float32(), 6))));
  EXPECT_FALSE(HoldsFloats(*arrow::list(arrow::int64())));
}

TEST(FixedRowValues, CountsNestedFixedWidthsAndNotVariableLists) {
  EXPECT_EQ(FixedRowValues(*arrow::float32()), 1);
  EXPECT_EQ(FixedRowValues(*arrow::fixed_size_list(arrow::float32(), 256)), 256);
  EXPECT_EQ(FixedRowValues(*arrow::fixed_size_list(arrow::fixed_size_list(arrow::int16(), 16), 16)), 256);
  EXPECT_EQ(FixedRowValues(*arrow::list(arrow::float32())), std::nullopt);
  EXPECT_EQ(FixedRowValues(*arrow::fixed_size_list(arrow::list(arrow::float32()), 4)), std::nullopt);
}

}  // namespace
}  // namespace reel::internal
