// reel info | ls | show | frames on foreign datasets (see foreign_cmds.h).
#include "foreign_cmds.h"

#include <iomanip>
#include <iostream>

#include "cli.h"
#include "reel/dataset.h"
#include "reel/jobs.h"
#include "reel/video.h"

namespace reel::cli {
namespace {

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
  return FindForeignEpisode(o.episodes, n, o.dataset->root());
}

}  // namespace

bool IsForeignRoot(const OpenedLocation& loc) {
  auto format = DetectFormat(loc.fs.get(), loc.root);
  return format.ok() && IsForeignFormat(format->format);
}

void PrintForeignInfo(const Json& j) {
  std::cout << "dataset     " << j["path"].get<std::string>() << "\n"
            << "format      " << j["format"].get<std::string>() << " " << j["version"].get<std::string>();
  if (const std::string robot = j["robot_type"]; !robot.empty()) std::cout << ", robot " << robot;
  if (const std::string name = j["name"]; !name.empty()) std::cout << ", name " << name;
  std::cout << "\nfps         " << j["fps"].get<double>() << "\n"
            << "episodes    " << j["episodes"].dump() << "\n"
            << "frames      " << j["frames"].dump() << ", " << std::fixed << std::setprecision(1)
            << j["duration_sec"].get<double>() << " s\n"
            << "tasks       " << j["tasks"].size() << "\n";
  std::cout << "video keys\n";
  for (const Json& k : j["video_keys"]) std::cout << "  " << k.get<std::string>() << "\n";
  std::cout << "features\n";
  for (const auto& [name, f] : j["features"].items()) {
    std::cout << "  " << std::left << std::setw(44) << name << " " << f["dtype"].get<std::string>() << "[";
    for (size_t i = 0; i < f["shape"].size(); ++i) std::cout << (i ? "," : "") << f["shape"][i].dump();
    std::cout << "]\n";
  }
}

int RunForeignLs(const OpenedLocation& loc, bool json) {
  auto o = OpenAll(loc);
  if (!o.ok()) return Fail(o.status());
  Json list = Json::array();
  for (const ForeignEpisode& e : o->episodes) list.push_back(Json::parse(ToJson(e)));
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
