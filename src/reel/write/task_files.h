// Internal: the task-level files every episode commit touches (meta/info.json,
// meta/stats.json, meta/tasks.jsonl), their paths and loaders, and the episodes-row
// writer. The commit itself is EpisodeTransaction's (transaction.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "reel/columns.h"
#include "reel/fs.h"
#include "reel/metadata.h"
#include "reel/status.h"

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

// Creates the parent directories of `path`, then WriteFileSynced.
Status WriteTempFile(FileSystem* fs, const std::string& path, std::string_view contents);

// The feature reel declares for a column of `family` (multi-device §6.2, §6.6): dtype,
// shape, and the family's fixed encoding and clock. `width` is the shape of the families
// without a fixed one (a fixed_size_list's length). Force matrices get the int16 x100 shape
// without encoding/scale and SLAM trajectories no frame: those are the caller's to declare.
FeatureSpec FamilyFeature(ColumnFamily family, int32_t width);

// Writes one episodes row (contract §6) as a one-row parquet file at `path`, fsynced.
Status WriteEpisodeRow(FileSystem* fs, const std::string& path, const EpisodeRow& row);

}  // namespace reel::internal
