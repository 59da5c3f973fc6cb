// Internal: bounds on the values a data column holds, one definition for the writers that
// take columns from outside (add-columns, backfill-hand-pose) and for the checker that reads
// them back (issue 27: "every writer's output readable by its readers").
#pragma once

#include <cstdint>
#include <optional>

namespace arrow {
class Array;
class ChunkedArray;
class DataType;
}  // namespace arrow

namespace reel::internal {

// The most values one row of a fixed-width column holds: 65,536 (a 256 x 256 pressure
// image; the contract's widest is a 16 x 16 glove matrix, 256). add-columns refuses a wider
// column and `reel check` reports one (data.row_width): a fixed_size_list<float>[20000000]
// is 80 MB of every row. Variable lists (force-matrix samples, SLAM points, IMU samples)
// hold what their devices sent in a frame's time and are bounded by the file's size.
inline constexpr int64_t kMaxRowValues = int64_t{1} << 16;

// Values one row of `type` holds when that is fixed (a scalar: 1, fixed_size_list: its
// size times its values'), else nullopt (variable lists).
std::optional<int64_t> FixedRowValues(const arrow::DataType& type);

// The first row of `array` that holds a NaN or an infinity (float or double values, or lists
// of them at any depth; null rows skipped), or nullopt. Other types: nullopt.
std::optional<int64_t> FirstNonFiniteRow(const arrow::Array& array);
std::optional<int64_t> FirstNonFiniteRow(const arrow::ChunkedArray& column);
// The same for a value other than 0 (NaN included): the first row that holds a sample.
std::optional<int64_t> FirstNonZeroRow(const arrow::ChunkedArray& column);
// Whether `type` is float or double, or lists of them at any depth (what the scans read).
bool HoldsFloats(const arrow::DataType& type);

}  // namespace reel::internal
