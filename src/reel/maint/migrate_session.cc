// reel migrate, reading side: the v1.0 sessions of a task (shared/docs/v1.0-layout.md).
#include <arrow/api.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "maint/migrate_internal.h"
#include "reel/json_limits.h"
#include "reel/layout.h"
#include "reel/task.h"
#include "io/json_file.h"

namespace reel::internal {
namespace {

constexpr int64_t kMaxJsonBytes = int64_t{256} << 20;

std::vector<std::string> Split(const std::string& rel) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t slash; (slash = rel.find('/', start)) != std::string::npos; start = slash + 1)
    parts.push_back(rel.substr(start, slash - start));
  parts.push_back(rel.substr(start));
  return parts;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A name that can be an image key in the pooled paths.
bool PlainName(const std::string& name) {
  return !name.empty() && name[0] != '.' && name.find('/') == std::string::npos;
}

// A video file moved or copied as it is.
SessionVideo FileVideo(const std::string& slot, const char* ext, const std::string& rel) {
  SessionVideo v;
  v.slot = slot;
  v.ext = ext;
  v.rel = rel;
  return v;
}

// RGB mp4s (videos/<cam>/chunk-*/<slot>.mp4; an `_aux` stream lives in its main camera's
// folder) and depth slots' dual-stream mkv (depth/<slot>/<slot>.mkv). The heat-map
// preview mp4 of a depth slot is not migrated (it stays in the backup). A depth slot without
// its .mkv may be a PNG16 or raw frame sequence (FindDepthSequence), encoded at staging.
Status FindVideos(const std::string& where, Session* s) {
  std::map<std::string, SessionVideo> by_slot;
  auto add = [&](SessionVideo v) -> Status {
    if (!by_slot.emplace(v.slot, v).second)
      return Status::Invalid(where + ": two videos for image key \"" + v.slot + "\": " + by_slot[v.slot].rel +
                             " and " + v.rel);
    return Status::OK();
  };
  for (const std::string& f : s->files) {
    const auto parts = Split(f);
    if (parts.size() == 4 && parts[0] == "videos" && parts[2].rfind("chunk-", 0) == 0 && EndsWith(parts[3], ".mp4")) {
      const std::string slot = parts[3].substr(0, parts[3].size() - 4);
      if (PlainName(slot)) REEL_RETURN_IF_ERROR(add(FileVideo(slot, "mp4", f)));
    }
  }
  const Json cameras = s->meta.value("cameras", Json::object());
  if (!cameras.is_object()) return Status::Invalid(where + ": cameras must be a JSON object");
  for (auto it = cameras.begin(); it != cameras.end(); ++it) {
    if (!it->is_object() || it->value("type", std::string()) != "depth" || !PlainName(it.key())) continue;
    const std::string slot = it.key(), dir = "depth/" + slot + "/", mkv = dir + slot + ".mkv";
    if (std::binary_search(s->files.begin(), s->files.end(), mkv)) {
      REEL_RETURN_IF_ERROR(add(FileVideo(slot, "mkv", mkv)));
      continue;
    }
    REEL_ASSIGN_OR_RETURN(auto sequence, FindDepthSequence(where, *s, slot, *it));
    if (sequence) REEL_RETURN_IF_ERROR(add(std::move(*sequence)));
  }
  for (auto& [slot, v] : by_slot) s->videos.push_back(v);
  return Status::OK();
}

// The metadata.json keys reel migrate reads with a default (FindVideos here, the task's
// declaration in migrate.cc), checked to be of the type the v1.0 writer gives them
// (v1.0-layout.md), so that a wrong type is refused naming the key and the value before
// anything is written, never thrown out of the JSON library (or, for a number beyond
// int64, an undefined cast).
Status CheckMetadataTypes(const Json& meta, const std::string& where) {
  int64_t number = 0;
  double real = 0;
  std::string text;
  REEL_RETURN_IF_ERROR(GetInt(meta, "sensor_dim", where, number));
  REEL_RETURN_IF_ERROR(GetString(meta, "codebase_version", where, text));
  const Json cameras = meta.value("cameras", Json::object());
  if (!cameras.is_object()) return Status::Invalid(where + ": cameras must be a JSON object");
  for (auto it = cameras.begin(); it != cameras.end(); ++it) {
    if (!it->is_object()) continue;
    const std::string at = where + ": cameras." + it.key();
    REEL_RETURN_IF_ERROR(GetString(*it, "type", at, text));
    REEL_RETURN_IF_ERROR(GetInt(*it, "height", at, number));
    REEL_RETURN_IF_ERROR(GetInt(*it, "width", at, number));
    REEL_RETURN_IF_ERROR(GetDouble(*it, "fps", at, real));
  }
  int64_t k = 0;
  for (const Json& device : meta.value("devices", Json::array())) {
    const std::string at = where + ": devices[" + std::to_string(k++) + "]";
    if (!device.is_object()) continue;
    for (const char* key : {"key", "kind", "name"}) REEL_RETURN_IF_ERROR(GetString(device, key, at, text));
  }
  return Status::OK();
}

Result<Session> ReadSession(FileSystem* fs, const std::string& root, const std::string& name) {
  Session s;
  s.name = name;
  const std::string dir = JoinPath(root, name), where = JoinPath(dir, "metadata.json");
  REEL_ASSIGN_OR_RETURN(s.meta, ReadJsonObjectBounded(fs, where));
  auto version = s.meta.find("format_version");
  if (version != s.meta.end() && !(version->is_string() && version->get<std::string>() == "1.0"))
    return Status::NotSupported(where + ": format_version " + Brief(*version) +
                                "; reel migrate reads egodata format 1.0 (contract §1) and does not guess");
  REEL_RETURN_IF_ERROR(GetInt(s.meta, "episode_index", where, s.source_index));
  REEL_RETURN_IF_ERROR(GetDouble(s.meta, "created_at", where, s.created_at));
  REEL_RETURN_IF_ERROR(GetDouble(s.meta, "fps", where, s.fps));
  if (!(s.fps > 0 && s.fps <= 10000)) return Status::Invalid(where + ": fps " + std::to_string(s.fps) + " is not a frame rate");
  REEL_RETURN_IF_ERROR(CheckMetadataTypes(s.meta, where));
  REEL_RETURN_IF_ERROR(ListTree(fs, dir, "", &s.files));
  REEL_RETURN_IF_ERROR(FindVideos(where, &s));
  for (const std::string& f : s.files) {
    const auto parts = Split(f);
    if (parts.size() != 2 || parts[0] != "calibration" || !EndsWith(parts[1], ".json")) continue;
    REEL_ASSIGN_OR_RETURN(Json c, ReadJsonObjectBounded(fs, JoinPath(dir, f)));
    s.calibration[parts[1].substr(0, parts[1].size() - 5)] = std::move(c);
  }
  return s;
}

// Folders the reference never takes for a session (v1.0-layout.md, step 1).
bool SkippedFolder(const std::string& name) {
  static const std::set<std::string> kSkipped = {"videos", "data", "meta", "depth", "calibration"};
  return name.empty() || name[0] == '.' || name[0] == '_' || kSkipped.count(name) || name.rfind("chunk-", 0) == 0;
}

}  // namespace

