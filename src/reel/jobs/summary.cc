// InfoJob, StatsJob and the keypoints part of `show` (include/reel/jobs.h): read-only
// summaries of a pooled task or a foreign dataset, as the documents the CLI prints.
#include <set>
#include <span>

#include "jobs/summary_internal.h"
#include "reel/jobs.h"
#include "reel/keypoints.h"
#include "reel/layout.h"

namespace reel {
namespace internal {

Result<Opened> OpenSummarized(Locations& at, const std::string& path) {
  Opened o;
  REEL_ASSIGN_OR_RETURN(o.location, at.Open(path));
  auto format = DetectFormat(o.location.fs.get(), o.location.root);
  if (format.ok() && IsForeignFormat(format->format)) {
    ForeignOpenOptions options;
    options.fs = o.location.fs.get();
    REEL_ASSIGN_OR_RETURN(o.dataset, ForeignDataset::Open(o.location.root, options));
    return o;
  }
  TaskOptions options;
  options.fs = o.location.fs.get();
  REEL_ASSIGN_OR_RETURN(o.task, Task::Open(o.location.root, options));
  return o;
}

Json KeypointsShowJson(const Task& task, const std::string& mirror, int64_t episode_index) {
  KeypointsOptions options;
  options.keypoints_dir = mirror;
  Json j = {{"mirror", mirror}, {"dir", KeypointsEpisodeDir(mirror, episode_index)}};
  auto read = ReadEpisodeKeypoints(task, episode_index, options);
  Json files = Json::array();
  if (!read.ok()) {
    // One bad file: every file listed, the error shown (show never fails on the mirror).
    auto listed = ListKeypointsFiles(task.fs(), mirror, episode_index);
    if (listed.ok())
      for (const KeypointsFile& f : *listed)
        files.push_back({{"part", KeypointsPartName(f.part)}, {"path", f.path}, {"exists", f.exists}});
    j["files"] = files;
    j["error"] = read.status().message();
    return j;
  }
  j["data_rows"] = read->data_rows;
  for (const KeypointsFile& f : read->files) {
    Json e = {{"part", KeypointsPartName(f.part)}, {"path", f.path}, {"exists", f.exists}};
    if (const AlignedKeypoints* a = read->Find(f.part)) {
      e["rows"] = a->rows;
      e["matched_rows"] = a->matched;
      e["unmatched_frames"] = a->unmatched_frames.size();
    }
    files.push_back(e);
  }
  j["files"] = files;
  return j;
}

}  // namespace internal

namespace {

using internal::Json;

Json FeatureJson(const FeatureSpec& f) {
  Json j = {{"dtype", f.dtype}, {"shape", f.shape}};
  if (f.encoding) j["encoding"] = *f.encoding;
  if (f.scale) j["scale"] = *f.scale;
  return j;
}

Result<Json> TaskInfo(const Task& task, const std::string& path) {
  const InfoJson& info = task.info();
  REEL_ASSIGN_OR_RETURN(auto episodes, task.ListEpisodes());
  int64_t frames = 0;
  double duration = 0;
  // A batch of rows at a time: 100,000 episodes' rows held at once would be about 250 MB.
  (void)task.VisitEpisodeRows(episodes, {"length", "duration_sec"},
                              [&](size_t, std::span<const Result<EpisodeRow>> rows) {
                                for (const auto& row : rows) {
                                  if (!row.ok()) continue;  // `reel check` reports missing or broken rows
                                  frames += row->length;
                                  duration += row->duration_sec;
                                }
                                return Status::OK();
                              });
  std::set<std::string> slots;
  for (const EpisodeEntry& e : episodes)
    for (const auto& [slot, file] : e.videos) slots.insert(slot);
  Json j = {{"path", path},
            {"format", DatasetFormatName(DatasetFormat::kPooledEpisodesV1)},
            {"version", info.format},
            {"task_name", info.task_name},
            {"codebase_version", info.codebase_version},
            {"app_version", info.app_version},
            {"fps", info.fps},
            {"chunks_size", info.chunks_size},
            {"total_episodes", info.total_episodes},
            {"episodes", episodes.size()},
            {"frames", frames},
            {"duration_sec", duration}};
  // devices, cameras and video_extensions exactly as the model writes them back.
  REEL_ASSIGN_OR_RETURN(std::string serialized, SerializeInfoJson(info));
  REEL_ASSIGN_OR_RETURN(Json doc, internal::ParseJson(serialized, "info.json"));
  for (const char* key : {"devices", "cameras", "video_extensions"}) j[key] = doc[key];
  j["video_slots"] = std::vector<std::string>(slots.begin(), slots.end());
  Json owners = Json::object();  // the device <-> column binding (multi-device §6.4)
  for (const auto& [column, keys] : ColumnWriters(info.devices)) owners[column] = keys.front();
  j["column_owners"] = std::move(owners);
  Json features = Json::object();
  for (const auto& [name, f] : info.features) features[name] = FeatureJson(f);
  j["features"] = std::move(features);
  j["sensors"] = info.sensors;
  return j;
}

Result<Json> DatasetInfo(const ForeignDataset& dataset, const std::string& path) {
  const ForeignInfo& info = dataset.info();
  REEL_ASSIGN_OR_RETURN(auto episodes, dataset.ReadEpisodes());
  int64_t frames = 0;
  for (const ForeignEpisode& e : episodes) frames += e.length;
  Json features = Json::object();
  for (const auto& [name, f] : info.features) features[name] = {{"dtype", f.dtype}, {"shape", f.shape}};
  return Json{{"path", path},
              {"format", DatasetFormatName(info.format)},
              {"version", info.version},
              {"fps", info.fps},
              {"robot_type", info.robot_type},
              {"name", info.name},
              {"total_episodes", info.total_episodes},
              {"total_frames", info.total_frames},
              {"chunks_size", info.chunks_size},
              {"episodes", episodes.size()},
              {"frames", frames},
              {"duration_sec", static_cast<double>(frames) / info.fps},
              {"video_keys", info.video_keys},
              {"tasks", info.tasks},
              {"features", std::move(features)}};
}

Result<Json> Info(internal::Locations& at, const std::string& path) {
  REEL_ASSIGN_OR_RETURN(internal::Opened o, internal::OpenSummarized(at, path));
  if (o.dataset) return DatasetInfo(*o.dataset, o.location.display);
  return TaskInfo(*o.task, o.location.display);
}

Result<Json> Stats(internal::Locations& at, const std::string& path) {
  REEL_ASSIGN_OR_RETURN(OpenedLocation loc, at.Open(path));
  TaskOptions options;
  options.fs = loc.fs.get();
  REEL_ASSIGN_OR_RETURN(auto task, Task::Open(loc.root, options));
  REEL_ASSIGN_OR_RETURN(StatsJson stats, task->ReadStats());
  Json blocks = Json::object();
  for (const auto& [name, b] : stats.blocks)
    blocks[name] = {{"count", b.count ? Json(*b.count) : Json()},
                    {"needs_rebuild", b.needs_rebuild()},
                    {"dim", b.mean.size()},
                    {"mean", b.mean},
                    {"std", b.std},
                    {"min", b.min},
                    {"max", b.max}};
  return Json{{"blocks", std::move(blocks)}};
}

}  // namespace

Result<std::string> KeypointsMirrorOf(const Task& task, const std::string& explicit_dir) {
  auto mirror = FindKeypointsMirror(task.fs(), task.root(), explicit_dir);
  if (mirror.ok() || !explicit_dir.empty()) return mirror;
  return std::string();
}

Result<std::string> InfoJob(const std::string& path, const ObjectStoreOptions& store) {
  internal::Locations at(store);
  REEL_ASSIGN_OR_RETURN(Json j, at.Name(Info(at, path)));
  return internal::Dump(j, -1);
}

Result<std::string> StatsJob(const std::string& path, const ObjectStoreOptions& store) {
  internal::Locations at(store);
  REEL_ASSIGN_OR_RETURN(Json j, at.Name(Stats(at, path)));
  return internal::Dump(j, -1);
}

}  // namespace reel
