#include "maint/migrate_table.h"

#include <arrow/api.h>
#include <arrow/array/concatenate.h>

#include <map>
#include <set>

namespace reel::internal {
namespace {

// The key columns the pooled table takes from timestamps.json, never from a sensor table.
const std::set<std::string> kFrameKeys = {"episode_index", "frame_index", "timestamp",
                                          "task_index",    "wall_time",   "hardware_ns"};

Status FromArrow(const arrow::Status& st, const std::string& where) {
  if (st.ok()) return Status::OK();
  return Status::IOError(where + ": " + st.ToString());
}

template <typename T>
Result<T> FromArrow(arrow::Result<T> r, const std::string& where) {
  if (!r.ok()) return Status::IOError(where + ": " + r.status().ToString());
  return std::move(r).ValueUnsafe();
}

// One element of `type` for a frame the table lacks: zeros for a fixed-size list (a glove
// or hand-pose placeholder, action [0]), [] for a list (IMU), "connected" for a status.
Result<std::shared_ptr<arrow::Array>> DefaultOf(const std::shared_ptr<arrow::DataType>& type,
                                                const std::string& where) {
  if (type->id() == arrow::Type::FIXED_SIZE_LIST) {
    const auto& fixed = static_cast<const arrow::FixedSizeListType&>(*type);
    REEL_ASSIGN_OR_RETURN(auto zero, FromArrow(arrow::MakeScalar(fixed.value_type(), 0), where));
    REEL_ASSIGN_OR_RETURN(auto values, FromArrow(arrow::MakeArrayFromScalar(*zero, fixed.list_size()), where));
    return FromArrow(arrow::FixedSizeListArray::FromArrays(values, type), where);
  }
  if (type->id() == arrow::Type::LIST) {
    const auto& list = static_cast<const arrow::ListType&>(*type);
    REEL_ASSIGN_OR_RETURN(auto values, FromArrow(arrow::MakeEmptyArray(list.value_type()), where));
    arrow::Int32Builder offsets;
    REEL_RETURN_IF_ERROR(FromArrow(offsets.AppendValues({0, 0}), where));
    REEL_ASSIGN_OR_RETURN(auto offsets_array, FromArrow(offsets.Finish(), where));
    REEL_ASSIGN_OR_RETURN(auto array, FromArrow(arrow::ListArray::FromArrays(type, *offsets_array, *values), where));
    return std::shared_ptr<arrow::Array>(std::move(array));
  }
  if (type->id() == arrow::Type::STRING) {
    arrow::StringBuilder b;
    REEL_RETURN_IF_ERROR(FromArrow(b.Append("connected"), where));
    return FromArrow(b.Finish(), where);
  }
  return FromArrow(arrow::MakeArrayOfNull(type, 1), where);
}

// `values` taken at `rows` (-1: the default), as runs: consecutive rows are one slice (the
// common case, every frame present in order, is one slice), and consecutive defaults one
// array of the default repeated (a column no table has, as action, is one array, never a
// slice per row: 2M frames made 2M slices).
Result<std::shared_ptr<arrow::Array>> TakeRows(std::shared_ptr<arrow::Array> values, const std::vector<int64_t>& rows,
                                               const std::string& where) {
  std::shared_ptr<arrow::Scalar> fill;
  std::vector<std::shared_ptr<arrow::Array>> runs;
  for (size_t i = 0; i < rows.size();) {
    size_t j = i + 1;
    if (rows[i] < 0) {
      while (j < rows.size() && rows[j] < 0) ++j;
      if (!fill) {
        REEL_ASSIGN_OR_RETURN(auto one, DefaultOf(values->type(), where));
        REEL_ASSIGN_OR_RETURN(fill, FromArrow(one->GetScalar(0), where));
      }
      REEL_ASSIGN_OR_RETURN(auto run, FromArrow(arrow::MakeArrayFromScalar(*fill, static_cast<int64_t>(j - i)), where));
      runs.push_back(std::move(run));
    } else {
      while (j < rows.size() && rows[j] == rows[i] + static_cast<int64_t>(j - i)) ++j;
      runs.push_back(values->Slice(rows[i], static_cast<int64_t>(j - i)));
    }
    i = j;
  }
  if (runs.size() == 1) return runs.front();
  if (runs.empty()) return FromArrow(arrow::MakeEmptyArray(values->type()), where);
  return FromArrow(arrow::Concatenate(runs), where);
}

// frame_index -> the first row that holds it.
Result<std::map<int64_t, int64_t>> FirstRowOfFrame(const LegacyTable& t) {
  auto column = t.table->GetColumnByName("frame_index");
  if (!column) return Status::Invalid(t.path + ": no frame_index column (v1.0 sensor parquets have one)");
  if (column->type()->id() != arrow::Type::INT64)
    return Status::Invalid(t.path + ": frame_index is " + column->type()->ToString() + ", not int64");
  std::map<int64_t, int64_t> first;
  int64_t row = 0;
  for (const auto& chunk : column->chunks()) {
    const auto& a = static_cast<const arrow::Int64Array&>(*chunk);
    for (int64_t i = 0; i < a.length(); ++i, ++row)
      if (a.IsValid(i)) first.emplace(a.Value(i), row);
  }
  return first;
}

Result<std::shared_ptr<arrow::Array>> Int64s(const std::vector<LegacyFrame>& frames,
                                             int64_t (*at)(const LegacyFrame&, int64_t), int64_t n) {
  arrow::Int64Builder b;
  for (const LegacyFrame& f : frames) REEL_RETURN_IF_ERROR(FromArrow(b.Append(at(f, n)), "int64 column"));
  return FromArrow(b.Finish(), "int64 column");
}

// The columns timestamps.json gives.
Status AddFrameKeys(int64_t n, const std::vector<LegacyFrame>& frames, arrow::FieldVector* fields, arrow::ArrayVector* arrays) {
  auto add = [&](const char* name, std::shared_ptr<arrow::Array> a) {
    fields->push_back(arrow::field(name, a->type()));
    arrays->push_back(std::move(a));
  };
  REEL_ASSIGN_OR_RETURN(auto ep, Int64s(frames, [](const LegacyFrame&, int64_t n) { return n; }, n));
  add("episode_index", ep);
  REEL_ASSIGN_OR_RETURN(auto fi, Int64s(frames, [](const LegacyFrame& f, int64_t) { return f.frame_index; }, n));
  add("frame_index", fi);
  arrow::FloatBuilder ts;
  arrow::DoubleBuilder wall;
  for (const LegacyFrame& f : frames) {
    REEL_RETURN_IF_ERROR(FromArrow(ts.Append(static_cast<float>(f.timestamp)), "timestamp"));
    REEL_RETURN_IF_ERROR(FromArrow(wall.Append(f.wall_time), "wall_time"));
  }
  REEL_ASSIGN_OR_RETURN(auto ts_array, FromArrow(ts.Finish(), "timestamp"));
  add("timestamp", ts_array);
  REEL_ASSIGN_OR_RETURN(auto task, Int64s(frames, [](const LegacyFrame&, int64_t) { return int64_t{0}; }, n));
  add("task_index", task);
  REEL_ASSIGN_OR_RETURN(auto wall_array, FromArrow(wall.Finish(), "wall_time"));
  add("wall_time", wall_array);
  // A key column of every pooled episode (the checker's data.key_column): 0 where
  // timestamps.json has none (mono sessions), as the reference migration writes.
  REEL_ASSIGN_OR_RETURN(auto hw, Int64s(frames, [](const LegacyFrame& f, int64_t) { return f.hardware_ns; }, n));
  add("hardware_ns", hw);
  return Status::OK();
}

}  // namespace

Result<std::shared_ptr<arrow::Table>> PooledTableFromLegacy(int64_t n, const std::vector<LegacyFrame>& frames,
                                                            const std::vector<LegacyTable>& sources) {
  arrow::FieldVector fields;
  arrow::ArrayVector arrays;
  REEL_RETURN_IF_ERROR(AddFrameKeys(n, frames, &fields, &arrays));
  std::set<std::string> taken;
  for (const LegacyTable& t : sources) {
    REEL_ASSIGN_OR_RETURN(auto first, FirstRowOfFrame(t));
    std::vector<int64_t> rows;
    rows.reserve(frames.size());
    for (const LegacyFrame& f : frames) {
      auto it = first.find(f.frame_index);
      rows.push_back(it == first.end() ? -1 : it->second);
    }
    for (int c = 0; c < t.table->num_columns(); ++c) {
      const auto& field = t.table->schema()->field(c);
      if (kFrameKeys.count(field->name()) || !taken.insert(field->name()).second) continue;
      const std::string where = t.path + ": column " + field->name();
      REEL_ASSIGN_OR_RETURN(auto whole, FromArrow(arrow::Concatenate(t.table->column(c)->chunks()), where));
      REEL_ASSIGN_OR_RETURN(auto taken_rows, TakeRows(whole, rows, where));
      fields.push_back(arrow::field(field->name(), field->type()));
      arrays.push_back(std::move(taken_rows));
    }
  }
  if (!taken.count("action")) {  // the contract's placeholder column: action [0.0] on every row
    auto type = arrow::fixed_size_list(arrow::float32(), 1);
    REEL_ASSIGN_OR_RETURN(auto empty, FromArrow(arrow::MakeEmptyArray(type), "action"));
    REEL_ASSIGN_OR_RETURN(auto action, TakeRows(empty, std::vector<int64_t>(frames.size(), -1), "action"));
    fields.push_back(arrow::field("action", type));
    arrays.push_back(std::move(action));
  }
  return arrow::Table::Make(arrow::schema(fields), arrays, static_cast<int64_t>(frames.size()));
}

}  // namespace reel::internal
