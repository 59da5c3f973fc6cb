// One library entry per job of `reel <command>` and of reel's Python functions, and the one
// JSON form of each job's report.
//
// A job entry resolves its paths or URIs (OpenLocation with `store`), runs the area's
// call, and returns the area's report. Errors and warnings name object-store files by the
// URI the caller gave ("s3://b/task/meta/info.json", not the store's own "b/task/..."). The
// CLI and the Python binding are a few lines each over an entry: they fill the options,
// call it, and print or return ToJson(report). So what `reel <command> --json` prints is
// what Python returns (tests/e2e/test_cli_python_json.py holds them equal for every
// command). A job whose area already takes a plain path and nothing else (migrate,
// split-episodes, repair-scale, backfill-hand-pose, add-columns) is its area's call
// itself; it has its ToJson here all the same.
//
// ToJson returns one JSON object as text (compact, UTF-8; invalid UTF-8 in a name is
// replaced by U+FFFD, as everywhere in reel's JSON). Its keys are documented in
// docs/cli.md per command and are stable: new keys are added, none renamed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "reel/check.h"
#include "reel/dataset.h"
#include "reel/interop.h"
#include "reel/maintenance.h"
#include "reel/object_store.h"
#include "reel/pack.h"
#include "reel/push.h"
#include "reel/recorder.h"
#include "reel/simulate.h"
#include "reel/status.h"
#include "reel/task.h"
#include "reel/upload.h"

namespace arrow {
class ChunkedArray;
}

