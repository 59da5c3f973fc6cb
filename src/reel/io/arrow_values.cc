// Bounds on the values of a data column (io/arrow_values.h).
#include "io/arrow_values.h"

#include <arrow/api.h>

#include <algorithm>
#include <cmath>

namespace reel::internal {

namespace {

// A test of one float or double value (the leaves of a column's lists).
using ValueTest = bool (*)(double);

std::optional<int64_t> FirstRowWhere(const arrow::Array& array, ValueTest test);

template <typename ArrayType>
std::optional<int64_t> ScanFloats(const arrow::Array& array, ValueTest test) {
  const auto& a = static_cast<const ArrayType&>(array);
  const auto* v = a.raw_values();
  for (int64_t i = 0; i < a.length(); ++i)
    if (test(v[i]) && a.IsValid(i)) return i;
  return std::nullopt;
}

// The row of a list array holding child value `child` (counted from the child's start).
template <typename ListType>
std::optional<int64_t> ScanList(const arrow::Array& array, ValueTest test) {
  const auto& a = static_cast<const ListType&>(array);
  const auto* offsets = a.raw_value_offsets();  // this array's rows, its offset applied
  const int64_t first = offsets[0], last = offsets[a.length()];
  std::shared_ptr<arrow::Array> child = a.values()->Slice(first, last - first);
  for (int64_t from = 0;;) {
    std::optional<int64_t> j = FirstRowWhere(*child->Slice(from), test);
    if (!j) return std::nullopt;
    const int64_t at = first + from + *j;
    const int64_t row = std::upper_bound(offsets, offsets + a.length() + 1, at) - offsets - 1;
    if (a.IsValid(row)) return row;
    from = offsets[row + 1] - first;  // a null row's values are not the column's
  }
}

// The first non-null row of `array` holding a value `test` accepts (float or double values,
// or lists of them at any depth), or nullopt. Other types: nullopt.
std::optional<int64_t> FirstRowWhere(const arrow::Array& array, ValueTest test) {
  switch (array.type_id()) {
    case arrow::Type::FLOAT: return ScanFloats<arrow::FloatArray>(array, test);
    case arrow::Type::DOUBLE: return ScanFloats<arrow::DoubleArray>(array, test);
    case arrow::Type::LIST: return ScanList<arrow::ListArray>(array, test);
    case arrow::Type::LARGE_LIST: return ScanList<arrow::LargeListArray>(array, test);
    case arrow::Type::FIXED_SIZE_LIST: {
      const auto& a = static_cast<const arrow::FixedSizeListArray&>(array);
      const int64_t width = a.list_type()->list_size();
      if (width == 0) return std::nullopt;
      std::shared_ptr<arrow::Array> child = a.values()->Slice(a.value_offset(0), a.length() * width);
      for (int64_t from = 0;;) {
        std::optional<int64_t> j = FirstRowWhere(*child->Slice(from), test);
        if (!j) return std::nullopt;
        const int64_t row = (from + *j) / width;
        if (a.IsValid(row)) return row;
        from = (row + 1) * width;
      }
    }
    default: return std::nullopt;
  }
}

std::optional<int64_t> FirstRowWhere(const arrow::ChunkedArray& column, ValueTest test) {
  int64_t base = 0;
  for (const auto& chunk : column.chunks()) {
    if (std::optional<int64_t> row = FirstRowWhere(*chunk, test)) return base + *row;
    base += chunk->length();
  }
  return std::nullopt;
}

bool NonFinite(double v) { return !std::isfinite(v); }
bool NonZero(double v) { return v != 0; }  // NaN included

}  // namespace

std::optional<int64_t> FixedRowValues(const arrow::DataType& type) {
  if (type.id() != arrow::Type::FIXED_SIZE_LIST) {
    if (type.id() == arrow::Type::LIST || type.id() == arrow::Type::LARGE_LIST) return std::nullopt;
    return 1;
  }
  const auto& fixed = static_cast<const arrow::FixedSizeListType&>(type);
  std::optional<int64_t> inner = FixedRowValues(*fixed.value_type());
  if (!inner) return std::nullopt;
  return std::min<int64_t>(*inner * fixed.list_size(), int64_t{1} << 62);
}

std::optional<int64_t> FirstNonFiniteRow(const arrow::Array& array) { return FirstRowWhere(array, NonFinite); }
std::optional<int64_t> FirstNonFiniteRow(const arrow::ChunkedArray& column) {
  return FirstRowWhere(column, NonFinite);
}
std::optional<int64_t> FirstNonZeroRow(const arrow::ChunkedArray& column) { return FirstRowWhere(column, NonZero); }

bool HoldsFloats(const arrow::DataType& type) {
  switch (type.id()) {
    case arrow::Type::FLOAT:
    case arrow::Type::DOUBLE: return true;
    case arrow::Type::LIST:
    case arrow::Type::LARGE_LIST:
    case arrow::Type::FIXED_SIZE_LIST:
      return HoldsFloats(*static_cast<const arrow::BaseListType&>(type).value_type());
    default: return false;
  }
}

}  // namespace reel::internal
