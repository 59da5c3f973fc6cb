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

// Early v1.1.0 tasks hold the episodes rows of a chunk in one legacy shard,
// meta/episodes/chunk-CCC/file-CCC.parquet (contract §2, §6.1: rows by episode_index
// ascending, readers filter by the episode_index column). SplitEpisodes writes each of
// those rows to its own file at info.json's episodes_path (episode-NNN.parquet), the row
// unchanged (the shard's schema and values, one row), and removes the shard, one
// BeginTaskChange commit per shard: the new files are renamed into place first and the
// shard removed last. Readers prefer an episode's own file to a shard row for the same N
// (Task::ListEpisodes), so before, during and after the split they read the same rows.
// A row whose own file already exists is not rewritten (readers already read that file);
// the shard still goes. Idempotent: a task without shards is left as it is.
struct SplitEpisodesOptions {
  bool dry_run = false;  // report the plan, write nothing (and take no lock)
  ProgressFn progress;   // "episodes split", per row of every shard
  FileSystem* fs = nullptr;  // null = DefaultFileSystem()
};

struct SplitShard {
  std::string shard;              // relative to the task root
  std::vector<int64_t> split;     // rows written to their own file
  std::vector<int64_t> kept;      // rows whose own file already existed (left as it is)
  std::vector<std::string> files;  // the files of `split`, relative to the task root
};

struct SplitEpisodesReport {
  std::string task;  // the task root as given
  bool dry_run = false;
  std::vector<SplitShard> shards;  // in path order; empty when the task has none
  int64_t episodes_split = 0;
  int64_t episodes_kept = 0;
};

// Errors (nothing changed): those of Task::Open; Invalid naming the shard when it holds
// two rows with one episode_index, or when episodes_path renders an episode at the
// shard's own path (the task's template predates v1.1.2's episode- prefix); the reader's
// and the writer's. A failure after some shards were split leaves those split and the
// rest as they were (each shard is its own commit).
Result<SplitEpisodesReport> SplitEpisodes(const std::string& root, const SplitEpisodesOptions& options = {});

// ---- stats --rebuild / --verify -----------------------------------------------------------
// meta/stats.json recomputed from data/ with the contract's accumulator (§4,
// reference-behaviour.md "stats.json"): a block per glove column observation.<sensor>
// (counted per row, zero-filled rows included) and for observation.imu (counted per
// sample), population std, float64; `action` the placeholder block; placeholder and
// uncounted columns (hand pose, gripper, force matrix, glove IMU) never counted. Episodes
// are merged in N order with the same merge the recorder uses (reel/merge.h). A rebuild
// counts what data/ holds now: an episode deleted after upload no longer counts (the
// incremental stats.json keeps it, §4), which --verify reports as a difference.

struct RebuildStatsOptions {
  bool dry_run = false;  // compute and compare; write nothing
  ProgressFn progress;   // "episodes read"
};

// One block where the stored stats.json and the recomputed one disagree.
struct StatsBlockDiff {
  std::string block;   // "observation.imu"
  std::string what;    // "missing in stored", "count", "mean", "dim", "removed", ...
  std::string detail;  // for people: "stored 120, recomputed 118" / "[3] stored 0.5, recomputed 0.25"
};

struct RebuildStatsReport {
  int64_t episodes = 0;        // episodes whose data file was read
  std::string stored_json;     // meta/stats.json as it was ("" when absent)
  std::string rebuilt_json;    // the recomputed file's text
  std::vector<StatsBlockDiff> diffs;  // stored vs recomputed; empty = they agree
  bool written = false;        // rebuilt_json was committed (false: dry run, or unchanged)
  bool dry_run = false;        // options.dry_run
};