Result<Json> ReadJsonObjectBounded(FileSystem* fs, const std::string& path) {
  return ReadJsonObjectFile(fs, path, JsonLimits{kMaxJsonBytes, 64});
}

Status ListTree(FileSystem* fs, const std::string& dir, const std::string& prefix, std::vector<std::string>* out) {
  REEL_ASSIGN_OR_RETURN(auto entries, fs->ListDir(dir));
  std::sort(entries.begin(), entries.end(), [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  for (const DirEntry& e : entries) {
    const std::string rel = prefix.empty() ? e.name : prefix + "/" + e.name;
    // A link is not the task's own file: moving, copying or deleting what it points to
    // would reach outside the task (issue 27, finding 2: --no-backup emptied a linked folder).
    if (e.symlink)
      return Status::Invalid(JoinPath(dir, e.name) + ": is a symbolic link; reel migrate moves a task's own "
                             "files and follows no link out of it (replace the link with what it points to, "
                             "or remove it), nothing was changed");
    if (e.type == FileType::kDirectory) REEL_RETURN_IF_ERROR(ListTree(fs, JoinPath(dir, e.name), rel, out));
    else out->push_back(rel);
  }
  if (prefix.empty()) std::sort(out->begin(), out->end());
  return Status::OK();
}

Result<bool> RemoveEmptyTree(FileSystem* fs, const std::string& dir) {
  REEL_ASSIGN_OR_RETURN(auto entries, fs->ListDir(dir));
  bool empty = true;
  for (const DirEntry& e : entries) {
    if (e.type != FileType::kDirectory || e.symlink) {  // a link is left, never followed
      empty = false;
      continue;
    }
    REEL_ASSIGN_OR_RETURN(bool gone, RemoveEmptyTree(fs, JoinPath(dir, e.name)));
    empty = empty && gone;
  }
  if (!empty) return false;
  REEL_RETURN_IF_ERROR(fs->RemoveDir(dir));
  return true;
}

Status CheckSource(FileSystem* fs, const MigratePlan& plan) {
  REEL_ASSIGN_OR_RETURN(DetectedFormat format, DetectFormat(fs, plan.source));
  if (format.format != DatasetFormat::kLegacyV1_0)
    return Status::Invalid(plan.source + ": is a " + DatasetFormatName(format.format) + " dataset (" + format.version +
                           "); reel migrate converts v1.0 tasks (contract §1: no format, <task>_NNNNNN folders)");
  return Status::OK();
}

Result<bool> MigratedAlready(FileSystem* fs, const MigratePlan& plan) {
  REEL_ASSIGN_OR_RETURN(FileInfo dest, fs->Stat(plan.dest));
  if (dest.type == FileType::kNotFound && !plan.in_place) return false;
  REEL_ASSIGN_OR_RETURN(FileInfo info, fs->Stat(JoinPath(plan.dest, "meta/info.json")));
  if (info.type == FileType::kNotFound) {
    if (plan.in_place) return false;
    // A killed run's publish, decided: the lock's roll-forward finishes it.
    REEL_ASSIGN_OR_RETURN(FileInfo journal, fs->Stat(JoinPath(plan.dest, "meta/.commit-task.json")));
    if (journal.type == FileType::kFile) return false;
    // Else only temps (dotfiles) of a killed run may be there; RemoveStaleTemps takes them.
    for (const char* dir : {"data", "videos"}) {
      REEL_ASSIGN_OR_RETURN(FileInfo d, fs->Stat(JoinPath(plan.dest, dir)));
      if (d.type != FileType::kDirectory) continue;
      std::vector<std::string> files;
      REEL_RETURN_IF_ERROR(ListTree(fs, JoinPath(plan.dest, dir), dir, &files));
      for (const std::string& f : files)
        if (BaseName(f)[0] != '.')
          return Status::AlreadyExists(plan.dest + ": holds " + f + "; --to needs a new or empty directory");
    }
    return false;
  }
  REEL_ASSIGN_OR_RETURN(DetectedFormat format, DetectFormat(fs, plan.dest));
  if (format.format == DatasetFormat::kLegacyV1_0 && plan.in_place) return false;
  if (format.format != DatasetFormat::kPooledEpisodesV1)
    return Status::Invalid(plan.dest + ": is a " + DatasetFormatName(format.format) + " dataset; reel migrate "
                           "writes pooled_episodes_v1");
  if (plan.in_place) return true;
  REEL_ASSIGN_OR_RETURN(FileInfo manifest, fs->Stat(JoinPath(plan.dest, "meta/.migrate_manifest.json")));
  if (manifest.type != FileType::kFile)
    return Status::AlreadyExists(plan.dest + ": is a pooled task reel migrate did not write; --to needs a new or "
                                 "empty directory");
  return true;
}

Status FindSessions(FileSystem* fs, MigratePlan* plan) {
  plan->sessions.clear();
  REEL_ASSIGN_OR_RETURN(auto entries, fs->ListDir(plan->source));
  for (const DirEntry& e : entries) {
    if (e.type != FileType::kDirectory || SkippedFolder(e.name)) continue;
    if (e.symlink)
      return Status::Invalid(JoinPath(plan->source, e.name) + ": a session folder that is a symbolic link; "
                             "reel migrate moves a task's own files and follows no link out of it (replace the "
                             "link with the folder, or remove it), nothing was changed");
    REEL_ASSIGN_OR_RETURN(FileInfo meta, fs->Stat(JoinPath(JoinPath(plan->source, e.name), "metadata.json")));
    if (meta.type != FileType::kFile) continue;
    REEL_ASSIGN_OR_RETURN(Session s, ReadSession(fs, plan->source, e.name));
    plan->sessions.push_back(std::move(s));
  }
  if (plan->sessions.empty())
    return Status::NotFound(plan->source + ": no session folder with a metadata.json (v1.0-layout: <task>_NNNNNN/)");
  std::sort(plan->sessions.begin(), plan->sessions.end(), [](const Session& a, const Session& b) {
    return std::tie(a.source_index, a.created_at, a.name) < std::tie(b.source_index, b.created_at, b.name);
  });
  for (size_t i = 0; i < plan->sessions.size(); ++i) plan->sessions[i].n = static_cast<int64_t>(i + 1);
  const Json& first = plan->sessions.front().meta;
  if (first.value("task_name", Json()).is_string() && !first["task_name"].get<std::string>().empty())
    plan->task_name = first["task_name"].get<std::string>();
  return Status::OK();
}

Result<LegacyFrames> ReadLegacyFrames(FileSystem* fs, const std::string& session_dir) {
  const std::string path = JoinPath(session_dir, "timestamps.json");
  REEL_ASSIGN_OR_RETURN(FileInfo st, fs->Stat(path));
  if (st.type != FileType::kFile)
    return Status::NotSupported(path + ": missing; reel migrate takes frames and wall_time from it and does not "
                                "guess them");
  REEL_ASSIGN_OR_RETURN(Json doc, ReadJsonObjectBounded(fs, path));
  auto entries = doc.find("timestamps");
  if (entries == doc.end() || !entries->is_array()) return Status::Invalid(path + ": \"timestamps\" must be an array");
  std::map<int64_t, LegacyFrame> first;
  LegacyFrames out;
  for (const Json& e : *entries) {
    if (!e.is_object()) return Status::Invalid(path + ": a timestamps entry must be an object, found " + Brief(e));
    if (!e.contains("frame_index")) return Status::Invalid(path + ": a timestamps entry has no frame_index");
    LegacyFrame f;
    REEL_RETURN_IF_ERROR(GetInt(e, "frame_index", path, f.frame_index));
    REEL_RETURN_IF_ERROR(GetDouble(e, "timestamp", path, f.timestamp));
    REEL_RETURN_IF_ERROR(GetDouble(e, "wall_time", path, f.wall_time));
    REEL_RETURN_IF_ERROR(GetInt(e, "hardware_ns", path, f.hardware_ns));
    first.emplace(f.frame_index, f);  // stereo: the left eye's entry comes first and wins
  }
  if (first.empty()) return Status::Invalid(path + ": no frames");
  for (auto& [fi, f] : first) out.frames.push_back(f);
  return out;
}

Result<LegacySensors> ReadLegacySensors(FileSystem* fs, const std::string& session_dir, const Session& s) {
  std::map<std::string, std::string> by_sub;  // data/<sub>/chunk-*/<file>.parquet
  for (const std::string& f : s.files) {
    const auto parts = Split(f);
    if (parts.size() != 4 || parts[0] != "data" || !EndsWith(parts[3], ".parquet")) continue;
    if (!by_sub.emplace(parts[1], f).second)
      return Status::NotSupported(JoinPath(session_dir, f) + ": a second parquet for data/" + parts[1] +
                                  "/ (" + by_sub[parts[1]] + "); v1.0 sessions hold one per sensor");
  }
  LegacySensors out;
  for (const auto& [sub, rel] : by_sub) {
    if (sub == "imu") continue;
    out.sensors.push_back(sub);
    const std::string path = JoinPath(session_dir, rel);
    REEL_ASSIGN_OR_RETURN(auto table, ReadParquetFile(fs, path));
    out.tables.push_back({path, table});
  }
  auto imu = by_sub.find("imu");
  if (imu != by_sub.end()) {
    const std::string path = JoinPath(session_dir, imu->second);
    REEL_ASSIGN_OR_RETURN(auto table, ReadParquetFile(fs, path));
    out.tables.push_back({path, table});
    out.has_imu = true;
  }
  return out;
}

}  // namespace reel::internal
