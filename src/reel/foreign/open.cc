// ForeignDataset::Open: info.json / manifest.json and the task list.
#include <arrow/api.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "foreign/internal.h"
#include "util/json_util.h"
#include "io/parquet_io.h"
#include "io/json_file.h"

namespace reel {

using internal::Json;

bool IsForeignFormat(DatasetFormat format) {
  return format == DatasetFormat::kLeRobotV2 || format == DatasetFormat::kLeRobotV3 ||
         format == DatasetFormat::kBundle;
}

namespace {

// DetectFormat accepts any v2.x / v3.x; reading refuses minors it does not
// know, since LeRobot changed layout at a major but a v2.2 would be a guess.
Status CheckCodebaseVersion(const std::string& version, const std::string& path) {
  if (version == "v2.0" || version == "v2.1") return Status::OK();
  if (version.size() >= 4 && version.rfind("v3.", 0) == 0 &&
      std::all_of(version.begin() + 3, version.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return Status::OK();
  return Status::NotSupported(path + ": unknown codebase_version \"" + version +
                              "\"; reel reads LeRobot v2.0, v2.1 and v3.x");
}

Status ParseFeatures(const Json& obj, const std::string& path,
                     std::map<std::string, ForeignFeature>& out) {
  if (!obj.is_object())
    return Status::Invalid(path + ": \"features\" must be an object, found " + internal::JsonTypeName(obj));
  for (const auto& [name, f] : obj.items()) {
    if (!f.is_object())
      return Status::Invalid(path + ": feature \"" + name + "\" must be an object, found " +
                             internal::Brief(f));
    ForeignFeature feature;
    REEL_RETURN_IF_ERROR(internal::GetString(f, "dtype", path, feature.dtype));
    if (f.contains("shape")) {
      if (!f["shape"].is_array())
        return Status::Invalid(path + ": feature \"" + name + "\" shape must be a list, found " +
                               internal::Brief(f["shape"]));
      for (const Json& d : f["shape"]) {
        if (!d.is_number_integer())
          return Status::Invalid(path + ": feature \"" + name + "\" shape must hold integers, found " +
                                 internal::Brief(f["shape"]));
        feature.shape.push_back(d.get<int64_t>());
      }
    }
    out[name] = std::move(feature);
  }
  return Status::OK();
}

Status CheckTaskIndex(int64_t row, int64_t task_index, const std::string& task,
                      const std::string& path) {
  if (task_index == row) return Status::OK();
  return Status::Invalid(path + ": row " + std::to_string(row) + " (task \"" + task +
                         "\") has task_index " + std::to_string(task_index) + ", expected " +
                         std::to_string(row) + " (tasks must be in task_index order 0..n-1)");
}

// meta/tasks.jsonl: one {"task_index", "task"} per line.
Status ReadTasksJsonl(FileSystem* fs, const std::string& path, std::vector<std::string>& out) {
  REEL_ASSIGN_OR_RETURN(std::string text, internal::ReadFileBounded(fs, path, internal::kJsonFileBytes));
  std::istringstream lines(text);
  std::string line;
  int64_t lineno = 0;
  while (std::getline(lines, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + " line " + std::to_string(lineno);
    REEL_ASSIGN_OR_RETURN(Json j, internal::ParseJson(line, where));
    int64_t task_index = -1;
    std::string task;
    REEL_RETURN_IF_ERROR(internal::GetInt(j, "task_index", where, task_index));
    REEL_RETURN_IF_ERROR(internal::GetString(j, "task", where, task));
    REEL_RETURN_IF_ERROR(CheckTaskIndex(static_cast<int64_t>(out.size()), task_index, task, path));
    out.push_back(std::move(task));
  }
  return Status::OK();
}

// meta/tasks.parquet: task_index plus the task string, which pandas stores as
// its index column "task" (or "__index_level_0__" when the index was unnamed).
Status ReadTasksParquet(FileSystem* fs, const std::string& path, std::vector<std::string>& out) {
  REEL_ASSIGN_OR_RETURN(auto table, internal::ReadParquetTable(fs, path, {}, false));
  REEL_ASSIGN_OR_RETURN(auto index, foreign::Column(*table, "task_index", path));
  std::shared_ptr<arrow::ChunkedArray> names = table->GetColumnByName("task");
  if (!names) names = table->GetColumnByName("__index_level_0__");
  if (!names) return Status::Invalid(path + ": no column \"task\" (the task strings)");
  for (int64_t r = 0; r < table->num_rows(); ++r) {
    const std::string where = path + " row " + std::to_string(r);
    REEL_ASSIGN_OR_RETURN(int64_t task_index, foreign::IntAt(*index, r, where + " task_index"));
    REEL_ASSIGN_OR_RETURN(std::string task, foreign::StringAt(*names, r, where + " task"));
    REEL_RETURN_IF_ERROR(CheckTaskIndex(r, task_index, task, path));
    out.push_back(std::move(task));
  }
  return Status::OK();
}

Status ParseLeRobotInfo(FileSystem* fs, const std::string& root, ForeignInfo& info) {
  const std::string path = JoinPath(root, "meta/info.json");
  REEL_ASSIGN_OR_RETURN(Json doc, internal::ReadJsonObjectFile(fs, path));
  REEL_RETURN_IF_ERROR(internal::GetString(doc, "codebase_version", path, info.version));
  REEL_RETURN_IF_ERROR(CheckCodebaseVersion(info.version, path));
  if (!doc.contains("fps") || !doc["fps"].is_number() || doc["fps"].get<double>() <= 0)
    return Status::Invalid(path + ": \"fps\" must be a positive number, found " +
                           (doc.contains("fps") ? internal::Brief(doc["fps"]) : "nothing"));
  info.fps = doc["fps"].get<double>();
  if (doc.contains("robot_type") && doc["robot_type"].is_string())
    info.robot_type = doc["robot_type"].get<std::string>();
  REEL_RETURN_IF_ERROR(internal::GetInt(doc, "total_episodes", path, info.total_episodes));
  REEL_RETURN_IF_ERROR(internal::GetInt(doc, "total_frames", path, info.total_frames));
  REEL_RETURN_IF_ERROR(internal::GetInt(doc, "chunks_size", path, info.chunks_size));
  if (info.chunks_size <= 0)
    return Status::Invalid(path + ": \"chunks_size\" must be a positive integer, found " +
                           std::to_string(info.chunks_size));
  REEL_RETURN_IF_ERROR(internal::GetString(doc, "data_path", path, info.data_path));
  if (info.data_path.empty()) return Status::Invalid(path + ": no \"data_path\" template");
  if (doc.contains("video_path") && doc["video_path"].is_string())
    info.video_path = doc["video_path"].get<std::string>();
  if (!doc.contains("features")) return Status::Invalid(path + ": no \"features\"");
  REEL_RETURN_IF_ERROR(ParseFeatures(doc["features"], path, info.features));
  for (const auto& [name, f] : info.features)
    if (f.dtype == "video") info.video_keys.push_back(name);
  if (!info.video_keys.empty() && info.video_path.empty())
    return Status::Invalid(path + ": video features but no \"video_path\" template");
  if (info.format == DatasetFormat::kLeRobotV3)
    return ReadTasksParquet(fs, JoinPath(root, "meta/tasks.parquet"), info.tasks);
  return ReadTasksJsonl(fs, JoinPath(root, "meta/tasks.jsonl"), info.tasks);
}

Status ParseManifest(FileSystem* fs, const std::string& root, ForeignInfo& info) {
  const std::string path = JoinPath(root, "manifest.json");
  REEL_ASSIGN_OR_RETURN(Json doc, internal::ReadJsonObjectFile(fs, path));
  info.version = "1";
  if (!doc.contains("fps") || !doc["fps"].is_number() || doc["fps"].get<double>() <= 0)
    return Status::Invalid(path + ": \"fps\" must be a positive number, found " +
                           (doc.contains("fps") ? internal::Brief(doc["fps"]) : "nothing"));
  info.fps = doc["fps"].get<double>();
  REEL_RETURN_IF_ERROR(internal::GetString(doc, "name", path, info.name));
  REEL_RETURN_IF_ERROR(internal::GetInt(doc, "episode_count", path, info.total_episodes));
  if (doc.contains("features")) REEL_RETURN_IF_ERROR(ParseFeatures(doc["features"], path, info.features));
  // A camera is a feature observation.images.<camera> (its file is <key>.mp4) or
  // one declared with dtype video.
  for (const auto& [name, f] : info.features)
    if (name.rfind("observation.images.", 0) == 0 || f.dtype == "video") info.video_keys.push_back(name);
  std::set<std::string> seen;
  if (doc.contains("episodes") && doc["episodes"].is_array())
    for (const Json& e : doc["episodes"])
      if (e.is_object() && e.contains("task") && e["task"].is_string() &&
          seen.insert(e["task"].get<std::string>()).second)
        info.tasks.push_back(e["task"].get<std::string>());
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<ForeignDataset>> ForeignDataset::Open(const std::string& root,
                                                             const ForeignOpenOptions& options) {
  FileSystem* fs = options.fs ? options.fs : DefaultFileSystem();
  REEL_ASSIGN_OR_RETURN(DetectedFormat detected, DetectFormat(fs, root));
  if (!IsForeignFormat(detected.format))
    return Status::NotSupported(root + ": a " + std::string(DatasetFormatName(detected.format)) +
                                " task, not a LeRobot or bundle dataset (read it with Task)");
  std::unique_ptr<ForeignDataset> d(new ForeignDataset());
  d->fs_ = fs;
  d->root_ = root;
  d->info_.format = detected.format;
  if (detected.format == DatasetFormat::kBundle)
    REEL_RETURN_IF_ERROR(ParseManifest(fs, root, d->info_));
  else
    REEL_RETURN_IF_ERROR(ParseLeRobotInfo(fs, root, d->info_));
  std::sort(d->info_.video_keys.begin(), d->info_.video_keys.end());
  return d;
}

}  // namespace reel
