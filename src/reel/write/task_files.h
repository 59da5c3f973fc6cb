// Internal: the task-level files every episode commit touches (meta/info.json,
// meta/stats.json, meta/tasks.jsonl) and the commit that publishes an episode with
// them. Shared by the recorder (episodes it wrote) and the import server (episodes it
// received), so both follow the same merge rules and the same journaled commit.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "reel/fs.h"
#include "reel/metadata.h"
#include "reel/status.h"
#include "write/commit.h"

namespace reel::internal {

inline constexpr const char* kInfoPath = "meta/info.json";
inline constexpr const char* kStatsPath = "meta/stats.json";
inline constexpr const char* kTasksPath = "meta/tasks.jsonl";
inline constexpr const char* kRecycledPath = "meta/recycled_episode.json";
inline constexpr const char* kLockPath = "meta/episodes/.lock";

double NowUnixSeconds();

// The task's info.json, or a fresh one (contract §3 fixed keys) when the task is new.
Result<InfoJson> LoadInfo(FileSystem* fs, const std::string& root);

// The task's stats.json (empty when absent), with blocks lacking `count` (v1.1.0)
// rebuilt from data/ (contract §4).
Result<StatsJson> LoadStats(FileSystem* fs, const std::string& root);

// Removes temp files left by writers that died (never a live writer's).
void RemoveStaleTemps(FileSystem* fs, const std::string& root);

// Creates the parent directories of `path`, then WriteFileSynced.
Status WriteTempFile(FileSystem* fs, const std::string& path, std::string_view contents);

// Chooses the next episode number N (contract §2, §7.5; contract-decisions.md
// "number reuse"): a free recycled number first, else past the highest N on disk,
// the live reservations and `watermark`. The caller holds the task lock.
Result<int64_t> ChooseEpisodeIndex(FileSystem* fs, const std::string& root, int64_t watermark);

// Writes one episodes row (contract §6) as a one-row parquet file at `path`, fsynced.
Status WriteEpisodeRow(FileSystem* fs, const std::string& path, const EpisodeRow& row);

// What one episode adds to its task.
struct EpisodeCommit {
  int64_t episode_index = 0;                // N
  std::vector<Rename> episode_files;        // fsynced temps -> final paths (relative to root)
  InfoJson declaration;                     // merged into info.json by MergeInfo
  OrderedMap<StatsBlock> stats;             // merged into stats.json by MergeStats
  std::string tasks_jsonl;                  // written only when meta/tasks.jsonl is absent
};

// Merges info.json and stats.json, writes their temps (and tasks.jsonl's), then renames
// everything in one journaled commit (commit.h). The caller holds the task lock and has
// rolled interrupted commits forward. When the commit is not `decided`, the temps this
// function wrote are removed; the caller's episode temps are left to the caller.
Status CommitEpisode(FileSystem* fs, const std::string& root, const EpisodeCommit& commit,
                     bool* decided);

}  // namespace reel::internal
