// The contract's maintenance tools (docs/maintenance.md): each reads a task, decides what
// to change, and changes it only through the episode transaction (write/transaction.h:
// Begin(lock, N) for one episode's files, BeginTaskChange(lock) for the task as a whole),
// so a tool killed at any moment leaves the old task or the new one and a re-run finishes
// the job. Every tool that writes has a dry run that reports the same plan without writing.
//
// One section per tool below; options are documented structs shared by the CLI
// (tools/reel/) and Python (python/src/).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "reel/fs.h"
#include "reel/progress.h"
#include "reel/status.h"

namespace reel {

// ---- split-episodes (legacy multi-row shards -> one file per episode) -------------------

// ---- stats --rebuild / --verify -----------------------------------------------------------

// ---- repair-scale (int16 force-matrix scale, contract §7.2.1) -----------------------------

// ---- migrate (v1.0 session folders -> pooled_episodes_v1) ---------------------------------

// reel migrate (docs/maintenance.md "migrate"): a v1.0 task (contract §1: no `format` in
// meta/info.json, one `<task>_NNNNNN/` folder per session) becomes a pooled task.
//
// Sessions are numbered N = 1, 2, ... in (metadata.episode_index, created_at, folder name)
// order (contract-decisions.md "v1.0 -> pooled migration: numbering"; a gap in the folder
// suffixes closes up, and meta/.migrate_manifest.json records session <-> N). Every file is
// built in a staging dotfolder `.reel-migrate/` of the destination, then published by ONE
// task-change commit (write/transaction.h) that renames meta/info.json last: until that
// rename the task reads as v1.0, from it on as pooled. A kill at any moment leaves the old
// task or the new one; running migrate again rolls an interrupted commit forward, rebuilds
// an incomplete staging and removes what the commit emptied.
struct MigrateOptions {
  FileSystem* fs = nullptr;  // nullptr: the POSIX file system
  // Empty: in place. Else a new pooled task there (a missing or empty directory); the
  // source is left as it is and no backup is made (the source is one).
  std::string to;
  // In place: the session folders go to `<task>/_migrate_backup_<YYYYmmdd_HHMMSS>/<session>/`
  // (contract §11), moved there by the commit, and the pooled videos are copies. With
  // no_backup the videos are moved into the pooled task and every other session file is
  // removed by the commit.
  bool no_backup = false;
  bool dry_run = false;  // plan only: nothing is written
  ProgressFn progress;   // "sessions staged"
};

struct MigratedSession {
  std::string session;  // folder name, e.g. "pick_000003"
  int64_t episode_index = 0;  // N in the pooled task
  int64_t frames = 0;
  std::vector<std::string> videos;  // image keys
};

struct MigrateReport {
  std::string task;         // the pooled task written (the source, or `to`)
  bool already_pooled = false;  // nothing to migrate (a re-run after success)
  bool dry_run = false;
  std::string backup;       // backup folder relative to the task, "" when none
  std::vector<MigratedSession> sessions;
  int64_t frames = 0;
  std::vector<std::string> warnings;
};

Result<MigrateReport> MigrateTask(const std::string& task_root, const MigrateOptions& options);

}  // namespace reel
