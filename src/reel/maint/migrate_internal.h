// Internal: reel migrate's reading side: the v1.0 sessions of a task and what each holds
// (shared/docs/v1.0-layout.md), for migrate.cc.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "maint/migrate_table.h"
#include "util/json_util.h"
#include "reel/fs.h"
#include "reel/maintenance.h"
#include "reel/status.h"

namespace reel::internal {

struct SessionVideo {
  std::string slot;  // image key in the pooled task
  std::string ext;   // "mp4" (RGB, moved as is) or "mkv" (depth: moved as is, or encoded)
  std::string rel;   // within the session folder (a sequence: its folder depth/<slot>)
  // A depth frame sequence (v1.0 <= 1.0.13: depth/<slot>/000001.png ..., uint16 mm PNG16;
  // v1.0.11: NNNNNN.bin raw little-endian uint16), encoded at staging into one FFV1
  // gray16le .mkv (lossless; contract-decisions.md "v1.0 migration: media"). Empty: a
  // video file, copied or moved byte for byte.
  std::string sequence;                   // "", "png" or "bin"
  std::map<int64_t, std::string> frames;  // frame number (from 1) -> file, relative to the session
  int width = 0, height = 0;              // metadata.json cameras.<slot> (0: not given)
  double fps = 0;                         // cameras.<slot>.fps, else the session's
};

// One v1.0 session folder as the plan holds it: the small fields only. Its metadata.json
// and calibration files (up to 64 MiB each) are read again when the session is staged
// (SessionMeta), so that a migration holds one session's big data at a time (issue 27,
// finding 13: 3 sessions x 200 MB metadata.json took 6.4 GB when all were held).
struct Session {
  std::string name;          // folder name, e.g. "pick_000003"
  std::string task_name;     // metadata.task_name ("" when absent)
  int64_t source_index = 0;  // metadata.episode_index
  double created_at = 0.0;   // metadata.created_at (unix seconds)
  double fps = 30.0;
  int64_t n = 0;             // N in the pooled task
  int64_t frames = 0;        // rows written (after staging)
  std::vector<std::string> files;  // every file in the folder, relative to it, sorted
  std::vector<SessionVideo> videos;
};

// What staging a session reads of its metadata besides the plan's fields.
struct SessionMeta {
  Json meta;                          // metadata.json, its key types checked
  Json calibration = Json::object();  // {stem: calibration/<stem>.json}
};

// metadata.json and calibration/*.json of session `s` of the task at `root`, read again
// (each at most 64 MiB: they are copied into the episodes row and info.json, which readers
// hold to that bound). ReadSessionCalibration: the calibration alone.
Result<SessionMeta> ReadSessionMeta(FileSystem* fs, const std::string& root, const Session& s);
Result<Json> ReadSessionCalibration(FileSystem* fs, const std::string& root, const Session& s);

struct MigratePlan {
  std::string source;  // the v1.0 task
  std::string dest;    // the pooled task written (source when in place)
  bool in_place = true;
  bool copy_videos = true;  // a backup is made, or the source stays: pooled videos are copies
  std::string backup;       // "_migrate_backup_<YYYYmmdd_HHMMSS>" or ""
  std::string task_name;
  std::vector<Session> sessions;  // in N order
  // Every file the migration creates in the destination (relative; the manifest's "files",
  // what --restore removes).
  std::vector<std::string> created;
  // The keypoints mirror re-keyed after the commit (in place only; "" when none) and its
  // moves, session folder -> episode_{N:06d} (the manifest's "keypoints").
  std::string keypoints_mirror;
  std::vector<std::pair<std::string, std::string>> keypoints_moves;
};

inline constexpr const char* kMigrateManifestPath = "meta/.migrate_manifest.json";
// An interrupted restore's record: the manifest, moved here by the restore's commit, until
// the keypoints are moved back and the emptied folders removed.
inline constexpr const char* kRestoreRecordDir = ".reel-restore";
inline constexpr const char* kRestoreRecordPath = ".reel-restore/manifest.json";

// A migration's staging (migrate.cc step 1), removed once it is published.
inline constexpr const char* kMigrateStagingDir = ".reel-migrate";

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
// The frames of timestamps.json (at most 256 MiB), parsed entry by entry (no document of
// the whole file is built: issue 27 finding 13, a 196 MB file took 8.5 GB), and held to
// what `reel check` asks of the rows they become (docs/check-rules.md), so that migrate
// never publishes a task its checker refuses (finding 4):
//   data.frame_index  the frame_index values are exactly 0..n-1; each appears once, or
//                     twice (a stereo session: left eye, then right; the first is kept);
//   data.time_order   the kept entries' timestamp (as the float32 the data column holds)
//                     and wall_time are finite and never decrease with frame_index.
// An error names the file, the value and the rule.
Result<LegacyFrames> ReadLegacyFrames(FileSystem* fs, const std::string& session_dir);

struct LegacySensors {
  std::vector<LegacyTable> tables;   // sensors in name order, then imu
  std::vector<std::string> sensors;  // data/<sensor>/ names (not imu)
  bool has_imu = false;
  std::vector<std::string> warnings;  // sensors left out: every value 0 (v1.0-layout step 4)
};
// A sensor whose observation.<sensor> values are all 0 (or that has none) is left out with
// a warning, its table too (its status.* columns with it), as the reference migration does:
// the v1.0 writer zero-filled a glove that was never connected.
Result<LegacySensors> ReadLegacySensors(FileSystem* fs, const std::string& session_dir, const Session& s);

// migrate_depth.cc. The depth frame sequence of slot `slot` in session s (files
// depth/<slot>/<number>.png|.bin), or nullopt when the folder holds none. `where` names
// metadata.json. Errors: a sequence mixing .png and .bin, two files of one number, a
// .bin sequence without cameras.<slot> width and height.
Result<std::optional<SessionVideo>> FindDepthSequence(const std::string& where, const Session& s,
                                                      const std::string& slot, const Json& camera);
// Encodes sequence v of the session at `session_dir` into an FFV1 gray16le .mkv at `out`
// (fsynced), frame k of the file = frame number k + 1. `rows` is the session's frame count:
// the numbers must be exactly 1..rows. Every file is size-checked before it is read; an
// error names the file, the rule and the value.
Status EncodeDepthSequence(FileSystem* fs, const std::string& session_dir, const SessionVideo& v, int64_t rows,
                           const std::string& out);

// migrate_mirror.cc. A folder name a manifest may give: one path component, not "." or "..".
bool PlainComponent(const std::string& name);
// The manifest (meta/.migrate_manifest.json or the restore record).
Result<Json> ReadManifest(FileSystem* fs, const std::string& path);
// Keypoints mirror folders to re-key for plan (in place: plan->keypoints_mirror/_moves
// filled; explicit_dir as FindKeypointsMirror takes it; none found without one: nothing).
Status PlanKeypoints(FileSystem* fs, const std::string& explicit_dir, MigratePlan* plan,
                     std::vector<std::string>* warnings);
// The manifest's "keypoints" block as JSON, and the moves it records carried out: each
// <mirror>/<session> renamed to <mirror>/episode_{N:06d} (back: the other way), where the
// mirror is the task's own (FindKeypointsMirror from `root`, or `explicit_dir`), never the
// folder the manifest names (it is the task's bytes); none beside the task: a warning and
// nothing moved. Idempotent: a move whose source is gone and target present is done; both
// present is an error naming both; neither is a warning. Returns how many folders it moved;
// *mirror_out is the mirror used.
Json KeypointsJson(const MigratePlan& plan);
Result<int64_t> MoveKeypoints(FileSystem* fs, const std::string& root, const std::string& explicit_dir,
                              const Json& manifest, bool back, std::string* mirror_out,
                              std::vector<std::string>* warnings);

// migrate_restore.cc: reel migrate --restore (MigrateOptions::restore) of the task at `root`.
Status RestoreTask(FileSystem* fs, const std::string& root, const MigrateOptions& options, MigrateReport* report);

}  // namespace reel::internal