// Recomputes meta/stats.json of the task at `root` under the task lock and, unless
// dry_run, commits it through a task change of the episode transaction when its text
// differs from the stored one (so a second run writes nothing). Blocks the accumulator
// does not produce and that name no data column (e.g. imported image stats) are kept as
// they are; a stored block for a data column the contract does not count is removed.
// Values agree when |a - b| <= 1e-6 * max(1, |a|, |b|); counts and dims exactly.
Result<RebuildStatsReport> RebuildStats(const std::string& root, const RebuildStatsOptions& options,
                                        FileSystem* fs = nullptr);


// ---- repair-scale (int16 force-matrix scale, contract §7.2.1) -----------------------------
// The scale of an int16 force-matrix column cannot be read from its values, only checked:
// in one frame Σ(fz plane) ≈ the force sensor's fz (observation.<x>_force, component 2,
// for observation.<x>_force_matrix). Summing the raw quantized fz plane (decoded with
// scale 1) over contact frames gives ratio ≈ scale for the x10/x100/x1000 tiers; the
// historical uncalibrated x1 tier truncates every value toward zero, which gives ratios
// well below 1 (0.04-0.55 measured) - truncation, not a scale - so a ratio up to 1.25
// decides x1. Anything else (no contact, too few contact frames, a ratio between the
// tiers, frames that disagree) is refused, never guessed.

struct RepairScaleOptions {
  bool apply = false;               // false: dry run (the default), nothing written
  bool all = false;                 // also episodes whose row already declares the column
  std::vector<int64_t> episodes;    // empty = every episode
  ProgressFn progress;              // "episodes examined"
};

// The evidence and the decision for one int16 force-matrix column of one episode.
struct ScaleDecision {
  int64_t episode_index = 0;
  std::string column;          // observation.gripper_left_force_matrix
  std::string force_column;    // observation.gripper_left_force ("" when absent)
  std::string current_source;  // where the reader takes the scale today: episode_row, info_features, default
  double current_scale = 1;
  int64_t contact_frames = 0;  // frames used (force sensor |fz| in contact)
  double ratio = 0;            // median over contact frames of Σ raw fz / sensor fz
  double ratio_low = 0;        // 10th and 90th percentiles of the per-frame ratios
  double ratio_high = 0;
  std::optional<double> scale;  // the decision: 1, 10, 100 or 1000; empty = refused
  std::string reason;           // why this decision / why refused
  bool written = false;         // the row's force_matrix_specs now declares `scale`
};

struct RepairScaleReport {
  std::vector<ScaleDecision> decisions;  // every examined column, in N order
  int64_t episodes_examined = 0;
  int64_t rows_written = 0;
  bool applied = false;
};

// Examines every int16 force-matrix column without a spec in its episode row (all: every
// int16 one) and decides its scale. With apply, each decided episode's row file is
// rewritten with only force_matrix_specs changed (the decided columns added as
// {dtype int16, shape [250,250,3], encoding row_diff_quantized, scale}), one episode
// transaction (Begin of that existing N) per episode; data files are never written. An
// episode whose row lives in a legacy multi-row shard is refused (split-episodes first).
Result<RepairScaleReport> RepairScale(const std::string& root, const RepairScaleOptions& options,
                                      FileSystem* fs = nullptr);


