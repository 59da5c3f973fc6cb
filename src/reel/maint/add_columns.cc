// reel add-columns (include/reel/maintenance.h): post-hoc columns (multi-device §4.7)
// appended to an existing episode's data aligned by frame_index, declared in info.json and
// counted in stats.json by the same commit (maint/rewrite_data.h).
#include <arrow/api.h>
#include <parquet/arrow/reader.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>

#include <algorithm>
#include <unordered_map>

#include "check/context.h"
#include "io/arrow_take.h"
#include "io/arrow_values.h"
#include "io/parquet_io.h"
#include "maint/rewrite_data.h"
#include "reel/columns.h"
#include "reel/decode.h"
#include "reel/maintenance.h"
#include "reel/task.h"
#include "util/json_util.h"
#include "write/episode_stats.h"
#include "write/task_files.h"

namespace reel {

namespace {

using internal::Json;

// One column to add, as planned before the data is touched.
struct Planned {
  std::string name;
  ColumnFamily family = ColumnFamily::kUnknown;
  std::shared_ptr<arrow::Field> field;
  FeatureSpec feature;
  bool counted = false;
};

std::string DtypeOf(const arrow::DataType& type) {
  switch (type.id()) {
    case arrow::Type::FLOAT: return "float32";
    case arrow::Type::DOUBLE: return "float64";
    case arrow::Type::INT8: return "int8";
    case arrow::Type::INT16: return "int16";
    case arrow::Type::INT32: return "int32";
    case arrow::Type::INT64: return "int64";
    case arrow::Type::UINT8: return "uint8";
    case arrow::Type::BOOL: return "bool";
    default: return "";
  }
}

// The name rules of multi-device §2.4 (the checker's data.column_name, warnings included)
// and the reserved suffixes: a name in a contract family must have that family's type.
Result<ColumnFamily> CheckName(const std::string& name, const arrow::DataType& type, const InfoJson& info,
                               const std::string& where) {
  if (!name.starts_with("observation."))
    return Status::Invalid(where + ": column " + name + ": added columns are observation.<name> (multi-device §2.4)");
  internal::FindingSink sink;
  internal::CheckColumnName(name, where, sink);
  if (!sink.findings().empty()) return Status::Invalid(sink.findings().front().message + " (" + where + ")");
  const ColumnFamily family = ClassifyColumn(name, info.sensors);
  if (family == ColumnFamily::kForceMatrix || family == ColumnFamily::kImuSamples)
    return Status::Invalid(where + ": column " + name + ": " +
                           (family == ColumnFamily::kForceMatrix ? "a force matrix's scale is a per-episode recording spec"
                                                                 : "observation.imu needs imu_ts_ns in lockstep") +
                           "; add-columns does not add it");
  if (family != ColumnFamily::kUnknown && !HasFamilyType(family, info.sensor_dim, type))
    return Status::Invalid(where + ": column " + name + " carries a reserved suffix (multi-device §2.4) and must be " +
                           FamilyTypeName(family, info.sensor_dim) + ", found " + type.ToString());
  return family;
}

// The feature reel derives from the family, or for another column from its Arrow type.
Result<FeatureSpec> DerivedFeature(const std::string& name, ColumnFamily family, const arrow::DataType& type,
                                   const std::string& where) {
  if (family != ColumnFamily::kUnknown) {
    int32_t width = type.id() == arrow::Type::FIXED_SIZE_LIST
                        ? static_cast<const arrow::FixedSizeListType&>(type).list_size() : 1;
    return internal::FamilyFeature(family, width);
  }
  FeatureSpec f;
  if (type.id() == arrow::Type::FIXED_SIZE_LIST) {
    const auto& fixed = static_cast<const arrow::FixedSizeListType&>(type);
    f.dtype = DtypeOf(*fixed.value_type());
    f.shape = {fixed.list_size()};
  } else {
    f.dtype = DtypeOf(type);
    f.shape = {1};
  }
  if (f.dtype.empty())
    return Status::Invalid(where + ": column " + name + " is " + type.ToString() +
                           "; reel declares numeric or bool scalars and fixed_size_lists of them, and variable "
                           "lists only in a contract family (e.g. *slam_trajectory, *slam_trajectory_ns)");
  return f;
}

// Multi-device §6.6's declaration keys over `f`.
Status Declare(FeatureSpec& f, const Json& decl, const std::string& where) {
  if (!decl.is_object()) return Status::Invalid(where + ": a feature declaration is a JSON object");
  for (const auto& [key, value] : decl.items()) {
    const bool text = value.is_string();
    if ((key == "frame" || key == "clock" || key == "encoding" || key == "source_slot") && !text)
      return Status::Invalid(where + "." + key + " must be a string");
    if ((key == "frame_axes" || key == "time" || key == "owner") && !value.is_object())
      return Status::Invalid(where + "." + key + " must be an object");
    if (key == "frame") f.frame = value.get<std::string>();
    else if (key == "clock") f.clock = value.get<std::string>();
    else if (key == "encoding") f.encoding = value.get<std::string>();
    else if (key == "source_slot") f.source_slot = value.get<std::string>();
    else if (key == "frame_axes") f.frame_axes_json = internal::Dump(value, -1);
    else if (key == "time") f.time_json = internal::Dump(value, -1);
    else if (key == "owner") f.owner_json = internal::Dump(value, -1);
    else
      return Status::Invalid(where + ": \"" + key + "\" is not a declaration add-columns writes (frame, frame_axes, "
                             "time, owner, source_slot, clock, encoding)");
  }
  return Status::OK();
}

// The feature other episodes declared wins; a contradiction is refused.
Status AgreeWithDeclared(FeatureSpec& f, const FeatureSpec& declared, const std::string& name) {
  auto shape = [](const std::vector<int64_t>& s) { return Json(s).dump(); };
  if (declared.dtype != f.dtype || declared.shape != f.shape)
    return Status::Invalid("column " + name + ": info.json declares it " + declared.dtype + shape(declared.shape) +
                           " (other episodes), this one would be " + f.dtype + shape(f.shape));
  auto clash = [&](const std::optional<std::string>& a, const std::optional<std::string>& b, const char* key) {
    return a && b && *a != *b ? Status::Invalid("column " + name + ": info.json declares " + key + " \"" + *a +
                                                "\", the declaration given says \"" + *b + "\"")
                              : Status::OK();
  };
  REEL_RETURN_IF_ERROR(clash(declared.frame, f.frame, "frame"));
  REEL_RETURN_IF_ERROR(clash(declared.clock, f.clock, "clock"));
  REEL_RETURN_IF_ERROR(clash(declared.source_slot, f.source_slot, "source_slot"));
  FeatureSpec merged = declared;
  if (!merged.frame) merged.frame = f.frame;
  if (!merged.clock) merged.clock = f.clock;
  if (!merged.encoding) merged.encoding = f.encoding;
  if (!merged.source_slot) merged.source_slot = f.source_slot;
  if (merged.frame_axes_json.empty()) merged.frame_axes_json = f.frame_axes_json;
  if (merged.time_json.empty()) merged.time_json = f.time_json;
  if (merged.owner_json.empty()) merged.owner_json = f.owner_json;
  f = std::move(merged);
  return Status::OK();
}

Json FeatureReport(const FeatureSpec& f) {
  Json j = {{"dtype", f.dtype}, {"shape", f.shape}};
  if (f.encoding) j["encoding"] = *f.encoding;
  if (f.clock) j["clock"] = *f.clock;
  if (f.frame) j["frame"] = *f.frame;
  if (!f.frame_axes_json.empty()) j["frame_axes"] = Json::parse(f.frame_axes_json);
  if (!f.time_json.empty()) j["time"] = Json::parse(f.time_json);
  if (!f.owner_json.empty()) j["owner"] = Json::parse(f.owner_json);
  if (f.source_slot) j["source_slot"] = *f.source_slot;
  return j;
}

// The values `reel check` holds the written data to: no NaN or infinity (data.finite;
// the width bound is ReadSource's, from the schema).
Status CheckValues(const arrow::ChunkedArray& column, const std::string& name, const std::string& from) {
  if (std::optional<int64_t> row = internal::FirstNonFiniteRow(column))
    return Status::Invalid(from + ": column " + name + " holds a NaN or an infinity at row " + std::to_string(*row) +
                           "; a row without a sample holds zeros or [] (check: data.finite)");
  return Status::OK();
}

// Every source column checked and declared, before the data is read.
Result<std::vector<Planned>> PlanColumns(const arrow::Table& source, const InfoJson& info,
                                         const arrow::Schema& data_schema, const AddColumnsOptions& options) {
  Json declarations = Json::object();
  if (!options.feature_json.empty()) {
    REEL_ASSIGN_OR_RETURN(declarations, internal::ParseJson(options.feature_json, "feature declarations"));
    if (!declarations.is_object()) return Status::Invalid("feature declarations: not a JSON object {column: {...}}");
    for (const auto& [name, decl] : declarations.items())
      if (source.schema()->GetFieldIndex(name) < 0)
        return Status::Invalid("feature declarations: " + name + " is not a column of " + options.from);
  }
  std::vector<Planned> out;
  for (const auto& field : source.schema()->fields()) {
    if (field->name() == "frame_index") continue;
    Planned p{field->name(), ColumnFamily::kUnknown, field, {}, false};
    REEL_ASSIGN_OR_RETURN(p.family, CheckName(p.name, *field->type(), info, options.from));
    if (source.GetColumnByName(p.name)->null_count() > 0)
      return Status::Invalid(options.from + ": column " + p.name + " has null rows; a row without a value holds "
                             "the column's empty value ([] or zeros), never null");
    REEL_RETURN_IF_ERROR(CheckValues(*source.GetColumnByName(p.name), p.name, options.from));
    p.counted = p.family == ColumnFamily::kGlove;
    if (data_schema.GetFieldIndex(p.name) >= 0) {
      if (!options.replace)
        return Status::AlreadyExists("column " + p.name + " already exists in the episode's data (--replace "
                                     "rewrites it)");
      if (p.counted)
        return Status::Invalid("column " + p.name + " is counted in stats.json; its old rows cannot be taken out, "
                               "so add-columns never replaces it");
    }
    REEL_ASSIGN_OR_RETURN(p.feature, DerivedFeature(p.name, p.family, *field->type(), options.from));
    if (declarations.contains(p.name))
      REEL_RETURN_IF_ERROR(Declare(p.feature, declarations[p.name], "features[\"" + p.name + "\"]"));
    if (const FeatureSpec* declared = info.Feature(p.name))
      REEL_RETURN_IF_ERROR(AgreeWithDeclared(p.feature, *declared, p.name));
    out.push_back(std::move(p));
  }
  if (out.empty()) return Status::Invalid(options.from + ": no column besides frame_index");
  return out;
}

// Every SLAM trajectory touched: 8 values per point, its _ns one stamp per point.
Status CheckSlamPairs(const arrow::Table& table, const std::vector<Planned>& planned) {
  for (const Planned& p : planned) {
    if (p.family != ColumnFamily::kSlamPoints && p.family != ColumnFamily::kSlamStamps) continue;
    const bool stamps = p.family == ColumnFamily::kSlamStamps;
    const std::string points = stamps ? p.name.substr(0, p.name.size() - 3) : p.name;
    auto traj = table.GetColumnByName(points);
    if (!traj) return Status::Invalid("column " + p.name + ": its trajectory " + points + " is in neither the source "
                                      "nor the episode's data");
    auto ns = table.GetColumnByName(points + "_ns");
    auto decoded = DecodeSlam(*traj, ns.get());
    if (!decoded.ok()) return decoded.status().WithContext("column " + p.name + " (multi-device §4.6, §4.7)");
  }
  return Status::OK();
}

struct Alignment {
  std::vector<int64_t> take;  // per data row: the source row, -1 = none
  int64_t filled = 0;
  std::vector<int64_t> unmatched;  // source frame_index values without a data row
};

Result<Alignment> Align(const arrow::Table& data, const std::vector<int64_t>& source_frames,
                        const std::string& data_path) {
  auto column = data.GetColumnByName("frame_index");
  if (!column) return Status::Invalid(data_path + ": no frame_index column");
  REEL_ASSIGN_OR_RETURN(auto frames, internal::FrameIndexValues(*column, data_path));
  std::unordered_map<int64_t, int64_t> source_row;
  for (size_t r = 0; r < source_frames.size(); ++r) source_row.emplace(source_frames[r], static_cast<int64_t>(r));
  Alignment a;
  std::unordered_map<int64_t, bool> in_data;
  for (int64_t f : frames) {
    auto it = source_row.find(f);
    a.take.push_back(it == source_row.end() ? -1 : it->second);
    a.filled += it == source_row.end() ? 0 : 1;
    in_data[f] = true;
  }
  for (int64_t f : source_frames)
    if (!in_data.count(f)) a.unmatched.push_back(f);
  return a;
}

// The transform: planned columns aligned and appended (or set in place with replace).
Result<std::shared_ptr<arrow::Table>> AddToTable(const std::shared_ptr<arrow::Table>& data, const arrow::Table& source,
                                                 const std::vector<int64_t>& source_frames,
                                                 const std::vector<Planned>& planned, const std::string& data_path,
                                                 const AddColumnsOptions& options, AddColumnsReport& report,
                                                 internal::TaskFilesUpdate& update) {
  REEL_ASSIGN_OR_RETURN(Alignment a, Align(*data, source_frames, data_path));
  report.data_rows = data->num_rows();
  report.filled_rows = a.filled;
  report.unmatched_rows = static_cast<int64_t>(a.unmatched.size());
  if (!a.unmatched.empty() && !options.drop_unmatched) {
    std::string first;
    for (size_t i = 0; i < a.unmatched.size() && i < 5; ++i) first += (i ? ", " : "") + std::to_string(a.unmatched[i]);
    return Status::Invalid(options.from + ": " + std::to_string(a.unmatched.size()) +
                           " rows have a frame_index the episode's data does not have (" + first +
                           (a.unmatched.size() > 5 ? ", ..." : "") + "); --drop-unmatched ignores them");
  }
  auto table = data;
  for (const Planned& p : planned) {
    REEL_ASSIGN_OR_RETURN(auto array, internal::TakeRows(*source.GetColumnByName(p.name), a.take,
                                                         internal::MissingRow::kEmpty));
    auto column = std::make_shared<arrow::ChunkedArray>(array);
    const int at = table->schema()->GetFieldIndex(p.name);
    auto next = at >= 0 ? table->SetColumn(at, p.field, column) : table->AddColumn(table->num_columns(), p.field, column);
    if (!next.ok()) return Status::Invalid(data_path + ": " + next.status().ToString());
    table = *next;
    if (p.counted) {
      REEL_ASSIGN_OR_RETURN(auto block, internal::BlockFromColumn(*column));
      if (block) update.stats.emplace_back(p.name, *block);
    }
  }
  REEL_RETURN_IF_ERROR(CheckSlamPairs(*table, planned));
  return table;
}

Result<std::shared_ptr<arrow::Table>> ReadSource(FileSystem* fs, const AddColumnsOptions& options) {
  REEL_ASSIGN_OR_RETURN(FileInfo info, fs->Stat(options.from));
  if (info.type != FileType::kFile) return Status::NotFound(options.from + ": no such file");
  if (static_cast<int64_t>(info.size) > options.max_source_bytes)
    return Status::Invalid(options.from + ": " + std::to_string(info.size) + " bytes, more than the limit of " +
                           std::to_string(options.max_source_bytes));
  REEL_ASSIGN_OR_RETURN(auto reader, internal::OpenParquet(fs, options.from, false));
  const int64_t rows = reader->parquet_reader()->metadata()->num_rows();
  if (rows > options.max_source_rows)
    return Status::Invalid(options.from + ": " + std::to_string(rows) + " rows, more than the limit of " +
                           std::to_string(options.max_source_rows));
  std::shared_ptr<arrow::Schema> schema;
  if (arrow::Status st = reader->GetSchema(&schema); !st.ok())
    return Status::Invalid(options.from + ": cannot read its parquet schema (" + st.message() + ")");
  for (const auto& field : schema->fields())  // a fixed width over the bound, before it is decoded
    if (auto width = internal::FixedRowValues(*field->type()); width && *width > internal::kMaxRowValues)
      return Status::Invalid(options.from + ": column " + field->name() + " is " + field->type()->ToString() + ", " +
                             std::to_string(*width) + " values in a row, more than the " +
                             std::to_string(internal::kMaxRowValues) + " a column holds (check: data.row_width)");
  REEL_ASSIGN_OR_RETURN(auto table, internal::ReadColumns(*reader, {}, options.from));
  if (table->schema()->GetFieldIndex("frame_index") < 0)
    return Status::Invalid(options.from + ": no frame_index column (rows are aligned to the data by it)");
  return table;
}

}  // namespace

Result<AddColumnsReport> AddColumns(const std::string& root, int64_t episode_index, const AddColumnsOptions& options) {
  FileSystem* fs = options.fs ? options.fs : DefaultFileSystem();
  AddColumnsReport report;
  report.episode_index = episode_index;
  report.source = options.from;
  report.dry_run = options.dry_run;
  REEL_ASSIGN_OR_RETURN(auto source, ReadSource(fs, options));
  REEL_ASSIGN_OR_RETURN(auto source_frames,
                        internal::FrameIndexValues(*source->GetColumnByName("frame_index"), options.from));
  report.source_rows = source->num_rows();
  REEL_ASSIGN_OR_RETURN(internal::TaskLock lock, internal::TaskLock::Acquire(fs, root));
  if (!options.dry_run) REEL_RETURN_IF_ERROR(lock.RemoveStaleTemps());  // temps of a run killed before its journal
  REEL_ASSIGN_OR_RETURN(auto task, Task::Open(root, {fs, 0, EpisodeIndexMode::kRead}));
  REEL_ASSIGN_OR_RETURN(EpisodeEntry e, task->FindEpisode(episode_index));
  if (e.data_path.empty())
    return Status::NotFound("episode " + std::to_string(episode_index) + " of " + root + " has no data file");
  REEL_ASSIGN_OR_RETURN(auto schema, task->ReadDataSchema(e));
  REEL_ASSIGN_OR_RETURN(auto planned, PlanColumns(*source, task->info(), *schema, options));
  internal::TaskFilesUpdate update;
  update.declaration = task->info();
  for (const Planned& p : planned) {
    bool set = false;
    for (auto& [name, f] : update.declaration.features)
      if (name == p.name) f = p.feature, set = true;
    if (!set) update.declaration.features.emplace_back(p.name, p.feature);
    // A glove column's sensor joins info.json `sensors` (multi-device §6.4), as when recorded.
    auto& sensors = update.declaration.sensors;
    if (p.family == ColumnFamily::kGlove && std::find(sensors.begin(), sensors.end(), p.name.substr(12)) == sensors.end())
      sensors.push_back(p.name.substr(12));
    report.columns.push_back({p.name, p.field->type()->ToString(), internal::Dump(FeatureReport(p.feature), -1),
                              schema->GetFieldIndex(p.name) >= 0, p.counted});
  }
  const std::string data_path = task->Path(e.data_path);
  internal::DataTransform transform = [&](const std::shared_ptr<arrow::Table>& data) {
    return AddToTable(data, *source, source_frames, planned, data_path, options, report, update);
  };
  internal::DataRewriteOptions rewrite{.dry_run = options.dry_run, .update = &update};
  REEL_ASSIGN_OR_RETURN(bool changed, internal::RewriteEpisodeData(lock, *task, e, transform, rewrite));
  report.written = changed && !options.dry_run;
  return report;
}

}  // namespace reel
