// The keypoints mirror reader (include/reel/keypoints.h): the reference hand tracker's
// three files, validated against its schemas and aligned to the episode's data.
#include "reel/keypoints.h"

#include <arrow/api.h>
#include <parquet/arrow/reader.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>

#include <algorithm>
#include <unordered_map>

#include "io/arrow_take.h"
#include "io/parquet_io.h"
#include "reel/layout.h"
#include "reel/task.h"

namespace reel {

namespace {

// What a column of the reference writer's schema may be.
enum class Kind {
  kFrameIndex,  // int32 (the reference) or int64, never null, >= 0, unique
  kInt32,
  kBool,
  kString,
  kFloat32,
  kFloatList,   // fixed_size_list<float32>[width] (or list<float32> of that length)
  kInt32List,   // fixed_size_list<int32>[width] (or list<int32> of that length)
  kStringList,  // list<string>
};

struct ColumnRule {
  const char* name;
  Kind kind;
  int32_t width = 0;
};

// The reference collector's schemas (collector/core/hand_tracking.py): 21 points x (x, y)
// + 4 box coordinates = 46 per hand, two hands; 21 world landmarks x (x, y, z) = 63.
const std::vector<ColumnRule>& RulesOf(KeypointsPart part) {
  static const std::vector<ColumnRule> hand_pose = {
      {"frame_index", Kind::kFrameIndex}, {"num_hands", Kind::kInt32},
      {"hand_data", Kind::kFloatList, 92}, {"track_ids", Kind::kInt32List, 2}};
  static const std::vector<ColumnRule> hand_pose_3d = {
      {"frame_index", Kind::kFrameIndex},         {"hand_0_present", Kind::kBool},
      {"hand_0_landmarks_3d", Kind::kFloatList, 63}, {"hand_0_label", Kind::kString},
      {"hand_1_present", Kind::kBool},            {"hand_1_landmarks_3d", Kind::kFloatList, 63},
      {"hand_1_label", Kind::kString}};
  static const std::vector<ColumnRule> auto_labels = {
      {"frame_index", Kind::kFrameIndex},       {"hand_0_gesture", Kind::kString},
      {"hand_0_extended", Kind::kStringList},   {"hand_0_extended_count", Kind::kInt32},
      {"hand_0_fist", Kind::kBool},             {"hand_0_pinch", Kind::kBool},
      {"hand_0_center_x", Kind::kFloat32},      {"hand_0_center_y", Kind::kFloat32},
      {"hand_0_motion", Kind::kFloat32},        {"hand_1_gesture", Kind::kString},
      {"hand_1_extended", Kind::kStringList},   {"hand_1_extended_count", Kind::kInt32},
      {"hand_1_fist", Kind::kBool},             {"hand_1_pinch", Kind::kBool},
      {"hand_1_motion", Kind::kFloat32},        {"two_hand_distance", Kind::kFloat32},
      {"contact", Kind::kString}};
  switch (part) {
    case KeypointsPart::kHandPose: return hand_pose;
    case KeypointsPart::kHandPose3d: return hand_pose_3d;
    case KeypointsPart::kAutoLabels: break;
  }
  return auto_labels;
}

std::string Expected(const ColumnRule& r) {
  switch (r.kind) {
    case Kind::kFrameIndex: return "int32 or int64";
    case Kind::kInt32: return "int32";
    case Kind::kBool: return "bool";
    case Kind::kString: return "string";
    case Kind::kFloat32: return "float";
    case Kind::kFloatList: return "fixed_size_list<float>[" + std::to_string(r.width) + "]";
    case Kind::kInt32List: return "fixed_size_list<int32>[" + std::to_string(r.width) + "]";
    case Kind::kStringList: return "list<string>";
  }
  return "?";
}

std::shared_ptr<arrow::DataType> ScalarTypeOf(Kind kind) {
  switch (kind) {
    case Kind::kInt32: return arrow::int32();
    case Kind::kBool: return arrow::boolean();
    case Kind::kString: return arrow::utf8();
    case Kind::kFloat32: return arrow::float32();
    default: return nullptr;
  }
}

// Checks one column against its rule; a fixed list may come normalised in `fixed`.
Status CheckColumn(const ColumnRule& r, const std::shared_ptr<arrow::ChunkedArray>& column,
                   const std::string& path, std::shared_ptr<arrow::ChunkedArray>* fixed) {
  const arrow::DataType& type = *column->type();
  const std::string where = path + ": column " + r.name;
  auto wrong = [&] {
    return Status::Invalid(where + " is " + type.ToString() + ", expected " + Expected(r));
  };
  if (auto scalar = ScalarTypeOf(r.kind)) return type.Equals(*scalar) ? Status::OK() : wrong();
  if (r.kind == Kind::kFrameIndex)
    return type.id() == arrow::Type::INT32 || type.id() == arrow::Type::INT64 ? Status::OK() : wrong();
  if (r.kind == Kind::kStringList) {
    return type.id() == arrow::Type::LIST && type.field(0)->type()->id() == arrow::Type::STRING ? Status::OK()
                                                                                                 : wrong();
  }
  const arrow::Type::type value = r.kind == Kind::kFloatList ? arrow::Type::FLOAT : arrow::Type::INT32;
  if (type.id() == arrow::Type::FIXED_SIZE_LIST) {
    const auto& f = static_cast<const arrow::FixedSizeListType&>(type);
    if (f.value_type()->id() != value) return wrong();
    if (f.list_size() != r.width)
      return Status::Invalid(where + " holds " + std::to_string(f.list_size()) + " values per row, expected " +
                             std::to_string(r.width) + " (" + Expected(r) + ")");
    return Status::OK();
  }
  if (type.id() != arrow::Type::LIST || type.field(0)->type()->id() != value) return wrong();
  REEL_ASSIGN_OR_RETURN(*fixed, internal::ListToFixed(*column, r.width, where));
  return Status::OK();
}

// The episode's data as frame_index -> (row, timestamp).
struct DataFrames {
  std::unordered_map<int64_t, int64_t> row_of;
  std::shared_ptr<arrow::ChunkedArray> timestamp;  // null when the data has none
  int64_t rows = 0;
};

Result<DataFrames> ReadDataFrames(const Task& task, const EpisodeEntry& e) {
  DataFrames out;
  if (e.data_path.empty()) return out;
  REEL_ASSIGN_OR_RETURN(auto schema, task.ReadDataSchema(e));
  std::vector<std::string> columns = {"frame_index"};
  if (schema->GetFieldIndex("timestamp") >= 0) columns.push_back("timestamp");
  REEL_ASSIGN_OR_RETURN(auto table, task.ReadData(e, columns));
  REEL_ASSIGN_OR_RETURN(auto frames,
                        internal::FrameIndexValues(*table->GetColumnByName("frame_index"), task.Path(e.data_path)));
  for (size_t r = 0; r < frames.size(); ++r) out.row_of.emplace(frames[r], static_cast<int64_t>(r));
  out.timestamp = table->GetColumnByName("timestamp");
  out.rows = table->num_rows();
  return out;
}

Result<AlignedKeypoints> Align(KeypointsPart part, const std::string& path, std::shared_ptr<arrow::Table> table,
                               const DataFrames& data) {
  for (const char* added : {"data_row", "timestamp"})
    if (table->schema()->GetFieldIndex(added) >= 0)
      return Status::Invalid(path + ": has a column \"" + added + "\", which the aligned table adds");
  AlignedKeypoints out{part, path, nullptr, table->num_rows(), 0, {}};
  arrow::Int64Builder rows;
  std::vector<int64_t> take;  // data row per keypoint row, -1 = none
  REEL_ASSIGN_OR_RETURN(auto frames, internal::FrameIndexValues(*table->GetColumnByName("frame_index"), path));
  for (int64_t f : frames) {
    auto it = data.row_of.find(f);
    take.push_back(it == data.row_of.end() ? -1 : it->second);
    if (it == data.row_of.end()) out.unmatched_frames.push_back(f);
  }
  for (int64_t t : take) (void)(t < 0 ? rows.AppendNull() : rows.Append(t));
  auto row_array = rows.Finish().ValueOrDie();
  out.matched = out.rows - static_cast<int64_t>(out.unmatched_frames.size());
  std::sort(out.unmatched_frames.begin(), out.unmatched_frames.end());
  auto grown = table->AddColumn(table->num_columns(), arrow::field("data_row", arrow::int64()),
                                std::make_shared<arrow::ChunkedArray>(row_array));
  if (!grown.ok()) return Status::Invalid(path + ": " + grown.status().ToString());
  table = *grown;
  if (data.timestamp) {
    auto ts = internal::TakeRows(*data.timestamp, take, internal::MissingRow::kNull);
    if (!ts.ok()) return ts.status().WithContext(path);
    grown = table->AddColumn(table->num_columns(), arrow::field("timestamp", data.timestamp->type()),
                             std::make_shared<arrow::ChunkedArray>(*ts));
    if (!grown.ok()) return Status::Invalid(path + ": " + grown.status().ToString());
    table = *grown;
  }
  out.table = std::move(table);
  return out;
}

}  // namespace

const char* KeypointsPartName(KeypointsPart part) {
  switch (part) {
    case KeypointsPart::kHandPose: return "hand_pose";
    case KeypointsPart::kHandPose3d: return "hand_pose_3d";
    case KeypointsPart::kAutoLabels: break;
  }
  return "auto_labels";
}

const char* KeypointsPartFile(KeypointsPart part) {
  switch (part) {
    case KeypointsPart::kHandPose: return kKeypointsHandPose;
    case KeypointsPart::kHandPose3d: return kKeypointsHandPose3d;
    case KeypointsPart::kAutoLabels: break;
  }
  return kKeypointsAutoLabels;
}

const AlignedKeypoints* EpisodeKeypoints::Find(KeypointsPart part) const {
  for (const AlignedKeypoints& p : parts)
    if (p.part == part) return &p;
  return nullptr;
}

Result<std::vector<KeypointsFile>> ListKeypointsFiles(FileSystem* fs, const std::string& mirror,
                                                      int64_t episode_index) {
  const std::string dir = KeypointsEpisodeDir(mirror, episode_index);
  std::vector<KeypointsFile> out;
  for (KeypointsPart part : kKeypointsParts) {
    KeypointsFile f{part, JoinPath(dir, KeypointsPartFile(part)), false, 0};
    REEL_ASSIGN_OR_RETURN(FileInfo info, fs->Stat(f.path));
    f.exists = info.type == FileType::kFile;
    f.bytes = f.exists ? static_cast<int64_t>(info.size) : 0;
    out.push_back(std::move(f));
  }
  return out;
}

Result<std::shared_ptr<arrow::Table>> ReadKeypointsFile(FileSystem* fs, const std::string& path,
                                                        KeypointsPart part, const KeypointsLimits& limits) {
  REEL_ASSIGN_OR_RETURN(FileInfo info, fs->Stat(path));
  if (info.type != FileType::kFile) return Status::NotFound(path + ": no such keypoints file");
  if (static_cast<int64_t>(info.size) > limits.max_file_bytes)
    return Status::Invalid(path + ": " + std::to_string(info.size) + " bytes, more than the keypoints file limit of " +
                           std::to_string(limits.max_file_bytes));
  REEL_ASSIGN_OR_RETURN(auto reader, internal::OpenParquet(fs, path, false));
  const int64_t rows = reader->parquet_reader()->metadata()->num_rows();
  if (rows > limits.max_rows)
    return Status::Invalid(path + ": " + std::to_string(rows) + " rows, more than the keypoints row limit of " +
                           std::to_string(limits.max_rows));
  REEL_ASSIGN_OR_RETURN(auto table, internal::ReadColumns(*reader, {}, path));
  for (const ColumnRule& r : RulesOf(part)) {
    const int index = table->schema()->GetFieldIndex(r.name);
    if (index < 0)
      return Status::Invalid(path + ": column " + r.name + " is missing (expected " + Expected(r) + ", the " +
                             KeypointsPartName(part) + " schema of contract §10)");
    std::shared_ptr<arrow::ChunkedArray> fixed;
    REEL_RETURN_IF_ERROR(CheckColumn(r, table->column(index), path, &fixed));
    if (fixed) {
      auto replaced = table->SetColumn(index, arrow::field(r.name, fixed->type()), fixed);
      if (!replaced.ok()) return Status::Invalid(path + ": " + replaced.status().ToString());
      table = *replaced;
    }
  }
  REEL_RETURN_IF_ERROR(internal::FrameIndexValues(*table->GetColumnByName("frame_index"), path).status());
  return table;
}

Result<EpisodeKeypoints> ReadEpisodeKeypoints(const Task& task, int64_t episode_index,
                                              const KeypointsOptions& options) {
  REEL_ASSIGN_OR_RETURN(std::string mirror, FindKeypointsMirror(task.fs(), task.root(), options.keypoints_dir));
  REEL_ASSIGN_OR_RETURN(EpisodeEntry entry, task.FindEpisode(episode_index));
  EpisodeKeypoints out;
  out.episode_index = episode_index;
  out.mirror = mirror;
  out.dir = KeypointsEpisodeDir(mirror, episode_index);
  REEL_ASSIGN_OR_RETURN(out.files, ListKeypointsFiles(task.fs(), mirror, episode_index));
  bool any = false;
  for (const KeypointsFile& f : out.files) any = any || f.exists;
  if (!any) return out;
  REEL_ASSIGN_OR_RETURN(DataFrames data, ReadDataFrames(task, entry));
  out.data_rows = data.rows;
  for (const KeypointsFile& f : out.files) {
    if (!f.exists) continue;
    REEL_ASSIGN_OR_RETURN(auto table, ReadKeypointsFile(task.fs(), f.path, f.part, options.limits));
    REEL_ASSIGN_OR_RETURN(AlignedKeypoints aligned, Align(f.part, f.path, std::move(table), data));
    out.parts.push_back(std::move(aligned));
  }
  return out;
}

}  // namespace reel
