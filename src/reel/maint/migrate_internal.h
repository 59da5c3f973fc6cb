// Internal: reel migrate's reading side: the v1.0 sessions of a task and what each holds
// (shared/docs/v1.0-layout.md), for migrate.cc.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "maint/migrate_table.h"
#include "util/json_util.h"
#include "reel/fs.h"
#include "reel/status.h"

namespace reel::internal {

struct SessionVideo {
  std::string slot;  // image key in the pooled task
  std::string ext;   // "mp4" (RGB, moved as is) or "mkv" (depth, moved as is)
  std::string rel;   // within the session folder
};

// One v1.0 session folder.
struct Session {
  std::string name;          // folder name, e.g. "pick_000003"
  Json meta;                 // metadata.json
  int64_t source_index = 0;  // metadata.episode_index
  double created_at = 0.0;   // metadata.created_at (unix seconds)
  double fps = 30.0;
  int64_t n = 0;             // N in the pooled task
  int64_t frames = 0;        // rows written (after staging)
  std::vector<std::string> files;  // every file in the folder, relative to it, sorted
  std::vector<SessionVideo> videos;
  Json calibration = Json::object();  // {stem: calibration/<stem>.json}
};

struct MigratePlan {
  std::string source;  // the v1.0 task
  std::string dest;    // the pooled task written (source when in place)
  bool in_place = true;
  bool copy_videos = true;  // a backup is made, or the source stays: pooled videos are copies
  std::string backup;       // "_migrate_backup_<YYYYmmdd_HHMMSS>" or ""
  std::string task_name;
  std::vector<Session> sessions;  // in N order
};

// JSON object at `path`, at most 256 MiB (its size is checked before it is read).
Result<Json> ReadJsonObjectBounded(FileSystem* fs, const std::string& path);
// Every file under `dir`, relative to it with `prefix`, in name order.
Status ListTree(FileSystem* fs, const std::string& dir, const std::string& prefix, std::vector<std::string>* out);
// Removes `dir` and its subfolders when no file is left in them; returns whether it went.
Result<bool> RemoveEmptyTree(FileSystem* fs, const std::string& dir);

// OK when plan.source is a v1.0 task (contract §1), else an error naming what it is.
Status CheckSource(FileSystem* fs, const MigratePlan& plan);
// True when plan.dest is already the pooled task (a re-run after the publish); an error
// for a --to destination that holds something else.
Result<bool> MigratedAlready(FileSystem* fs, const MigratePlan& plan);
// plan->sessions: every session folder, in (episode_index, created_at, name) order,
// numbered from 1 (contract-decisions.md "v1.0 -> pooled migration: numbering").
Status FindSessions(FileSystem* fs, MigratePlan* plan);

struct LegacyFrames {
  std::vector<LegacyFrame> frames;  // ascending frame_index, the first entry of each
};
Result<LegacyFrames> ReadLegacyFrames(FileSystem* fs, const std::string& session_dir);

struct LegacySensors {
  std::vector<LegacyTable> tables;   // sensors in name order, then imu
  std::vector<std::string> sensors;  // data/<sensor>/ names (not imu)
  bool has_imu = false;
};
Result<LegacySensors> ReadLegacySensors(FileSystem* fs, const std::string& session_dir, const Session& s);

}  // namespace reel::internal