namespace reel {

// ---- summaries: info, show, stats ------------------------------------------------------

// The summary `reel info` prints of the pooled task or the LeRobot / bundle dataset at `path`
// (path or URI), as JSON text (docs/cli.md "info"; `path` in it is the location as given).
Result<std::string> InfoJob(const std::string& path, const ObjectStoreOptions& store = {});
// One episode as `reel show` prints it: pooled N (its row, columns with sample values, the
// decoded force matrices, IMU and SLAM, videos, and the keypoints mirror's files when the
// mirror is found: `keypoints`, or "" = beside the task), or a foreign dataset's episode
// (LeRobot episode_index, bundle manifest position).
Result<std::string> ShowJob(const std::string& path, int64_t episode_index, const std::string& keypoints = "",
                            const ObjectStoreOptions& store = {});
// The task's stats.json blocks as `reel stats` prints them: {blocks: {name: {count,
// needs_rebuild, dim, mean, std, min, max}}}.
Result<std::string> StatsJob(const std::string& path, const ObjectStoreOptions& store = {});
// The keypoints mirror (contract §10) `ls` and `show` list beside a task: `explicit_dir`, or
// the one found beside the task ("" when none is; a given folder that is not there is an error).
Result<std::string> KeypointsMirrorOf(const Task& task, const std::string& explicit_dir);
// The first `n` values of `column` for people (a list: its first values and its length;
// at most 100 characters each): the samples of `show`.
std::vector<std::string> SampleValues(const arrow::ChunkedArray& column, int64_t n);
// One episode of a foreign dataset as `reel ls` lists it: {episode_index, length, tasks,
// data_path, from_row, to_row, dataset_from_index, dataset_to_index, videos: {key: {path,
// from_timestamp, to_timestamp}}, bundle_id?, task_description?}
std::string ToJson(const ForeignEpisode& episode);

// ---- export -----------------------------------------------------------------------------

// The pooled task at `task` exported to `out` (both paths or URIs). A local output is
// renamed into place, a URI output uploaded with its marker file last (docs/storage.md).
// options.output_fs and options.publish are set here. The report's out_dir is the URI
// for an object-store output.
Result<ExportReport> ExportJob(const std::string& task, const std::string& out, ExportOptions options,
                               const ObjectStoreOptions& store = {});
std::string ToJson(const ExportReport& report);

// ---- import -----------------------------------------------------------------------------

struct ImportJobReport {
  std::string task;                 // the task as given
  ImportReport report;
  std::optional<PushReport> pushed;  // a task on an object store: the staged change published
};

// A LeRobot or bundle dataset at `source` (path or URI) into the pooled task at `task`: a
// directory (created if missing) or a URI (a staged change published with the push
// protocol). options.source_fs is set here.
Result<ImportJobReport> ImportJob(const std::string& source, const std::string& task, ImportOptions options,
                                  const ObjectStoreOptions& store = {});
std::string ToJson(const ImportJobReport& report);

// ---- pack -------------------------------------------------------------------------------

// Episode N of the task at `task` (path or URI) packed into a local zip at `zip_path`
// ("" = DefaultSliceName(TaskDirName(task), N) in the working directory).
// options.task_fs and options.output_fs are set here.
Result<PackResult> PackJob(const std::string& task, int64_t episode_index, const std::string& zip_path,
                           PackOptions options, const ObjectStoreOptions& store = {});
std::string ToJson(const PackResult& report);

// ---- push -------------------------------------------------------------------------------

// The local task at `task` mirrored to `destination` (a URI or a directory).
Result<PushReport> PushJob(const std::string& task, const std::string& destination, const PushOptions& options,
                           const ObjectStoreOptions& store = {});
std::string ToJson(const PushReport& report);

// ---- check ------------------------------------------------------------------------------

// CheckFolder of `path` (a task or a folder of tasks; path or URI). Tasks and skipped
// folders are named as given (the URI, not the store's path), and so are store paths in
// the findings' messages. options.fs is set here.
Result<FolderReport> CheckJob(const std::string& path, CheckOptions options, const ObjectStoreOptions& store = {});
// {tasks: [{path, format, episodes, errors, warnings, findings: [{rule, severity, path,
// message}]}], errors, warnings, skipped: [{path, reason}]}
std::string ToJson(const FolderReport& report);

// ---- maintenance ------------------------------------------------------------------------

// RebuildStats of the task at `task` (path or URI).
Result<RebuildStatsReport> RebuildStatsJob(const std::string& task, const RebuildStatsOptions& options,
                                           const ObjectStoreOptions& store = {});
std::string ToJson(const RebuildStatsReport& report);
std::string ToJson(const MigrateReport& report);
std::string ToJson(const SplitEpisodesReport& report);
std::string ToJson(const RepairScaleReport& report);
std::string ToJson(const BackfillHandPoseReport& report);
std::string ToJson(const AddColumnsReport& report);

// ---- bundles ----------------------------------------------------------------------------

// WriteOverlay into the bundle dataset at `dataset` (path or URI); options.fs is set here.
Result<OverlayWriteReport> WriteOverlayJob(const std::string& dataset, const std::string& name,
                                           const std::string& episode, OverlayWriteOptions options,
                                           const ObjectStoreOptions& store = {});
std::string ToJson(const OverlayWriteReport& report);

// ---- recording --------------------------------------------------------------------------

struct DeletedEpisode {
  int64_t episode_index = 0;
  std::vector<std::string> files;  // relative to the task root: its data and videos
};
struct DeleteReport {
  bool dry_run = false;
  std::vector<DeletedEpisode> episodes;  // in the order given
};

// Episodes' data and videos deleted from the local task at `task` (DeleteEpisode; their
// rows, stats and numbers stay). Every episode is looked at before the first is deleted, so
// a typo in a list deletes nothing: NotFound for an episode the task lacks or that has no
// files left (deleted before). `dry_run`: the files listed, nothing deleted.
Result<DeleteReport> DeleteJob(const std::string& task, const std::vector<int64_t>& episodes, bool dry_run);
// {dry_run, episodes: [{episode_index, files}]}
std::string ToJson(const DeleteReport& report);

// {episodes: [{episode_index, length, committed}], profile?: {record_cpu_s, record_wall_s,
// recorded_s}}
std::string ToJson(const SimulateReport& report);

// ---- upload -----------------------------------------------------------------------------

// {episodes: [{episode_index, ok: true, session_id, already_present, attempts, resumable,
// deleted, bytes} | {episode_index, ok: false, code, error, rule}], all_landed}
std::string ToJson(const std::vector<EpisodeUploadResult>& results);
// One line of `reel upload --events` and one call of reel.upload's `events`: {time, event,
// episode_index, state, sent?, total? (when total > 0), attempt? (> 0), detail?, rule? (non-empty)}
std::string ToJson(const UploadEvent& event);
// {jobs: [{server, project, episode_index, state, digest, bytes, zip_bytes, sent, attempts,
// last_error, rule, session_id, age_s, next_try_in_s}], counters: {name: value}}
std::string ToJson(const OutboxStatus& status);

}  // namespace reel
