// Per-episode rules: the episodes row, the data parquet's columns, the videos.
#include <arrow/api.h>
#include <parquet/arrow/reader.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <arrow/util/compression.h>

#include <cctype>
#include <charconv>
#include <cstdio>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "check/context.h"
#include "util/json_util.h"
#include "io/arrow_values.h"
#include "io/parquet_io.h"
#include "reel/columns.h"
#include "reel/decode.h"
#include "reel/file_group.h"

namespace reel::internal {
namespace {


using TypePtr = std::shared_ptr<arrow::DataType>;

bool IsListType(const arrow::DataType& t) {
  return t.id() == arrow::Type::LIST || t.id() == arrow::Type::LARGE_LIST ||
         t.id() == arrow::Type::FIXED_SIZE_LIST;
}

// ---- the episodes row ----------------------------------------------------------

void CheckRowValues(const EpisodeRow& row, const EpisodeEntry& e, FindingSink& sink) {
  if (!std::isfinite(row.duration_sec) || row.duration_sec < 0)
    sink.Add("episodes.values", e.row_path,
             "duration_sec is " + FormatDouble(row.duration_sec) + "; a duration is finite and not negative");
  if (!std::isfinite(row.created_at))
    sink.Add("episodes.values", e.row_path,
             "created_at is " + FormatDouble(row.created_at) + "; a Unix time is finite");
  if (row.task_index < 0)
    sink.Add("episodes.values", e.row_path,
             "task_index is " + std::to_string(row.task_index) + "; task indices start at 0");
}

std::optional<EpisodeRow> CheckRow(const Task& task, const EpisodeEntry& e, FindingSink& sink) {
  if (e.row_source == RowSource::kMissing) {
    if (!e.data_path.empty() || !e.videos.empty())
      sink.Add("episodes.row_missing", e.data_path.empty() ? e.videos.front().second : e.data_path,
               "episode " + std::to_string(e.episode_index) + " has files but no meta/episodes row");
    return std::nullopt;
  }
  const std::string path = task.Path(e.row_path);
  auto table = ReadParquetTable(task.fs(), path, {}, false);
  if (!table.ok()) {
    sink.Add("episodes.column_type", e.row_path, table.status().message());
    return std::nullopt;
  }
  if (e.row_source == RowSource::kEpisodeFile && (*table)->num_rows() != 1)
    sink.Add("episodes.row_count", e.row_path,
             "holds " + std::to_string((*table)->num_rows()) + " rows; a per-episode file has one");
  static const std::pair<const char*, TypePtr> kTypes[] = {
      {"episode_index", arrow::int64()}, {"task_index", arrow::int64()},
      {"start_frame_index", arrow::int64()}, {"end_frame_index", arrow::int64()},
      {"length", arrow::int64()}, {"created_at", arrow::float64()},
      {"duration_sec", arrow::float64()}, {"drop_stats", arrow::utf8()},
      {"video_codec", arrow::utf8()}, {"calibration", arrow::utf8()},
      {"force_matrix_specs", arrow::utf8()}, {"slam_specs", arrow::utf8()}};
  const arrow::Schema& schema = *(*table)->schema();
  bool types_ok = true;
  for (const auto& [name, type] : kTypes) {
    auto field = schema.GetFieldByName(name);
    const bool optional = std::string_view(name) == "force_matrix_specs" ||
                          std::string_view(name) == "slam_specs";
    if (!field) {
      if (!optional) {
        sink.Add("episodes.column_type", e.row_path, std::string("column \"") + name + "\" is missing");
        types_ok = false;
      }
    } else if (!field->type()->Equals(*type) &&
               !(type->id() == arrow::Type::STRING && field->type()->id() == arrow::Type::LARGE_STRING)) {
      sink.Add("episodes.column_type", e.row_path,
               std::string("column \"") + name + "\" has type " + field->type()->ToString() +
                   ", expected " + type->ToString());
      types_ok = false;
    }
  }
  auto rows = EpisodeRowsFromTable(**table, path);
  if (!rows.ok()) {
    if (types_ok) sink.Add("episodes.column_type", e.row_path, rows.status().message());
    return std::nullopt;
  }
  const EpisodeRow* row = nullptr;
  for (const EpisodeRow& r : *rows)
    if (r.episode_index == e.episode_index) row = &r;
  if (!row) {
    sink.Add("numbering.episode_index", e.row_path,
             "no row has episode_index " + std::to_string(e.episode_index) + " (the N of its path)" +
                 (rows->empty() ? std::string()
                                : "; found " + std::to_string(rows->front().episode_index)));
    return std::nullopt;
  }
  struct JsonCol {
    const char* name;
    const std::string& value;
  } json_cols[] = {{"drop_stats", row->drop_stats}, {"video_codec", row->video_codec},
                   {"calibration", row->calibration}, {"force_matrix_specs", row->force_matrix_specs},
                   {"slam_specs", row->slam_specs}};
  for (const JsonCol& c : json_cols) {
    auto parsed = ParseJson(c.value, std::string(c.name));
    if (!parsed.ok())
      sink.Add("episodes.json_column", e.row_path,
               std::string("column \"") + c.name + "\" must hold a JSON object string: " +
                   parsed.status().message());
    else if (!parsed->is_object())
      sink.Add("episodes.json_column", e.row_path,
               std::string("column \"") + c.name + "\" must hold a JSON object string, found \"" +
                   c.value.substr(0, 40) + "\"");
  }
  CheckRowValues(*row, e, sink);
  return *row;
}

// ---- the data parquet ------------------------------------------------------------

const arrow::ChunkedArray* Column(const arrow::Table& t, const std::string& name) {
  auto c = t.GetColumnByName(name);
  return c ? c.get() : nullptr;
}

// The data parquet as the episode rules read it. The rules look at nothing in a
// force-matrix column but its type, its null rows and each cell's length (0 or 187,500),
// so by default those columns are not read through Arrow (a cell decodes to 0.75 MB of
// int16 in column-sized buffers: most of an import's time) but counted from their
// repetition and definition levels (ReadListLengths: the same counts Arrow's list reader
// makes, from the same pages; the values are still decoded, so a corrupt page is still
// refused). CheckOptions::deep reads every column through Arrow, as before.
struct EpisodeData {
  std::shared_ptr<parquet::arrow::FileReader> reader;
  std::shared_ptr<arrow::Schema> schema;  // every column of the file
  std::shared_ptr<arrow::Table> table;    // every column, or every column but those below
  int64_t rows = 0;
  std::map<std::string, std::vector<int64_t>> list_lengths;  // per row; -1 = null row
};

Result<EpisodeData> ReadEpisodeData(const Task& task, const EpisodeEntry& e, bool deep) {
  EpisodeData out;
  const std::string path = task.Path(e.data_path);
  REEL_ASSIGN_OR_RETURN(out.reader, OpenParquet(task.fs(), path, false));
  if (arrow::Status st = out.reader->GetSchema(&out.schema); !st.ok())
    return Status::Corruption(path + ": cannot read parquet schema (" + st.message() + ")");
  std::vector<std::string> through_arrow;
  for (const auto& field : out.schema->fields()) {
    const std::string& name = field->name();
    if (!deep && ClassifyColumn(name, task.info().sensors) == ColumnFamily::kForceMatrix) {
      auto lengths = ReadListLengths(*out.reader, name, path);
      if (lengths.ok()) {
        out.list_lengths[name] = std::move(*lengths);
        continue;
      }
      if (lengths.status().code() != StatusCode::kNotSupported) return lengths.status();
    }
    through_arrow.push_back(name);
  }
  out.rows = out.reader->parquet_reader()->metadata()->num_rows();
  if (through_arrow.empty()) {  // only force matrices: no column to read, the rows stay
    out.table = arrow::Table::Make(arrow::schema(arrow::FieldVector{}), arrow::ChunkedArrayVector{}, out.rows);
  } else {
    REEL_ASSIGN_OR_RETURN(out.table, ReadColumns(*out.reader, through_arrow, path));
    out.rows = out.table->num_rows();
  }
  for (const auto& [name, lengths] : out.list_lengths)
    if (static_cast<int64_t>(lengths.size()) != out.rows)
      return Status::Corruption(path + ": column \"" + name + "\" has " + std::to_string(lengths.size()) +
                                " rows, the others " + std::to_string(out.rows));
  return out;
}

void CheckKeyColumns(const arrow::Table& t, const EpisodeEntry& e, const InfoJson& info,
                     FindingSink& sink) {
  for (const char* key : {"episode_index", "frame_index", "timestamp", "task_index", "wall_time",
                          "hardware_ns"})
    if (!t.GetColumnByName(key))
      sink.Add("data.key_column", e.data_path, std::string("key column \"") + key + "\" is missing");
  for (const char* key : {"episode_index", "frame_index", "timestamp", "task_index", "wall_time",
                          "hardware_ns", "raw_hw_ns"}) {
    auto col = t.GetColumnByName(key);
    if (!col) continue;
    const ColumnFamily family = ClassifyColumn(key, info.sensors);
    if (!HasFamilyType(family, info.sensor_dim, *col->type()))
      sink.Add("data.key_column", e.data_path,
               std::string("key column \"") + key + "\" has type " + col->type()->ToString() +
                   ", expected " + FamilyTypeName(family, info.sensor_dim));
  }
  if (auto col = t.GetColumnByName("episode_index"); col && col->type()->id() == arrow::Type::INT64) {
    for (const auto& chunk : col->chunks()) {
      const auto& a = static_cast<const arrow::Int64Array&>(*chunk);
      for (int64_t i = 0; i < a.length(); ++i) {
        if (a.IsValid(i) && a.Value(i) == e.episode_index) continue;
        sink.Add("numbering.episode_index", e.data_path,
                 "episode_index column holds " + (a.IsValid(i) ? std::to_string(a.Value(i)) : "null") +
                     " but the file's (chunk, file) gives N = " + std::to_string(e.episode_index));
        return;
      }
    }
  }
  if (auto col = t.GetColumnByName("frame_index"); col && col->type()->id() == arrow::Type::INT64) {
    int64_t expect = 0;
    for (const auto& chunk : col->chunks()) {
      const auto& a = static_cast<const arrow::Int64Array&>(*chunk);
      for (int64_t i = 0; i < a.length(); ++i, ++expect) {
        if (a.IsValid(i) && a.Value(i) == expect) continue;
        sink.Add("data.frame_index", e.data_path,
                 "frame_index at row " + std::to_string(expect) + " is " +
                     (a.IsValid(i) ? std::to_string(a.Value(i)) : "null") + ", expected " +
                     std::to_string(expect) + " (0..length-1 without gaps)");
        return;
      }
    }
  }
}

// Times of rows written in order: finite, never decreasing. Reports the first bad row.
template <typename ArrowArray>
void CheckTimeColumn(const arrow::Table& t, const char* name, const EpisodeEntry& e, FindingSink& sink) {
  auto col = t.GetColumnByName(name);
  if (!col || col->type()->id() != ArrowArray::TypeClass::type_id) return;  // a type finding
  double prev = -std::numeric_limits<double>::infinity();
  int64_t r = 0;
  for (const auto& chunk : col->chunks()) {
    const auto& a = static_cast<const ArrowArray&>(*chunk);
    for (int64_t i = 0; i < a.length(); ++i, ++r) {
      if (a.IsNull(i)) continue;  // reported by the key-column rules
      const double v = static_cast<double>(a.Value(i));
      if (!std::isfinite(v) || v < prev) {
        sink.Add("data.time_order", e.data_path,
                 std::string(name) + " at row " + std::to_string(r) + " is " + FormatDouble(v) +
                     (std::isfinite(v) ? ", before the previous row's " + FormatDouble(prev) : "") +
                     "; rows are written in time order");
        return;
      }
      prev = v;
    }
  }
}

// Values of the key columns that their types allow but the contract does not: times out of
// order (data.time_order), a negative task_index (data.key_column).
void CheckKeyValues(const arrow::Table& t, const EpisodeEntry& e, FindingSink& sink) {
  CheckTimeColumn<arrow::FloatArray>(t, "timestamp", e, sink);
  CheckTimeColumn<arrow::DoubleArray>(t, "timestamp", e, sink);
  CheckTimeColumn<arrow::DoubleArray>(t, "wall_time", e, sink);
  auto col = t.GetColumnByName("task_index");
  if (!col || col->type()->id() != arrow::Type::INT64) return;
  int64_t r = 0;
  for (const auto& chunk : col->chunks()) {
    const auto& a = static_cast<const arrow::Int64Array&>(*chunk);
    for (int64_t i = 0; i < a.length(); ++i, ++r)
      if (a.IsValid(i) && a.Value(i) < 0) {
        sink.Add("data.key_column", e.data_path,
                 "task_index at row " + std::to_string(r) + " is " + std::to_string(a.Value(i)) +
                     "; task indices start at 0");
        return;
      }
  }
}

// Null rows of a column: counted by Arrow, or from the levels.
int64_t NullRows(const EpisodeData& d, const std::string& name) {
  if (auto it = d.list_lengths.find(name); it != d.list_lengths.end())
    return std::count(it->second.begin(), it->second.end(), int64_t{-1});
  auto column = d.table->GetColumnByName(name);
  return column ? column->null_count() : 0;
}

void CheckColumns(const EpisodeData& d, const EpisodeEntry& e, const InfoJson& info, FindingSink& sink) {
  for (const auto& field : d.schema->fields()) {
    const std::string& name = field->name();
    CheckColumnName(name, e.data_path, sink);
    if (name.starts_with("observation.") && !info.Feature(name))
      sink.Add("data.undeclared_column", e.data_path,
               "column \"" + name + "\" has no feature in info.json (multi-device §6.8.2)");
    const ColumnFamily family = ClassifyColumn(name, info.sensors);
    if (!IsKeyColumn(name) && family != ColumnFamily::kUnknown &&
        !HasFamilyType(family, info.sensor_dim, *field->type()))
      sink.Add("data.column_type", e.data_path,
               "column \"" + name + "\" has type " + field->type()->ToString() + ", expected " +
                   FamilyTypeName(family, info.sensor_dim));
    if (IsListType(*field->type()))
      if (const int64_t nulls = NullRows(d, name); nulls > 0)
        sink.Add("data.null_list", e.data_path,
                 "column \"" + name + "\" has " + std::to_string(nulls) +
                     " null rows; a row without a sample holds [] or zeros");
  }
}

void CheckLockstep(const arrow::Table& t, const EpisodeEntry& e, FindingSink& sink) {
  for (const auto& field : t.schema()->fields()) {
    const std::string& name = field->name();
    if (name.ends_with("slam_trajectory") && field->type()->id() == arrow::Type::LIST) {
      const arrow::ChunkedArray* ns = Column(t, name + "_ns");
      if (ns && ns->type()->id() != arrow::Type::LIST) ns = nullptr;  // reported as a type error
      auto points = DecodeSlam(*Column(t, name), ns);
      if (!points.ok())
        sink.Add("data.slam_lockstep", e.data_path, "column \"" + name + "\": " + points.status().message());
    }
    if (name.ends_with("slam_trajectory_ns") &&
        !t.GetColumnByName(name.substr(0, name.size() - 3)))
      sink.Add("data.slam_lockstep", e.data_path,
               "column \"" + name + "\" exists without its trajectory column");
  }
  const arrow::ChunkedArray* imu = Column(t, "observation.imu");
  const arrow::ChunkedArray* ts = Column(t, "imu_ts_ns");
  if (imu && imu->type()->id() == arrow::Type::LIST) {
    if (ts && ts->type()->id() != arrow::Type::LIST) ts = nullptr;
    auto samples = DecodeImu(*imu, ts);
    if (!samples.ok()) sink.Add("data.imu_lockstep", e.data_path, samples.status().message());
  } else if (ts && !imu) {
    sink.Add("data.imu_lockstep", e.data_path, "imu_ts_ns exists without observation.imu");
  }
}

// Per-row lengths of a list column: from the levels, or from Arrow's offsets (null = -1).
std::vector<int64_t> ListLengths(const EpisodeData& d, const std::string& name) {
  if (auto it = d.list_lengths.find(name); it != d.list_lengths.end()) return it->second;
  std::vector<int64_t> out;
  for (const auto& chunk : d.table->GetColumnByName(name)->chunks()) {
    const auto& list = static_cast<const arrow::ListArray&>(*chunk);
    for (int64_t i = 0; i < list.length(); ++i) out.push_back(list.IsNull(i) ? -1 : list.value_length(i));
  }
  return out;
}

// Values the writers refuse (add-columns, backfill-hand-pose): more than kMaxRowValues in a
// row of a fixed-width column (an error: reel's writers never make one), a NaN or an infinity in a column of values
// (a warning: the contract is silent, but stats.json's mean and std become NaN, and a row
// without a sample holds zeros or [] by multi-device §5.5). Times are data.time_order's.
void CheckColumnValues(const EpisodeData& d, const EpisodeEntry& e, FindingSink& sink) {
  for (const auto& field : d.schema->fields()) {
    const std::string& name = field->name();
    if (auto width = FixedRowValues(*field->type()); width && *width > kMaxRowValues)
      sink.Add("data.row_width", e.data_path,
               "column \"" + name + "\" holds " + std::to_string(*width) + " values in a row, more than the " +
                   std::to_string(kMaxRowValues) + " a column holds");
    auto column = d.table->GetColumnByName(name);
    if (!column || name == "timestamp" || name == "wall_time") continue;
    if (std::optional<int64_t> row = FirstNonFiniteRow(*column))
      sink.Add("data.finite", e.data_path,
               "column \"" + name + "\" holds a NaN or an infinity at row " + std::to_string(*row) +
                   "; stats.json's mean and std of it become NaN (a row without a sample holds zeros or [])");
  }
}

void CheckForceMatrices(const EpisodeData& d, const EpisodeEntry& e, const EpisodeRow* row,
                        const InfoJson& info, FindingSink& sink) {
  for (const auto& field : d.schema->fields()) {
    const std::string& name = field->name();
    if (!name.ends_with("_force_matrix") || field->type()->id() != arrow::Type::LIST) continue;
    const auto& value_type = static_cast<const arrow::ListType&>(*field->type()).value_type();
    const std::string dtype = value_type->id() == arrow::Type::INT16   ? "int16"
                              : value_type->id() == arrow::Type::FLOAT ? "float32"
                                                                       : value_type->ToString();
    EpisodeRow defaults;
    auto resolved = ResolveForceMatrixSpec(name, row ? *row : defaults, info, dtype);
    if (!resolved.ok()) {
      sink.Add("features.force_matrix_spec", e.row_path, resolved.status().message());
      continue;
    }
    const bool diff = resolved->spec.encoding == ForceMatrixEncoding::kRowDiffQuantized;
    if ((diff && dtype != "int16") || (!diff && dtype != "float32"))
      sink.Add("data.force_matrix", e.data_path,
               "column \"" + name + "\" is list<" + dtype + "> but its encoding (from " +
                   ScaleSourceName(resolved->source) + ") is " +
                   (diff ? "row_diff_quantized (list<int16>)" : "row_flat_raw (list<float32>)"));
    if (resolved->source == ScaleSource::kDefault && dtype == "int16")
      sink.Add("features.force_matrix_spec", Severity::kWarning, e.row_path,
               "no scale is declared for \"" + name + "\" of this episode (neither its "
               "force_matrix_specs nor an int16 feature in info.json): decoded as x1, uncalibrated; "
               "reel repair-scale infers it (contract §7.2.1)");
    else if (row && row->force_matrix_specs != "{}" && resolved->source != ScaleSource::kEpisodeRow)
      sink.Add("features.force_matrix_spec", Severity::kWarning, e.row_path,
               "force_matrix_specs does not give a scale for \"" + name + "\"; the reader falls back "
               "to " + ScaleSourceName(resolved->source) + "; reel repair-scale infers it (contract §7.2.1)");
    const std::vector<int64_t> lengths = ListLengths(d, name);
    for (size_t r = 0; r < lengths.size(); ++r) {
      const int64_t n = std::max<int64_t>(lengths[r], 0);  // a null row: data.null_list
      if (n != 0 && n != kForceMatrixValues) {
        sink.Add("data.force_matrix", e.data_path,
                 "column \"" + name + "\" row " + std::to_string(r) + " has " + std::to_string(n) +
                     " values, expected 0 or 187500 (250x250x3)");
        return;
      }
    }
  }
}

bool IsVideoExtension(const std::string& ext) { return ext == "mp4" || ext == "mkv"; }

void CheckVideos(const EpisodeEntry& e, const InfoJson& info, FindingSink& sink) {
  for (const auto& [slot, path] : e.videos) {
    const std::string* ext = Lookup(info.video_extensions, slot);
    const size_t dot = path.find_last_of('.');
    const std::string actual = dot == std::string::npos ? "" : path.substr(dot + 1);
    if (!ext)
      sink.Add("video.extension", path,
               "slot \"" + slot + "\" is not in video_extensions; readers decide the file type from it");
    else if (*ext != actual && IsVideoExtension(actual) && IsVideoExtension(*ext))
      sink.Add("video.extension_mix", path,
               "extension ." + actual + " but video_extensions[\"" + slot + "\"] = \"" + *ext +
                   "\": the slot mixes mp4 and mkv episodes (readers open this file by its own "
                   "extension)");
    else if (*ext != actual)
      sink.Add("video.extension", path,
               "extension ." + actual + " but video_extensions[\"" + slot + "\"] = \"" + *ext + "\"");
  }
}

void CheckCompression(const EpisodeData& d, const EpisodeEntry& e, FindingSink& sink) {
  auto metadata = d.reader->parquet_reader()->metadata();
  for (int g = 0; g < metadata->num_row_groups(); ++g) {
    auto group = metadata->RowGroup(g);
    for (int c = 0; c < group->num_columns(); ++c) {
      auto chunk = group->ColumnChunk(c);
      if (chunk->compression() == parquet::Compression::ZSTD) continue;
      sink.Add("data.compression", e.data_path,
               "column \"" + chunk->path_in_schema()->ToDotString() + "\" is compressed with " +
                   arrow::util::Codec::GetCodecAsString(chunk->compression()) + ", the contract writes zstd");
      return;
    }
  }
}

// episode.file_group: EpisodeFileGroup (reel/file_group.h) is the one definition (also reel ls, Python).
void CheckFileGroup(const Task& task, const EpisodeEntry& e, const EpisodeRow* row, FindingSink& sink) {
  const FileGroup g = EpisodeFileGroup(task, e, row);
  if (g.state != FileGroupState::kPartial) return;
  auto join = [](const std::vector<std::string>& paths) {
    std::string out;
    for (const std::string& p : paths) out += (out.empty() ? "" : ", ") + p;
    return out;
  };
  sink.Add("episode.file_group", g.missing.front(),
           "episode " + std::to_string(e.episode_index) + "'s file group is partial: missing " + join(g.missing) +
               "; present " + join(g.present) +
               " (a torn delete or lost files: restore the missing ones, or remove the rest with reel delete)");
}

}  // namespace

void CheckColumnName(const std::string& name, const std::string& where, FindingSink& sink) {
  if (!name.starts_with("observation.")) return;
  if (name.starts_with("observation.images.")) {
    sink.Add("data.column_name", where, "column \"" + name + "\": videos are not parquet columns");
    return;
  }
  const std::string body = name.substr(12);
  if (body.starts_with("gripper_1_")) {
    sink.Add("data.column_name", where,
             "column \"" + name + "\" uses the retired prefix gripper_1_ (rig 1 has no prefix)");
  }
  if (body == "slam_pose" || body.ends_with("_slam_pose")) {
    sink.Add("data.column_name", Severity::kWarning, where,
             "column \"" + name + "\" is the retired slam_pose; readers ignore it, writers must "
             "not produce it");
  }
  size_t start = 0;
  while (start <= body.size()) {
    size_t dot = body.find('.', start);
    if (dot == std::string::npos) dot = body.size();
    std::string segment = body.substr(start, dot - start);
    bool ok = !segment.empty();
    for (unsigned char c : segment) ok = ok && (std::islower(c) || std::isdigit(c) || c == '_');
    if (!ok) {
      sink.Add("data.column_name", where,
               "column \"" + name + "\": segment \"" + segment +
                   "\" must be lower-case ASCII [a-z0-9_]+");
      return;
    }
    start = dot + 1;
  }
}

std::vector<std::string> CheckEpisode(const Task& task, const EpisodeEntry& e, FindingSink& sink, bool deep) {
  std::optional<EpisodeRow> row = CheckRow(task, e, sink);
  CheckFileGroup(task, e, row ? &*row : nullptr, sink);
  CheckVideos(e, task.info(), sink);
  if (e.data_path.empty()) {  // deleted after upload: the row stays, data goes
    CheckVideoFiles(task, e, std::nullopt, sink);
    return {};
  }
  auto data = ReadEpisodeData(task, e, deep);
  if (!data.ok()) {
    sink.Add("data.unreadable", e.data_path, data.status().message());
    CheckVideoFiles(task, e, std::nullopt, sink);
    return {};
  }
  const arrow::Table& t = *data->table;
  CheckVideoFiles(task, e, data->rows, sink);
  CheckCompression(*data, e, sink);
  CheckKeyColumns(t, e, task.info(), sink);
  CheckKeyValues(t, e, sink);
  CheckStreamTimes(t, e, sink);
  CheckColumns(*data, e, task.info(), sink);
  CheckColumnValues(*data, e, sink);
  CheckLockstep(t, e, sink);
  CheckForceMatrices(*data, e, row ? &*row : nullptr, task.info(), sink);
  if (row) {
    if (row->length != data->rows)
      sink.Add("episodes.length", e.row_path,
               "length is " + std::to_string(row->length) + " but the data parquet has " +
                   std::to_string(data->rows) + " rows");
    if (row->start_frame_index != 0 || row->end_frame_index != row->length - 1)
      sink.Add("episodes.length", e.row_path,
               "start_frame_index/end_frame_index are " + std::to_string(row->start_frame_index) +
                   "/" + std::to_string(row->end_frame_index) + ", expected 0/" +
                   std::to_string(row->length - 1));
  }
  return t.ColumnNames();
}

std::string FormatDouble(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;  // the shortest that reads back exactly
  return std::string(buf, end);
}

}  // namespace reel::internal