// ---- backfill-hand-pose (keypoints mirror -> hand-pose placeholder columns, contract §10) --
// The recorder writes observation.left_hand_pose / observation.right_hand_pose
// (fixed_size_list<float32>[63]) as zero placeholders (contract §7.2); post-processing fills
// them from the keypoints mirror's hand_pose_3d file (reel/keypoints.h) - 21 MediaPipe world
// landmarks x (x, y, z) per hand - per contract-decisions.md "keypoints backfill":
//   - a hand labelled "Left" fills observation.left_hand_pose, "Right" the right one, in the
//     data row with the same frame_index; hand_N_present false, or any other label
//     ("Unknown", empty, null), fills nothing;
//   - both hands of one row with the same label: the row is ambiguous (MediaPipe's
//     handedness is a per-hand guess), neither is written for that side, and the row is
//     counted in `ambiguous_rows`; the other side is still filled when its label is unique;
//   - a data row without a filled hand keeps zeros (a re-run after new keypoints resets
//     it: the columns are recomputed from the file, never merged with what was there);
//   - keypoint rows without a data row are ignored and counted;
//   - every other column is unchanged (values, schema, key-value metadata, how the file was
//     written); meta/stats.json is not touched (hand pose is never counted, contract §4).
// One Begin(lock, N) transaction per changed episode; an episode whose columns already hold
// the values is not rewritten (idempotent). A task whose data has no hand-pose column is
// refused: reel never invents a column.
struct BackfillHandPoseOptions {
  std::vector<int64_t> episodes;  // empty = every episode with a hand_pose_3d file
  std::string keypoints_dir;      // the mirror folder; empty = FindKeypointsMirror's default
  bool dry_run = false;           // report what would change, write nothing
  ProgressFn progress;            // "episodes examined"
  FileSystem* fs = nullptr;       // null = DefaultFileSystem()
};

struct HandPoseBackfill {
  int64_t episode_index = 0;
  std::string source;        // the hand_pose_3d file ("" when the episode has none)
  int64_t data_rows = 0;
  int64_t keypoint_rows = 0;
  int64_t left_rows = 0;       // data rows given a left hand
  int64_t right_rows = 0;      // data rows given a right hand
  int64_t unlabelled_hands = 0;  // present hands labelled neither Left nor Right
  int64_t ambiguous_rows = 0;    // rows whose two present hands carry the same label
  int64_t unmatched_rows = 0;    // keypoint rows without a data row (ignored)
  bool changed = false;        // the data file differs (dry run: would differ)
  bool written = false;        // the new data file was committed
  std::string skipped;         // why the episode was left alone ("" when examined)
};

struct BackfillHandPoseReport {
  std::string mirror;
  bool dry_run = false;
  std::vector<HandPoseBackfill> episodes;  // in N order
  int64_t episodes_written = 0;
};

// Errors (nothing changed for the episode concerned): those of Task::Open and
// FindKeypointsMirror; NotFound for a listed episode the task does not have; Invalid naming
// the task when its data has no observation.*_hand_pose column (checked on every examined
// episode's data); ReadKeypointsFile's errors for a bad hand_pose_3d file. Episodes before
// the failing one stay committed.
Result<BackfillHandPoseReport> BackfillHandPose(const std::string& root, const BackfillHandPoseOptions& options = {});

// ---- add-columns (post-hoc columns, multi-device §4.7) -----------------------------------
// Appends the columns of a parquet file (a `frame_index` column plus the new columns) to
// episode N's data, aligned by frame_index: a data row without a source row gets the
// column's empty value ([] for a list - for a SLAM trajectory "no new point in this row" -
// zeros for a fixed_size_list, 0 / false / "" for a scalar); a null source value is refused.
// Source rows whose frame_index has no data row are refused (Invalid naming the first ones)
// unless `drop_unmatched`, which ignores and counts them. The new data file, the features
// of the added columns in meta/info.json and, for a column the contract's accumulator
// counts (a glove observation.<sensor>, observation.imu), its block merged into
// meta/stats.json are published by ONE commit of the episode transaction.
//
// Refused (Invalid, nothing written):
//   - a column the episode's data already has, unless `replace` (then the column is
//     rewritten with the new values; a counted column is never replaced: its old rows are in
//     stats.json and cannot be taken out - record the episode again instead);
//   - a name outside the contract's rules (multi-device §2.4): not observation.<segments>,
//     segments other than [a-z0-9_]+, a retired name (slam_pose, gripper_1_*,
//     observation.images.*), a key column, a reserved suffix (slam_trajectory[_ns], _force,
//     _force_matrix[_ns], _force_ns, _state, _imu_quat, _imu_valid, _hand_pose) whose
//     column does not have that family's type; force matrices (their scale is a per-episode
//     recording spec);
//   - a *slam_trajectory_ns column whose trajectory (in the source or the data) is missing,
//     or whose row lengths differ from the trajectory's point counts (8 values per point);
//   - a type that differs from the feature other episodes already declared for the column
//     (dtype or shape), or a declaration (`feature_json`) that contradicts it;
//   - a type reel cannot declare: anything but a numeric or bool scalar, a fixed_size_list of
//     numbers, or a list of numbers in a known list family (SLAM, IMU).
struct AddColumnsOptions {
  std::string from;              // the source parquet file
  bool replace = false;          // rewrite columns the episode already has
  bool drop_unmatched = false;   // ignore source rows without a data row instead of refusing
  // Extra keys of the added columns' features, a JSON object {column: {key: value}} -
  // multi-device §6.6's frame, frame_axes, time, owner, source_slot, clock, encoding - merged
  // over the spec reel derives from the column's family and type.
  std::string feature_json;
  bool dry_run = false;          // validate and report, write nothing
  FileSystem* fs = nullptr;      // null = DefaultFileSystem()
  int64_t max_source_bytes = int64_t{4} << 30;  // a bigger source file is refused
  int64_t max_source_rows = 10'000'000;
};

