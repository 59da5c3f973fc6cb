// Interop: pooled_episodes_v1 tasks to and from LeRobot (v2.1, v3.0) and the
// bundle format (../shared/seeds/004_*).
//
// Export never writes into the task. The task is read through its own FileSystem
// (Task::fs(): a local disk or an object store), the output written through
// ExportOptions::output_fs. The output directory must not exist (or, with
// replace_existing, must hold a dataset); how it then appears is ExportPublish's choice:
// renamed into place (local disks), or uploaded file by file, the dataset's marker file
// last (object stores, which have no rename). Either way a reader (LeRobot, DetectFormat,
// `reel info`) never takes a half-written output for a dataset.
//
// What a pooled column becomes is decided by an ExportMapping (docs/interop.md
// has the table): fixed-size float columns named in `state_columns` are joined
// into `observation.state`; the pooled `action` column is only a placeholder
// (contract §5), so `action_columns` names a real source when the caller has
// one; variable-length families (IMU sample lists, SLAM points, their stamp
// lists) are sampled per frame ("last": the newest sample at or before the frame,
// held over frames that have none) or dropped; force matrices are dropped (a
// decoded matrix is 187,500 floats per frame); every other fixed-size or scalar
// column is kept as its own feature, flattened to one axis. In LeRobot exports
// (ExportMapping::streams) force matrices, trajectories and the IMU are instead paired
// with each frame by time on their own clocks (reel/align.h), with validity masks, and
// the left glove is in canonical order. RGB slots become
// `observation.images.<slot>` video features and depth slots
// `observation.depth.<slot>` (12-bit log-code HEVC, `video.is_depth_map`).
// Pooled columns no feature holds exactly (list columns, force matrices) go
// unchanged into a sidecar parquet per episode (LeRobot: reel/sidecar/chunk-*/
// episode_*.parquet; bundle: reel.sidecar.parquet), which LeRobot and bundle
// readers ignore and `reel import` reads back.
//
// LeRobot needs a 0-based contiguous episode_index and frame timestamps on the
// video's own clock: exported episode i is the i-th pooled episode with data, in
// N order; `timestamp` is frame_index / fps exactly; the pooled wall-clock
// `timestamp` is kept as `pooled.timestamp`. The pooled N of every episode and
// the pooled metadata a round trip needs travel in info.json under "reel".
//
// Thread safety: the functions are reentrant; one call uses its own threads.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "reel/fs.h"
#include "reel/progress.h"
#include "reel/push.h"
#include "reel/status.h"

