// meta/episodes rows from an Arrow table.
#include <arrow/api.h>

#include <functional>

#include "reel/metadata.h"

namespace reel {

const char* const kEpisodeColumns[12] = {
    "episode_index", "task_index",  "start_frame_index", "end_frame_index",
    "length",        "created_at",  "duration_sec",      "drop_stats",
    "video_codec",   "calibration", "force_matrix_specs", "slam_specs"};

bool EpisodeRow::HasColumn(std::string_view name) const {
  for (const auto& m : missing_columns)
    if (m == name) return false;
  return true;
}

namespace {

enum class Kind { kInt, kFloat, kString };

bool Accepts(Kind kind, const arrow::DataType& t) {
  switch (kind) {
    case Kind::kInt: return arrow::is_integer(t.id());
    case Kind::kFloat: return arrow::is_floating(t.id()) || arrow::is_integer(t.id());
    case Kind::kString:
      return t.id() == arrow::Type::STRING || t.id() == arrow::Type::LARGE_STRING;
  }
  return false;
}

// Column values as int64 / double / string; nulls keep the caller's default.
Status ReadColumn(const arrow::Table& table, const char* name, Kind kind, const std::string& path,
                  std::vector<EpisodeRow>& rows,
                  const std::function<void(EpisodeRow&, const arrow::Scalar&)>& set) {
  auto column = table.GetColumnByName(name);
  if (!column) {
    for (EpisodeRow& r : rows) r.missing_columns.push_back(name);
    return Status::OK();
  }
  if (!Accepts(kind, *column->type()))
    return Status::Invalid(path + ": column \"" + name + "\" has type " +
                           column->type()->ToString() + ", expected " +
                           (kind == Kind::kInt     ? "int64"
                            : kind == Kind::kFloat ? "float64"
                                                   : "string (JSON)"));
  for (int64_t i = 0; i < table.num_rows(); ++i) {
    auto scalar = column->GetScalar(i);
    if (!scalar.ok()) return Status::Corruption(path + ": " + scalar.status().message());
    if ((*scalar)->is_valid) set(rows[static_cast<size_t>(i)], **scalar);
  }
  return Status::OK();
}

int64_t AsInt(const arrow::Scalar& s) {
  auto c = s.CastTo(arrow::int64());
  return c.ok() ? static_cast<const arrow::Int64Scalar&>(**c).value : 0;
}
double AsDouble(const arrow::Scalar& s) {
  auto c = s.CastTo(arrow::float64());
  return c.ok() ? static_cast<const arrow::DoubleScalar&>(**c).value : 0.0;
}
std::string AsString(const arrow::Scalar& s) {
  if (s.type->id() == arrow::Type::LARGE_STRING)
    return static_cast<const arrow::LargeStringScalar&>(s).value->ToString();
  return static_cast<const arrow::StringScalar&>(s).value->ToString();
}

}  // namespace

Result<std::vector<EpisodeRow>> EpisodeRowsFromTable(const arrow::Table& table,
                                                     const std::string& path) {
  std::vector<EpisodeRow> rows(static_cast<size_t>(table.num_rows()));
  auto int_col = [&](const char* name, int64_t EpisodeRow::*field) {
    return ReadColumn(table, name, Kind::kInt, path, rows,
                      [field](EpisodeRow& r, const arrow::Scalar& s) { r.*field = AsInt(s); });
  };
  auto float_col = [&](const char* name, double EpisodeRow::*field) {
    return ReadColumn(table, name, Kind::kFloat, path, rows,
                      [field](EpisodeRow& r, const arrow::Scalar& s) { r.*field = AsDouble(s); });
  };
  auto string_col = [&](const char* name, std::string EpisodeRow::*field) {
    return ReadColumn(table, name, Kind::kString, path, rows,
                      [field](EpisodeRow& r, const arrow::Scalar& s) { r.*field = AsString(s); });
  };
  REEL_RETURN_IF_ERROR(int_col("episode_index", &EpisodeRow::episode_index));
  REEL_RETURN_IF_ERROR(int_col("task_index", &EpisodeRow::task_index));
  REEL_RETURN_IF_ERROR(int_col("start_frame_index", &EpisodeRow::start_frame_index));
  REEL_RETURN_IF_ERROR(int_col("end_frame_index", &EpisodeRow::end_frame_index));
  REEL_RETURN_IF_ERROR(int_col("length", &EpisodeRow::length));
  REEL_RETURN_IF_ERROR(float_col("created_at", &EpisodeRow::created_at));
  REEL_RETURN_IF_ERROR(float_col("duration_sec", &EpisodeRow::duration_sec));
  REEL_RETURN_IF_ERROR(string_col("drop_stats", &EpisodeRow::drop_stats));
  REEL_RETURN_IF_ERROR(string_col("video_codec", &EpisodeRow::video_codec));
  REEL_RETURN_IF_ERROR(string_col("calibration", &EpisodeRow::calibration));
  REEL_RETURN_IF_ERROR(string_col("force_matrix_specs", &EpisodeRow::force_matrix_specs));
  REEL_RETURN_IF_ERROR(string_col("slam_specs", &EpisodeRow::slam_specs));
  if (table.GetColumnByName("episode_index") == nullptr)
    return Status::Invalid(path + ": episodes table has no episode_index column");
  return rows;
}

}  // namespace reel
