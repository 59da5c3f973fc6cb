// reel frames: decode frames of one episode's video into PNG files.

#include <iostream>
#include <memory>
#include <vector>

#include "cli.h"
#include "foreign_cmds.h"
#include "reel/task.h"
#include "reel/video.h"

namespace reel::cli {
namespace {

struct FramesArgs {
  std::string task;
  int64_t episode = 0;
  std::string slot;
  std::string at_list;  // "0,5,10-20"
  std::vector<int64_t> at;
  std::string out_dir = ".", deprecated_out_dir;
  bool json = false;
  ObjectStoreOptions store;
};


int RunFrames(FramesArgs& a) {
  auto at = ParseListFlag("--at", a.at_list, false);
  if (!at.ok()) return UsageFail(at.status().message());
  a.at = std::move(*at);
  if (!a.deprecated_out_dir.empty()) a.out_dir = a.deprecated_out_dir;
  auto loc = OpenInput(a.task, a.store);
  if (!loc.ok()) return Fail(loc.status());
  if (IsForeignRoot(*loc)) return RunForeignFrames(*loc, a.episode, a.slot, a.at, a.out_dir, a.json);
  TaskOptions options;
  options.fs = loc->fs.get();
  auto task = Task::Open(loc->root, options);
  if (!task.ok()) return Fail(task.status());
  auto episode = (*task)->FindEpisode(a.episode);
  if (!episode.ok()) return Fail(episode.status());
  const std::string* rel = Lookup(episode->videos, a.slot);
  if (!rel) {
    std::string slots;
    for (const auto& [slot, path] : episode->videos) slots += (slots.empty() ? "" : ", ") + slot;
    return Fail(Status::NotFound("episode " + std::to_string(a.episode) + " has no video for slot \"" +
                                 a.slot + "\" (its slots: " + (slots.empty() ? "none" : slots) + ")"));
  }
  VideoReaderOptions read_options;
  read_options.fs = (*task)->fs();  // ranged reads on an object store
  auto reader = VideoReader::Open((*task)->Path(*rel), read_options);
  if (!reader.ok()) return Fail(reader.status());
  VideoReader& r = **reader;
  const VideoInfo& info = r.info();
  const size_t pixels = static_cast<size_t>(info.width) * info.height;
  std::vector<uint8_t> rgb;
  std::vector<uint16_t> mm;
  Status read;
  if (info.depth) {
    mm.resize(a.at.size() * pixels);
    read = r.ReadDepth(a.at, mm);
  } else {
    rgb.resize(a.at.size() * pixels * 3);
    read = r.ReadRgb(a.at, rgb);
  }
  if (!read.ok()) return Fail(read);

  FileSystem* fs = DefaultFileSystem();
  if (Status st = fs->CreateDirs(a.out_dir); !st.ok()) return Fail(st);
  Json written = Json::array();
  for (size_t k = 0; k < a.at.size(); ++k) {
    auto png = info.depth ? EncodePngGray16(info.width, info.height, {mm.data() + k * pixels, pixels})
                          : EncodePngRgb(info.width, info.height, {rgb.data() + k * pixels * 3, pixels * 3});
    if (!png.ok()) return Fail(png.status());
    const std::string path = JoinPath(a.out_dir, a.slot + "_episode-" + std::to_string(a.episode) +
                                                     "_frame-" + std::to_string(a.at[k]) + ".png");
    Status st = WriteFileAtomic(fs, path, *png);
    if (!st.ok()) return Fail(st);
    auto time = r.FrameTime(a.at[k]);
    written.push_back({{"index", a.at[k]}, {"time_s", time.ok() ? Json(*time) : Json()}, {"path", path}});
  }
  if (a.json) {
    PrintJson({{"episode_index", a.episode},
               {"slot", a.slot},
               {"video", *rel},
               {"codec", info.codec},
               {"pix_fmt", info.pix_fmt},
               {"width", info.width},
               {"height", info.height},
               {"frames", info.frames},
               {"depth", info.depth},
               {"written", written}});
    return kExitOk;
  }
  for (const Json& w : written)
    std::cout << w["path"].get<std::string>() << "  frame " << w["index"].get<int64_t>()
              << (info.depth ? "  (16-bit gray, mm)" : "  (RGB)") << "\n";
  return kExitOk;
}

}  // namespace

void AddFramesCommand(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<FramesArgs>();
  auto* cmd = app.add_subcommand(
      "frames", "Decode frames of one episode's video to PNG (RGB 8-bit; depth 16-bit gray, mm)");
  cmd->add_option("task", args->task, "task directory or URI (s3://bucket/path)")->required();
  AddStoreOptions(cmd, args->store);
  cmd->add_option("episode", args->episode,
                  "global episode number N (1-based); LeRobot: episode_index, bundle: manifest "
                  "position (0-based)")
      ->required();
  cmd->add_option("--slot", args->slot, "video slot (image_key), e.g. d435_rgb; LeRobot/bundle: the video key")->required();
  cmd->add_option("--at", args->at_list,
                  "frame indices (row i = frame i), e.g. 0,5,10-20 (both ends included); LeRobot: rows, "
                  "found by timestamp")
      ->required();
  cmd->add_option("-o,--output", args->out_dir, "output directory (created when missing; default .)");
  cmd->add_option("--out", args->deprecated_out_dir, "old spelling of --output")->group("");
  AddJsonFlag(cmd, args->json);
  cmd->callback([args, &exit_code] { exit_code = RunFrames(*args); });
}

}  // namespace reel::cli