namespace reel {

class Task;

enum class ExportFormat { kLeRobotV30, kLeRobotV21, kBundle, kFlat };
// "lerobot-v3" | "lerobot-v2.1" | "bundle" | "flat"
Result<ExportFormat> ParseExportFormat(const std::string& name);
const char* ExportFormatName(ExportFormat format);

// What happens to one variable-length (list) pooled column.
enum class ListRule { kLast, kDrop };

// How a finished export reaches out_dir (docs/storage.md "Export to a URI").
enum class ExportPublish {
  // Built in a dotfile directory beside out_dir through ExportOptions::output_fs and
  // renamed into place (bundles: each ep_<id>/ appears by its own rename too): atomic, a
  // crash leaves no half dataset behind. Needs Rename and CreateUniqueDir: a local disk.
  kRename,
  // Built whole in a local scratch directory ($TMPDIR, through DefaultFileSystem(): it
  // needs room for the whole export), then copied into out_dir through output_fs file by
  // file in path order, the dataset's marker file last (LeRobot meta/info.json, bundle
  // manifest.json): readers see no dataset until every other file is complete. For
  // stores without rename (object stores). An upload that fails removes the files it
  // sent (best effort); one that is killed leaves them, without a marker. With
  // replace_existing, the old export is removed only once the new one is staged: its
  // markers first, then its other files, then the new upload; not atomic, so a reader
  // in between sees no dataset, never a mix.
  kUpload,
};

// How a force-matrix column becomes a LeRobot feature (docs/interop.md "Aligned streams").
enum class ForceMatrixFeature {
  kNone,  // no feature (the sidecar keeps the column, as before)
  kFz,    // the normal plane: float32 [250, 250] in mN
  kFull,  // fx, fy, fz: float32 [250, 250, 3] in mN
};
// "none" | "fz" | "full"
Result<ForceMatrixFeature> ParseForceMatrixFeature(const std::string& name);
const char* ForceMatrixFeatureName(ForceMatrixFeature mode);

// The time-aligned streams of a LeRobot export (reel/align.h: each stream paired with
// each frame on its own clock). Used by the LeRobot formats; the bundle format keeps the
// row mapping; the flat format uses tolerance_s.
struct StreamFeatures {
  // false: the row mapping of earlier releases (list columns by list_rules, force matrices
  // only in the sidecar, the left glove in firmware order). The other fields are then unused.
  bool align = true;
  // Each force-matrix column X stamped by a scalar X_ns: the sample nearest each frame
  // within the tolerance, decoded, plus X_valid (float32 [1], 1 = paired).
  ForceMatrixFeature force_matrix = ForceMatrixFeature::kFz;
  // observation.imu: the window newest IMU samples at or before each frame on the frame
  // clock (ImuWindowsOf), float32 [K, 6] oldest first, with observation.imu_mask float32
  // [K]. 0 = the list rule instead (the newest sample, held).
  int64_t imu_window = 16;
  // Largest |sample - frame| a pairing may have, seconds; 0 = half a frame period
  // (LeRobot), one frame period (flat, where it bounds an interpolation's neighbours).
  double tolerance_s = 0;
  // The left glove's frames in canonical order (multi-device §4.5); the firmware order
  // stays in the sidecar so that `reel import` restores it.
  bool canonical_gloves = true;
};

struct ExportMapping {
  // Fixed-size float columns joined, in this order, into observation.state.
  // Unset = every fixed-size float32 `observation.*` column whose name ends in
  // `_state` or `_force`, in info.json feature order.
  std::optional<std::vector<std::string>> state_columns;
  // Columns joined into `action`. Empty = keep the pooled placeholder `action`.
  std::vector<std::string> action_columns;
  // Per list column; unnamed list columns: kLast, except force matrices (kDrop).
  std::map<std::string, ListRule> list_rules;
  // Columns left out entirely (besides the ones `list_rules` drops).
  std::vector<std::string> drop_columns;
  bool include_depth = true;
  // Exported camera keys: "observation.images.<slot>" / "observation.depth.<slot>".
  std::string image_prefix = "observation.images.";
  std::string depth_prefix = "observation.depth.";
  // Trajectories, force matrices, the IMU and the left glove paired by time (LeRobot).
  StreamFeatures streams;
};

struct ExportOptions {
  ExportFormat format = ExportFormat::kLeRobotV30;
  ExportMapping mapping;
  std::string robot_type = "reel_pooled";
  // LeRobot v3 rollover limits (info.json data_files_size_in_mb /
  // video_files_size_in_mb) and files per chunk directory.
  int64_t data_files_size_in_mb = 100;
  int64_t video_files_size_in_mb = 200;
  int64_t chunks_size = 1000;
  // Episodes to export (pooled N); empty = all with data.
  std::vector<int64_t> episodes;
  // false: an existing out_dir is refused (AlreadyExists). true: an existing dataset
  // directory (meta/info.json or manifest.json) or empty directory is replaced, only once
  // the new export is complete (see ExportPublish for how); anything else is still refused.
  bool replace_existing = false;
  // "episodes exported" per episode; with kUpload then "files uploaded" per file. Empty = none.
  ProgressFn progress;
  // Where out_dir is written: a local disk for kRename, any FileSystem (an object store,
  // OpenLocation) for kUpload. Not owned; null = DefaultFileSystem().
  FileSystem* output_fs = nullptr;
  ExportPublish publish = ExportPublish::kRename;
};

struct ExportReport {
  std::string out_dir;
  ExportFormat format = ExportFormat::kLeRobotV30;  // options.format
  int64_t episodes = 0;
  int64_t frames = 0;
  int64_t videos_copied = 0;     // episode streams concatenated by stream copy
  int64_t videos_reencoded = 0;  // episode streams decoded and encoded again
  std::vector<std::string> features;   // exported feature keys, in order
  std::vector<std::string> warnings;   // e.g. "action is the pooled placeholder"
};

// Exports the task's episodes to `out_dir` on options.output_fs (which must not exist
// unless options.replace_existing), published as options.publish says. ExportReport::
// out_dir is the absolute path (kRename) or `out_dir` as given (kUpload). Errors:
// AlreadyExists for an output that may not be replaced; Invalid for an output inside the
// task (or holding it, with replace_existing) on the task's own file system; those of
// reading the task, writing and (kUpload) uploading.
Result<ExportReport> ExportTask(const Task& task, const std::string& out_dir,
                                const ExportOptions& options = {});

// ---- import ---------------------------------------------------------------------------
//
// A LeRobot (v2.0/v2.1/v3.x) or bundle dataset becomes episodes of a pooled task,
// each published by the recorder's own journaled commit (an episode is whole or
// absent whatever kills the process). Videos are cut out by stream copy, so
// every frame decodes exactly as before; a segment that does not start on a
// keyframe is decoded and encoded again (RGB, H.264).
//
// An export of reel's (info.json / manifest.json "reel" block) comes back as it
// was: the pooled columns, their types and shapes, the sidecar's list columns,
// the episodes rows, tasks, pooled N (when free in the target) and info.json.
// Any other dataset maps feature by feature: numeric features keep their name,
// dtype and shape (shape [1] stays a scalar column), strings stay strings,
// `timestamp`, `frame_index` and `task_index` are kept, `index` is dropped,
// `observation.images.<name>` becomes video slot <name>, N is the next free
// number.
struct ImportOptions {
  std::string task_name;     // "" = the task directory's name
  // An episode the target already holds identically (the same rows: every data column
  // but episode_index and wall_time, by name, type and value; and, slot for slot,
  // byte-identical videos) is skipped and listed in ImportReport::skipped. A reel export's episode whose
  // own number is taken by other content is refused (AlreadyExists) unless `renumber`,
  // which imports it under the next free number with a warning.
  bool renumber = false;
  ProgressFn progress;       // "episodes imported", per source episode; empty = none
  FileSystem* fs = nullptr;  // the task's; null = DefaultFileSystem()
  // The dataset's (an object store: OpenLocation's fs, and its root as `source`); null = fs.
  FileSystem* source_fs = nullptr;
};

struct SkippedEpisode {
  int64_t source_episode = 0;  // the source's episode_index (bundle: manifest position)
  int64_t episode_index = 0;   // the target's identical episode N
};

struct ImportReport {
  int64_t episodes = 0;
  int64_t frames = 0;
  int64_t videos_copied = 0;
  int64_t videos_reencoded = 0;
  bool round_trip = false;                 // the source is an export of reel's
  std::vector<int64_t> episode_indices;    // pooled N of each imported episode, in order
  std::vector<SkippedEpisode> skipped;     // already present, identical: not imported again
  std::vector<std::string> warnings;
};

// Errors: those of reading the source (reel/dataset.h); AlreadyExists when a
// target task's tasks.jsonl lacks a task of the source (tasks.jsonl is never
// rewritten). Episodes committed before an error stay; `reel check` judges the
// result like any task.
Result<ImportReport> ImportDataset(const std::string& source, const std::string& task_root,
                                   const ImportOptions& options = {});

// ImportDataset into a task on an object store (`store` and `root` as OpenLocation gives
// them, reel/object_store.h), created if missing. An object store has no rename and no
// lock, so the import runs as a staged change (reel/push.h ChangeStoredTask): under the
// task's push lock, into a local staging directory that reads through to the stored task
// (numbering, tasks.jsonl, the identical-episode check and the info/stats merge see the
// stored task), and the new episodes are then pushed with the publishing protocol of
// docs/storage.md, so a reader never sees a torn one. `source` is read through
// options.source_fs (null = the local file system; options.fs is unused); options.task_name
// defaults to the last component of `root`. `pushed`, when
// given, receives the push's report. Errors: ImportDataset's and ChangeStoredTask's;
// messages name the stored task, not the staging directory.
Result<ImportReport> ImportDatasetToStore(const std::string& source, FileSystem* store, const std::string& root,
                                          const ImportOptions& options = {}, PushReport* pushed = nullptr);

// Overlays of a bundle dataset (seed 004: "later annotations ... attach as overlay files,
// never by rewriting a bundle"; the rules are reel/dataset.h OverlayKind's).
struct OverlayWriteOptions {
  std::string from;              // the overlay's rows: a local parquet file
  bool replace = false;          // replace the episode's file of this overlay (else AlreadyExists)
  bool dry_run = false;          // validate and report, write nothing
  FileSystem* fs = nullptr;      // the dataset's; null = DefaultFileSystem()
  int64_t max_source_bytes = int64_t{256} << 20;  // the reader's limit too
};

struct OverlayWriteReport {
  std::string name;
  std::string bundle_id;
  int64_t episode_index = 0;     // position in manifest.json
  std::string path;              // overlays/<name>/<bundle id>.parquet, relative to the dataset
  std::string kind;              // "dense" | "spans"
  int64_t rows = 0;
  std::vector<std::string> columns;  // value columns
  bool replaced = false;         // the episode had a file of this overlay before
  bool dry_run = false;
};

// Writes overlay `name` of one episode of the bundle dataset at `dataset_root`. `episode`
// is a bundle id, or a manifest position in decimal. The source must keep the overlay rules
// for that episode's length and hold the kind and value columns of the overlay's files
// already written. The file is written beside its place under a dotfile name, synced, and
// renamed into place: a reader sees the old file or the new, never part of one. Nothing
// under episodes/ and no manifest.json is ever written. Two writers of one file at once:
// the last rename wins. Errors: NotSupported for a dataset that is not a bundle; NotFound
// for an unknown episode or a missing source; AlreadyExists without `replace`; Invalid for
// a source that breaks a rule (naming the file and the rule).
Result<OverlayWriteReport> WriteOverlay(const std::string& dataset_root, const std::string& name,
                                        const std::string& episode, const OverlayWriteOptions& options);

}  // namespace reel
