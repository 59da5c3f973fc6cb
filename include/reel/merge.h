// Task-level merge rules: how one committed episode updates meta/stats.json and
// meta/info.json (contract §3, §4; multi-device §6.7; contract-decisions.md).
// Used by the recorder and by the import server.
//
// Thread safety: pure functions over values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "reel/metadata.h"
#include "reel/status.h"

namespace reel {

// ---- stats.json accumulator (contract §4, reference-behaviour.md "stats.json") ----
//
// A block is a persistent accumulator: sum = mean*count, sum_sq = (std^2 + mean^2)*count.
// Merging adds sums and counts and takes elementwise min/max; the result's std is the
// population std sqrt(max(sum_sq/n - mean^2, 0)). All arithmetic in float64.

// Statistics of `rows` vectors of `dim` float32 values each (row-major in `values`):
// count = rows (for glove columns: every row, zero-filled rows included; for
// observation.imu: every sample). rows == 0 gives the empty block.
StatsBlock BlockFromValues(const float* values, int64_t rows, int64_t dim);

// The empty block of dimension `dim`: {count 0, mean 0s, std 1s, min 0s, max 0s}.
StatsBlock EmptyBlock(int64_t dim);

// The action placeholder {count 0, mean [0.0], std [1.0], min [0.0], max [0.0]}.
StatsBlock ActionPlaceholderBlock();

// Merges two blocks of the same dimension. A block with count 0 contributes
// nothing (its min/max are placeholders). Invalid when dimensions differ or a
// block lacks `count` (rebuild it from data/ first).
Result<StatsBlock> MergeBlocks(const StatsBlock& a, const StatsBlock& b);

// Merges an episode's blocks into the task's stats: blocks merged by name, new
// names appended, the action block always the placeholder. Errors from MergeBlocks
// name the block.
Result<StatsJson> MergeStats(const StatsJson& task, const OrderedMap<StatsBlock>& episode);

// ---- info.json merge (contract §3; multi-device §6.7; contract-decisions.md) ----
//
// `task` is the info.json on disk (or a fresh one), `episode` what the committed
// episode declares. Rules:
// - features, cameras, video_extensions: union; the episode's value wins for a key
//   both have; keys keep their first position;
// - devices: union by `key`, the episode's entry wins; device_names: union, episode wins;
// - sensors: union in first-seen order;
// - calibration: the episode's (latest) when it has one;
// - slam_frames: union, episode wins; gripper_slam_frame: the episode's when set, kept
//   otherwise only while a gripper trajectory feature exists;
// - created_at: kept when set (set once, at task creation);
// - total_episodes: max(task, episode_index) (monotone: never decreases);
// - fps, app_version, codebase_version, task_name, video, sensor_dim: the episode's;
// - format, chunks_size, path templates: the task's (they never change);
// - keys reel does not model: kept, in order (SerializeInfoJson keeps them).
InfoJson MergeInfo(const InfoJson& task, const InfoJson& episode, int64_t episode_index);

}  // namespace reel
