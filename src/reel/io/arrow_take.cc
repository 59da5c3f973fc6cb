// Internal: io/arrow_take.h.
#include "io/arrow_take.h"

#include <arrow/api.h>
#include <arrow/array/concatenate.h>

#include <algorithm>
#include <string>

namespace reel::internal {

namespace {

Status FromArrow(const arrow::Status& st, const std::string& what) {
  return st.ok() ? Status::OK() : Status::Invalid(what + ": " + st.ToString());
}

}  // namespace

Result<std::shared_ptr<arrow::Array>> CombineChunks(const arrow::ChunkedArray& column) {
  if (column.num_chunks() == 1) return column.chunk(0);
  if (column.num_chunks() == 0) {
    auto empty = arrow::MakeEmptyArray(column.type());
    if (!empty.ok()) return Status::Invalid(empty.status().ToString());
    return *empty;
  }
  auto joined = arrow::Concatenate(column.chunks());
  if (!joined.ok()) return Status::Invalid("joining chunks: " + joined.status().ToString());
  return *joined;
}

Result<std::shared_ptr<arrow::Array>> TakeRows(const arrow::ChunkedArray& column,
                                               const std::vector<int64_t>& rows, MissingRow missing) {
  REEL_ASSIGN_OR_RETURN(auto array, CombineChunks(column));
  auto made = arrow::MakeBuilder(column.type());
  if (!made.ok()) return Status::Invalid("building " + column.type()->ToString() + ": " + made.status().ToString());
  std::unique_ptr<arrow::ArrayBuilder> builder = std::move(made).ValueOrDie();
  REEL_RETURN_IF_ERROR(FromArrow(builder->Reserve(static_cast<int64_t>(rows.size())), "reserve"));
  const arrow::ArraySpan span(*array->data());
  for (int64_t r : rows) {
    if (r >= array->length() || r < -1)
      return Status::Invalid("row " + std::to_string(r) + " outside a column of " + std::to_string(array->length()));
    arrow::Status st = r >= 0                          ? builder->AppendArraySlice(span, r, 1)
                       : missing == MissingRow::kNull ? builder->AppendNull()
                                                      : builder->AppendEmptyValue();
    REEL_RETURN_IF_ERROR(FromArrow(st, "gathering " + column.type()->ToString()));
  }
  std::shared_ptr<arrow::Array> out;
  REEL_RETURN_IF_ERROR(FromArrow(builder->Finish(&out), "finishing " + column.type()->ToString()));
  return out;
}

Result<std::shared_ptr<arrow::ChunkedArray>> ListToFixed(const arrow::ChunkedArray& column, int32_t width,
                                                         const std::string& where) {
  if (column.type()->id() != arrow::Type::LIST) return Status::Invalid(where + ": not a list column");
  REEL_ASSIGN_OR_RETURN(auto array, CombineChunks(column));
  const auto& list = static_cast<const arrow::ListArray&>(*array);
  auto type = arrow::fixed_size_list(list.value_type(), width);
  auto made = arrow::MakeBuilder(type);
  if (!made.ok()) return Status::Invalid(where + ": " + made.status().ToString());
  auto& builder = static_cast<arrow::FixedSizeListBuilder&>(**made);
  const arrow::ArraySpan values(*list.values()->data());
  for (int64_t r = 0; r < list.length(); ++r) {
    if (list.IsNull(r)) {
      REEL_RETURN_IF_ERROR(FromArrow(builder.AppendNull(), where));
      continue;
    }
    if (list.value_length(r) != width)
      return Status::Invalid(where + ": row " + std::to_string(r) + " holds " + std::to_string(list.value_length(r)) +
                             " values, expected " + std::to_string(width));
    REEL_RETURN_IF_ERROR(FromArrow(builder.Append(), where));
    REEL_RETURN_IF_ERROR(
        FromArrow(builder.value_builder()->AppendArraySlice(values, list.value_offset(r), width), where));
  }
  std::shared_ptr<arrow::Array> out;
  REEL_RETURN_IF_ERROR(FromArrow(builder.Finish(&out), where));
  return std::make_shared<arrow::ChunkedArray>(out);
}

Result<std::vector<int64_t>> FrameIndexValues(const arrow::ChunkedArray& column, const std::string& where) {
  const arrow::Type::type id = column.type()->id();
  if (id != arrow::Type::INT32 && id != arrow::Type::INT64)
    return Status::Invalid(where + ": frame_index is " + column.type()->ToString() + ", expected int32 or int64");
  if (column.null_count() > 0) return Status::Invalid(where + ": frame_index has null rows");
  std::vector<int64_t> frames;
  frames.reserve(static_cast<size_t>(column.length()));
  for (const auto& chunk : column.chunks())
    for (int64_t r = 0; r < chunk->length(); ++r)
      frames.push_back(id == arrow::Type::INT32 ? static_cast<const arrow::Int32Array&>(*chunk).Value(r)
                                                : static_cast<const arrow::Int64Array&>(*chunk).Value(r));
  for (size_t i = 0; i < frames.size(); ++i)
    if (frames[i] < 0)
      return Status::Invalid(where + ": frame_index " + std::to_string(frames[i]) + " (row " + std::to_string(i) +
                             ") is negative");
  std::vector<int64_t> sorted = frames;
  std::sort(sorted.begin(), sorted.end());
  auto dup = std::adjacent_find(sorted.begin(), sorted.end());
  if (dup != sorted.end())
    return Status::Invalid(where + ": frame_index " + std::to_string(*dup) + " appears more than once");
  return frames;
}

}  // namespace reel::internal
