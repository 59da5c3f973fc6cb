// Internal: what every exporter starts from (the episodes to export, their rows,
// the task's tasks and the feature plan), and small shared writers.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "interop/feature_map.h"
#include "interop/feature_stats.h"
#include "io/parquet_io.h"
#include "reel/interop.h"
#include "reel/task.h"
#include "reel/video.h"

namespace arrow {
class Table;
}

namespace reel::internal {

// `v` in decimal, zero-padded to `width` digits ("chunk-003", "episode_000012").
inline std::string Pad(int64_t v, int width) {
  std::string s = std::to_string(v);
  return std::string(s.size() < static_cast<size_t>(width) ? width - s.size() : 0, '0') + s;
}

struct ExportSource {
  const Task* task = nullptr;
  // The task is read through task_fs (task->fs()); the writers write through out_fs
  // (ExportOptions::fs, or the local staging directory of an upload). They differ when
  // the task is on an object store and the export is written locally.
  FileSystem* task_fs = nullptr;
  FileSystem* out_fs = nullptr;
  std::vector<EpisodeEntry> episodes;  // exported, in N order
  std::vector<EpisodeRow> rows;        // rows[i] is episodes[i]'s
  std::vector<TaskEntry> tasks;        // the task's tasks.jsonl
  FramePlan plan;
  StreamFeatures streams;              // ExportMapping::streams (align false unless LeRobot)
  // The union of the exported episodes' data schemas (first appearance wins): an episode
  // lacking one of these sparse columns reads it as "no sample" (ReadEpisodeFrames).
  std::shared_ptr<arrow::Schema> schema;
  std::vector<VideoInfo> cameras;      // cameras[k] describes plan.cameras[k] (first episode's file)
  std::vector<std::string> warnings;   // e.g. an asked episode without data, skipped
};

// Reports `done` of src.episodes exported through options.progress (when set).
void ReportExported(const ExportOptions& options, const ExportSource& src, size_t done);

// Lists, filters and plans. Errors: NotFound for an asked episode the task
// lacks; Invalid when no episode has data, or when an exported episode lacks a
// camera that others have (LeRobot needs every video feature in every episode).
Result<ExportSource> PrepareExport(const Task& task, const ExportOptions& options);

// One episode's pooled data and its exported feature table.
struct EpisodeFrames {
  std::shared_ptr<arrow::Table> pooled;
  std::shared_ptr<arrow::Table> features;
};
Result<EpisodeFrames> ReadEpisodeFrames(const ExportSource& source, size_t i,
                                        std::vector<std::string>* warnings);

// The task string of episode i's row (tasks.jsonl by task_index; the task name
// when the task has no tasks.jsonl entry for it).
std::string TaskStringOf(const ExportSource& source, size_t i);

// Stats of a camera over LeRobot's frame sample of one episode's file, read through
// `task_fs` (depth: the 12-bit code shown as 8-bit gray).
Result<FeatureStats> CameraStats(FileSystem* task_fs, const std::string& path, int64_t frames);

// The "reel" block of an export's metadata (info.json, manifest.json): the
// pooled N of each exported episode, how each feature was made, and the pooled
// info.json, which is what a round trip back to the pooled layout needs.
nlohmann::ordered_json ReelBlock(const ExportSource& source);

// Writes the episode's plan.sidecar columns, as they are in `pooled`, to `path`
// (nothing when the plan has none).
Status WriteSidecar(const ExportSource& source, const arrow::Table& pooled, const std::string& path);

// Writes a JSON document (indent 4, as LeRobot does) to `path`, fsynced.
Status WriteJsonFile(FileSystem* fs, const std::string& path, const nlohmann::ordered_json& json,
                     int indent = 4);

// The source frame of each of an episode's `rows` rows for a slot with its own fps
// (SlotFrameOfRow, reel/metadata.h); empty when the slot runs at the task's rate. LeRobot
// and bundles address a camera's frames by the dataset's fps, so such a slot is re-timed.
std::vector<int64_t> RetimedFrames(const InfoJson& info, const std::string& slot, int64_t rows);

// How CopyEpisodeVideo writes a stream.
struct VideoCopy {
  std::span<const int64_t> retime;  // RetimedFrames: re-encoded, one frame per data row
  // Bundles (seed 004 "libx264, yuv420p, CRF ≈ 20, short GOP"): only H.264 yuv420p is
  // copied, anything else (HEVC, AV1) re-encoded at CRF 20, GOP 2; depth stays 12-bit HEVC.
  bool bundle = false;
};

// Copies one episode's camera stream `input` (read through `input_fs`) into its own
// .mp4 `output` (written through `output_fs`): stream copy, or re-encoded when the
// stream cannot go into .mp4 as it is or is re-timed (`how`), the re-encoded copy
// written to and read back from `scratch` on `output_fs`. Returns whether it was
// re-encoded.
Result<bool> CopyEpisodeVideo(FileSystem* input_fs, const std::string& input, FileSystem* output_fs,
                              const std::string& output, double fps, const std::string& scratch,
                              const VideoCopy& how = {});

// ---- ExportPublish::kUpload (docs/storage.md "Export to a URI") ----------------------------

// The file whose presence makes an export of `format` a dataset for its readers
// (DetectFormat, LeRobot): "meta/info.json", or "manifest.json" for bundles.
const char* DatasetMarker(ExportFormat format);

// Removes the export at `out_dir` on `fs` for --force where there is no rename: both
// possible markers first (readers stop taking it for a dataset), then everything under
// `out_dir` (RemoveAll). Not atomic: an error leaves part of the old files, never a marker.
Status RemoveExportForReplace(FileSystem* fs, const std::string& out_dir);

// Copies every regular file under `staged` (on `staged_fs`) to the same relative path
// under `out_dir` (on `out_fs`) one by one in path order, `marker` (relative) last, so
// that a reader never sees the marker before every other file is complete. Reports
// "files uploaded" through `progress`. On error the files already copied are removed
// (best effort) and the marker was never written. Invalid when `staged` holds no
// `marker` or holds something other than files and directories.
Status UploadExport(FileSystem* staged_fs, const std::string& staged, FileSystem* out_fs, const std::string& out_dir,
                    const std::string& marker, const ProgressFn& progress);

// The exporters, writing into an existing empty directory.
Status WriteLeRobot(const ExportSource& source, const std::string& dir, const ExportOptions& options,
                    ExportReport* report);
Status WriteBundles(const ExportSource& source, const std::string& dir, const ExportOptions& options,
                    ExportReport* report);
// The flat per-sample table (flat_writer.cc): flat.parquet, then flat.json.
Status WriteFlat(const ExportSource& source, const std::string& dir, const ExportOptions& options,
                 ExportReport* report);

}  // namespace reel::internal
