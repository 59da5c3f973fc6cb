// Episode numbering, format detection and the list of non-data names.
#include <cctype>
#include <cstdio>

#include "util/json_util.h"
#include "reel/layout.h"
#include "io/json_file.h"

namespace reel {

using internal::Json;

const char* DatasetFormatName(DatasetFormat format) {
  switch (format) {
    case DatasetFormat::kPooledEpisodesV1: return "pooled_episodes_v1";
    case DatasetFormat::kLegacyV1_0: return "legacy_v1_0";
    case DatasetFormat::kLeRobotV2: return "lerobot_v2";
    case DatasetFormat::kLeRobotV3: return "lerobot_v3";
    case DatasetFormat::kBundle: return "bundle";
  }
  return "unknown";
}

EpisodeLocation LocateEpisode(int64_t episode_index, int64_t chunks_size) {
  int64_t n = episode_index > 1 ? episode_index - 1 : 0;
  return {n / chunks_size, n % chunks_size};
}

int64_t EpisodeIndexOf(EpisodeLocation location, int64_t chunks_size) {
  return location.chunk * chunks_size + location.file + 1;
}

int64_t EpisodeFileSuffix(int64_t episode_index, int64_t chunks_size) {
  return LocateEpisode(episode_index, chunks_size).file;
}

bool IsNonDataName(const std::string& name) {
  if (name.empty() || name[0] == '.') return true;
  if (name == "recycled_episode.json" || name == "_trash") return true;
  if (name.rfind("_migrate_backup_", 0) == 0) return true;
  if (name.rfind("_episodes_", 0) == 0 && name.size() > 8 &&
      name.compare(name.size() - 8, 8, ".parquet") == 0)
    return true;
  return false;
}

bool IsLegacySessionFolderName(const std::string& name) {
  // Never a non-data name: the reference's backup "_migrate_backup_YYYYmmdd_HHMMSS" ends
  // like a session folder, and a migrated task keeps it (contract §11).
  if (IsNonDataName(name)) return false;
  if (name.size() < 8 || name[name.size() - 7] != '_') return false;
  for (size_t i = name.size() - 6; i < name.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return false;
  return true;
}

namespace {

Result<bool> HasSessionFolders(FileSystem* fs, const std::string& root) {
  REEL_ASSIGN_OR_RETURN(auto entries, fs->ListDir(root));
  for (const DirEntry& e : entries)
    if (e.type == FileType::kDirectory && IsLegacySessionFolderName(e.name)) return true;
  return false;
}

Result<DetectedFormat> DetectFromCodebaseVersion(const Json& info, const std::string& path) {
  std::string version;
  REEL_RETURN_IF_ERROR(internal::GetString(info, "codebase_version", path, version));
  // LeRobot versions are "v<major>.<minor>"; reel reads v2.x and v3.x.
  if (version.size() >= 4 && version[0] == 'v' && version[2] == '.') {
    if (version[1] == '2') return DetectedFormat{DatasetFormat::kLeRobotV2, version, "meta/info.json"};
    if (version[1] == '3') return DetectedFormat{DatasetFormat::kLeRobotV3, version, "meta/info.json"};
  }
  return Status::NotSupported(path + ": unknown codebase_version \"" + version +
                         "\" and no \"format\" key; reel reads format \"pooled_episodes_v1\" and "
                         "LeRobot codebase_version v2.x / v3.x");
}

Result<DetectedFormat> DetectBundle(FileSystem* fs, const std::string& root) {
  const std::string path = JoinPath(root, "manifest.json");
  REEL_ASSIGN_OR_RETURN(Json manifest, internal::ReadJsonObjectFile(fs, path));
  // schema_version lives in manifest.json or, per the bundle format, in each episode.json.
  Json version = manifest.contains("schema_version") ? manifest["schema_version"] : Json();
  std::string evidence = "manifest.json";
  if (version.is_null() && manifest.contains("episodes") && manifest["episodes"].is_array() &&
      !manifest["episodes"].empty() && manifest["episodes"][0].is_object() &&
      manifest["episodes"][0].contains("id") && manifest["episodes"][0]["id"].is_string()) {
    std::string id = manifest["episodes"][0]["id"].get<std::string>();
    evidence = "episodes/" + id + "/episode.json";
    auto ep = internal::ReadJsonObjectFile(fs, JoinPath(root, evidence));
    if (ep.ok() && ep->contains("schema_version")) version = (*ep)["schema_version"];
    // Say why the first episode.json could not tell (missing, malformed).
    if (!ep.ok() && version.is_null())
      return Status::Invalid(path + ": no schema_version, and the first episode's sidecar cannot "
                             "tell: " + ep.status().message());
  }
  if (version.is_null())
    return Status::Invalid(path + ": no schema_version in manifest.json or the first episode.json");
  if (!(version.is_number_integer() && version.get<int64_t>() == 1) &&
      !(version.is_string() && version.get<std::string>() == "1"))
    return Status::NotSupported(JoinPath(root, evidence) + ": unknown schema_version " +
                           internal::Brief(version) + "; reel reads bundle schema_version 1");
  return DetectedFormat{DatasetFormat::kBundle, "1", evidence};
}

}  // namespace

Result<DetectedFormat> DetectFormat(FileSystem* fs, const std::string& root) {
  REEL_ASSIGN_OR_RETURN(FileInfo root_info, fs->Stat(root));
  if (root_info.type == FileType::kNotFound)
    return Status::NotFound(root + ": no such task directory");
  if (root_info.type != FileType::kDirectory)
    return Status::Invalid(root + ": is a file, not a task directory");

  const std::string info_path = JoinPath(root, "meta/info.json");
  REEL_ASSIGN_OR_RETURN(FileInfo info_stat, fs->Stat(info_path));
  if (info_stat.type != FileType::kNotFound) {
    REEL_ASSIGN_OR_RETURN(Json info, internal::ReadJsonObjectFile(fs, info_path));
    auto format = info.find("format");
    if (format != info.end()) {
      if (format->is_string() && format->get<std::string>() == "pooled_episodes_v1") {
        // codebase_version is informational for a pooled task (000 §4): the collector's
        // v1.0 migration writes its app version there ("1.0.14"). `check` warns
        // (info.codebase_version); the layout is identified by `format` alone.
        return DetectedFormat{DatasetFormat::kPooledEpisodesV1, "pooled_episodes_v1",
                              "meta/info.json"};
      }
      return Status::NotSupported(info_path + ": unknown format " + internal::Brief(*format) +
                             " (contract §1: only \"pooled_episodes_v1\" is read; reel does not "
                             "guess)");
    }
    REEL_ASSIGN_OR_RETURN(bool legacy, HasSessionFolders(fs, root));
    if (legacy) return DetectedFormat{DatasetFormat::kLegacyV1_0, "v1.0", "meta/info.json"};
    return DetectFromCodebaseVersion(info, info_path);
  }
  REEL_ASSIGN_OR_RETURN(FileInfo manifest, fs->Stat(JoinPath(root, "manifest.json")));
  if (manifest.type == FileType::kFile) return DetectBundle(fs, root);
  REEL_ASSIGN_OR_RETURN(bool legacy, HasSessionFolders(fs, root));
  if (legacy) return DetectedFormat{DatasetFormat::kLegacyV1_0, "v1.0", "<task>_NNNNNN folders"};
  return Status::NotFound(info_path + ": missing (no meta/info.json, manifest.json or v1.0 "
                          "session folders: not a dataset reel knows)");
}

Result<std::string> FindKeypointsMirror(FileSystem* fs, const std::string& root,
                                        const std::string& explicit_dir) {
  if (!explicit_dir.empty()) {
    auto info = fs->Stat(explicit_dir);
    if (!info.ok() || info->type != FileType::kDirectory)
      return Status::NotFound("keypoints folder " + explicit_dir + ": not a directory");
    return explicit_dir;
  }
  std::string task = root;
  while (task.size() > 1 && task.back() == '/') task.pop_back();
  const std::string name = BaseName(task);
  std::string ancestor = DirName(task);
  std::string looked;
  for (int up = 0; up < 3; ++up) {
    const std::string candidate = JoinPath(JoinPath(ancestor, "keypoints_output"), name);
    auto info = fs->Stat(candidate);
    if (info.ok() && info->type == FileType::kDirectory) return candidate;
    looked += (looked.empty() ? "" : ", ") + candidate;
    const std::string next = DirName(ancestor);
    if (next == ancestor) break;
    ancestor = next;
  }
  return Status::NotFound("no keypoints mirror for task " + name + " (contract §10); looked at " + looked);
}

std::string KeypointsEpisodeDir(const std::string& mirror, int64_t episode_index) {
  char folder[32];
  std::snprintf(folder, sizeof folder, "episode_%06lld", static_cast<long long>(episode_index));
  return JoinPath(mirror, folder);
}

}  // namespace reel
