// Internal: what every exporter starts from (the episodes to export, their rows,
// the task's tasks and the feature plan), and small shared writers.
#pragma once

#include <memory>
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
  FileSystem* fs = nullptr;
  std::vector<EpisodeEntry> episodes;  // exported, in N order
  std::vector<EpisodeRow> rows;        // rows[i] is episodes[i]'s
  std::vector<TaskEntry> tasks;        // the task's tasks.jsonl
  FramePlan plan;
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

// Stats of a camera over LeRobot's frame sample of one episode's file
// (depth: the 12-bit code shown as 8-bit gray).
Result<FeatureStats> CameraStats(FileSystem* fs, const std::string& path, int64_t frames);

// The "reel" block of an export's metadata (info.json, manifest.json): the
// pooled N of each exported episode, how each feature was made, and the pooled
// info.json, which is what a round trip back to the pooled layout needs.
nlohmann::ordered_json ReelBlock(const ExportSource& source);

// Writes the episode's plan.sidecar columns, as they are in `pooled`, to `path`
// (nothing when the plan has none).
Status WriteSidecar(const ExportSource& source, const arrow::Table& pooled, const std::string& path);

// Writes `table` to `path` as parquet (zstd) through `fs`, fsynced.
// Writes a JSON document (indent 4, as LeRobot does) to `path`, fsynced.
Status WriteJsonFile(FileSystem* fs, const std::string& path, const nlohmann::ordered_json& json,
                     int indent = 4);

// Copies one episode's camera stream into its own .mp4 (stream copy; re-encoded
// when the stream cannot go into .mp4). Returns whether it was re-encoded.
Result<bool> CopyEpisodeVideo(FileSystem* fs, const std::string& input, const std::string& output, double fps,
                              const std::string& scratch);

// The exporters, writing into an existing empty directory.
Status WriteLeRobot(const ExportSource& source, const std::string& dir, const ExportOptions& options,
                    ExportReport* report);
Status WriteBundles(const ExportSource& source, const std::string& dir, const ExportOptions& options,
                    ExportReport* report);

}  // namespace reel::internal
