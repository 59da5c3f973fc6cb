// reel info | ls | show | frames on foreign datasets (see foreign_cmds.h).
#include "foreign_cmds.h"

#include <iomanip>
#include <iostream>

#include "cli.h"
#include "reel/dataset.h"
#include "reel/video.h"

namespace reel::cli {
namespace {

Json VideosJson(const ForeignEpisode& e) {
  Json videos = Json::object();
  for (const VideoSpan& v : e.videos)
    videos[v.key] = {{"path", v.path}, {"from_timestamp", v.from_timestamp},
                     {"to_timestamp", v.to_timestamp}};
  return videos;
}

Json EpisodeJson(const ForeignEpisode& e) {
  Json j = {{"episode_index", e.episode_index},
            {"length", e.length},
            {"tasks", e.tasks},
            {"data_path", e.data_path},
            {"from_row", e.from_row},
            {"to_row", e.to_row},
            {"dataset_from_index", e.dataset_from_index},
            {"dataset_to_index", e.dataset_to_index},
            {"videos", VideosJson(e)}};
  if (!e.bundle_id.empty()) {
    j["bundle_id"] = e.bundle_id;
    j["task_description"] = e.task_description;
  }
  return j;
}

struct Opened {
  std::unique_ptr<ForeignDataset> dataset;
  std::vector<ForeignEpisode> episodes;
};

Result<Opened> OpenAll(const OpenedLocation& loc) {
  Opened o;
  ForeignOpenOptions options;
  options.fs = loc.fs.get();
  REEL_ASSIGN_OR_RETURN(o.dataset, ForeignDataset::Open(loc.root, options));
  REEL_ASSIGN_OR_RETURN(o.episodes, o.dataset->ReadEpisodes());
  return o;
}

Result<const ForeignEpisode*> Find(const Opened& o, int64_t n) {
  for (const ForeignEpisode& e : o.episodes)
    if (e.episode_index == n) return &e;
  return Status::NotFound(o.dataset->root() + ": no episode " + std::to_string(n) + " (episodes 0.." +
                          std::to_string(static_cast<int64_t>(o.episodes.size()) - 1) + ")");
}

}  // namespace

bool IsForeignRoot(const OpenedLocation& loc) {
  auto format = DetectFormat(loc.fs.get(), loc.root);
  return format.ok() && IsForeignFormat(format->format);
}

int RunForeignInfo(const OpenedLocation& loc, bool json) {
  const std::string& root = loc.display;
  auto o = OpenAll(loc);
  if (!o.ok()) return Fail(o.status());
  const ForeignInfo& info = o->dataset->info();
  int64_t frames = 0;
  for (const ForeignEpisode& e : o->episodes) frames += e.length;
  Json features = Json::object();
  for (const auto& [name, f] : info.features) features[name] = {{"dtype", f.dtype}, {"shape", f.shape}};
  Json j = {{"path", root},
            {"format", DatasetFormatName(info.format)},
            {"version", info.version},
            {"fps", info.fps},
            {"robot_type", info.robot_type},
            {"name", info.name},
            {"total_episodes", info.total_episodes},
            {"total_frames", info.total_frames},
            {"chunks_size", info.chunks_size},
            {"episodes", o->episodes.size()},
            {"frames", frames},
            {"duration_sec", static_cast<double>(frames) / info.fps},
            {"video_keys", info.video_keys},
            {"tasks", info.tasks},
            {"features", features}};
  if (json) {
    PrintJson(j);
    return kExitOk;
  }
  std::cout << "dataset     " << root << "\n"
            << "format      " << DatasetFormatName(info.format) << " " << info.version
            << (info.robot_type.empty() ? "" : ", robot " + info.robot_type)
            << (info.name.empty() ? "" : ", name " + info.name) << "\n"
            << "fps         " << info.fps << "\n"
            << "episodes    " << o->episodes.size() << "\n"
            << "frames      " << frames << ", " << std::fixed << std::setprecision(1)
            << static_cast<double>(frames) / info.fps << " s\n"
            << "tasks       " << info.tasks.size() << "\n";
  std::cout << "video keys\n";
  for (const std::string& k : info.video_keys) std::cout << "  " << k << "\n";
  std::cout << "features\n";
  for (const auto& [name, f] : info.features) {
    std::cout << "  " << std::left << std::setw(44) << name << " " << f.dtype << "[";
    for (size_t i = 0; i < f.shape.size(); ++i) std::cout << (i ? "," : "") << f.shape[i];
    std::cout << "]\n";
  }
  return kExitOk;
}

int RunForeignLs(const OpenedLocation& loc, bool json) {
  auto o = OpenAll(loc);
  if (!o.ok()) return Fail(o.status());
  Json list = Json::array();
  for (const ForeignEpisode& e : o->episodes) list.push_back(EpisodeJson(e));
  if (json) {
    PrintJson({{"episodes", list}});
    return kExitOk;
  }
  std::cout << std::left << std::setw(8) << "episode" << std::right << std::setw(8) << "length"
            << "  rows          data / videos\n";
  for (const ForeignEpisode& e : o->episodes) {
    std::cout << std::left << std::setw(8) << e.episode_index << std::right << std::setw(8)
              << e.length << "  " << std::left << std::setw(14)
              << ("[" + std::to_string(e.from_row) + "," + std::to_string(e.to_row) + ")")
              << e.data_path;
    for (const VideoSpan& v : e.videos) std::cout << "  " << v.key;
    if (!e.bundle_id.empty()) std::cout << "  " << e.bundle_id;
    std::cout << "\n";
  }
  return kExitOk;
}

int RunForeignShow(const OpenedLocation& loc, int64_t n, bool json) {
  auto o = OpenAll(loc);
  if (!o.ok()) return Fail(o.status());
  auto e = Find(*o, n);
  if (!e.ok()) return Fail(e.status());
  auto table = o->dataset->ReadFrames(**e);
  if (!table.ok()) return Fail(table.status());
  Json columns = Json::array();
  for (const auto& field : (*table)->schema()->fields()) {
    const auto& column = *(*table)->GetColumnByName(field->name());
    columns.push_back({{"name", field->name()},
                       {"type", field->type()->ToString()},
                       {"null_count", column.null_count()},
                       {"sample", SampleColumn(column, 3)}});
  }
  Json j = EpisodeJson(**e);
  j["format"] = DatasetFormatName(o->dataset->info().format);
  j["rows"] = (*table)->num_rows();
  j["columns"] = columns;
  if (json) {
    PrintJson(j);
    return kExitOk;
  }
  std::cout << "episode " << n << "  " << (*e)->data_path << " rows [" << (*e)->from_row << ", "
            << (*e)->to_row << ")  length " << (*e)->length << "\n";
  for (const std::string& t : (*e)->tasks) std::cout << "  task: " << t << "\n";
  for (const Json& col : columns) {
    std::string joined;
    for (const Json& v : col["sample"]) joined += (joined.empty() ? "" : " | ") + v.get<std::string>();
    if (joined.size() > 150) joined = joined.substr(0, 147) + "...";
    std::cout << "  " << std::left << std::setw(40) << col["name"].get<std::string>() << " "
              << col["type"].get<std::string>() << "\n      " << joined << "\n";
  }
  for (const VideoSpan& v : (*e)->videos)
    std::cout << "  video " << v.key << ": " << v.path << "  [" << v.from_timestamp << ", "
              << v.to_timestamp << ") s\n";
  return kExitOk;
}

int RunForeignFrames(const OpenedLocation& loc, int64_t n, const std::string& key,
                     const std::vector<int64_t>& rows, const std::string& out_dir, bool json) {
  auto o = OpenAll(loc);
  if (!o.ok()) return Fail(o.status());
  auto e = Find(*o, n);
  if (!e.ok()) return Fail(e.status());
  auto targets = o->dataset->FindVideoTargets(**e, key);
  if (!targets.ok()) return Fail(targets.status());
  VideoInfo info;
  std::vector<uint8_t> rgb;
  if (Status st = o->dataset->ReadVideoRgb(**e, key, rows, &info, &rgb); !st.ok()) return Fail(st);
  if (info.depth)
    return Fail(Status::NotSupported(targets->path + ": a depth stream; reel frames reads RGB "
                                     "video of foreign datasets"));
  FileSystem* fs = DefaultFileSystem();
  if (Status st = fs->CreateDirs(out_dir); !st.ok()) return Fail(st);
  const size_t bytes = static_cast<size_t>(info.width) * info.height * 3;
  Json written = Json::array();
  for (size_t k = 0; k < rows.size(); ++k) {
    auto png = EncodePngRgb(info.width, info.height, {rgb.data() + k * bytes, bytes});
    if (!png.ok()) return Fail(png.status());
    const std::string path = JoinPath(out_dir, key + "_episode-" + std::to_string(n) + "_frame-" +
                                                   std::to_string(rows[k]) + ".png");
    if (Status st = WriteFileAtomic(fs, path, *png); !st.ok()) return Fail(st);
    Json w = {{"index", rows[k]}, {"path", path}};
    if (targets->by_index)
      w["frame"] = rows[k];
    else
      w["time_s"] = targets->time_s[static_cast<size_t>(rows[k])];
    written.push_back(w);
  }
  if (json) {
    PrintJson({{"episode_index", n},
               {"slot", key},
               {"video", targets->path},
               {"addressed_by", targets->by_index ? "frame_index" : "timestamp"},
               {"codec", info.codec},
               {"pix_fmt", info.pix_fmt},
               {"width", info.width},
               {"height", info.height},
               {"frames", info.frames},
               {"written", written}});
    return kExitOk;
  }
  for (const Json& w : written)
    std::cout << w["path"].get<std::string>() << "  row " << w["index"].get<int64_t>() << "  (RGB)\n";
  return kExitOk;
}

}  // namespace reel::cli