struct AddedColumn {
  std::string name;
  std::string type;          // Arrow type, e.g. list<item: double>
  std::string feature_json;  // the feature written to info.json
  bool replaced = false;     // the episode had the column before
  bool counted = false;      // has a stats.json block
};

struct AddColumnsReport {
  int64_t episode_index = 0;
  std::string source;
  bool dry_run = false;
  int64_t data_rows = 0;
  int64_t source_rows = 0;
  int64_t filled_rows = 0;      // data rows given a source row
  int64_t unmatched_rows = 0;   // source rows without a data row (drop_unmatched)
  std::vector<AddedColumn> columns;
  bool written = false;
};

Result<AddColumnsReport> AddColumns(const std::string& root, int64_t episode_index, const AddColumnsOptions& options);

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
  // The keypoints mirror (contract §10; layout.h FindKeypointsMirror): empty = the first
  // keypoints_output/<task> beside the task (none: nothing to re-key), else this folder (it
  // must exist). In place, each <mirror>/<session>/ becomes <mirror>/episode_{N:06d}/ after
  // the task's commit, as the manifest records (the mirror is outside the task, so the
  // commit journal cannot carry it; a re-run finishes an interrupted re-keying). With `to`
  // the mirror is left as it is (and an explicit one refused).
  std::string keypoints;
  // Undo the migration of this task (in place, made with a backup) from
  // meta/.migrate_manifest.json and the _migrate_backup_* folder it names: ONE task-change
  // commit moves every backed-up session file back and removes every file the migration
  // created (meta/info.json first among the removals: from then on the task reads as v1.0),
  // then the keypoints mirror is moved back and the emptied folders removed. Refused without
  // a manifest or its backup (so a --no-backup migration, whose session files other than the
  // videos are gone, cannot be restored), for a --to destination (its source is intact), and
  // when the task holds an episode file the migration did not create (it would be lost).
  // Safe to kill and run again like the migration; on a v1.0 task it is a no-op.
  bool restore = false;
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
  bool restore = false;             // a --restore report: `sessions` are the ones restored
  bool nothing_to_restore = false;  // --restore on a v1.0 task (restored already, or never migrated)
  std::string keypoints;            // the keypoints mirror re-keyed, "" when none
  int64_t keypoints_moved = 0;      // mirror folders moved by this run (dry run: to move)
  std::string backup;       // backup folder relative to the task, "" when none
  std::vector<MigratedSession> sessions;
  int64_t frames = 0;
  std::vector<std::string> warnings;
};

Result<MigrateReport> MigrateTask(const std::string& task_root, const MigrateOptions& options);

}  // namespace reel
