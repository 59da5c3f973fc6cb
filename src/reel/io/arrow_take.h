// Internal: rows of an Arrow column gathered by index without arrow::compute (which reel
// does not link): the keypoints reader aligns keypoint rows to data rows with it, and
// add-columns aligns a source file's columns to an episode's data rows.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "reel/status.h"

namespace arrow {
class Array;
class ChunkedArray;
class DataType;
}  // namespace arrow

namespace reel::internal {

// What a row index of -1 becomes.
enum class MissingRow { kNull, kEmpty };

// out[i] = column[rows[i]]; rows[i] == -1 gives a null (kNull) or the type's empty value
// (kEmpty: [] for a list, zeros for a fixed_size_list, 0, false or "" for a scalar).
// Invalid for an index outside the column.
Result<std::shared_ptr<arrow::Array>> TakeRows(const arrow::ChunkedArray& column,
                                               const std::vector<int64_t>& rows, MissingRow missing);

// A variable list<T> column whose valid rows all hold `width` values as
// fixed_size_list<T>[width] (null rows stay null, their slots zero). Invalid naming `where`
// and the first row of another length.
Result<std::shared_ptr<arrow::ChunkedArray>> ListToFixed(const arrow::ChunkedArray& column, int32_t width,
                                                         const std::string& where);

// The values of a frame_index column (int32 or int64), checked: no null, none negative,
// each value once. Invalid naming `where` and the offending value.
Result<std::vector<int64_t>> FrameIndexValues(const arrow::ChunkedArray& column, const std::string& where);

// The column as one array (its only chunk, or the chunks concatenated).
Result<std::shared_ptr<arrow::Array>> CombineChunks(const arrow::ChunkedArray& column);

}  // namespace reel::internal
