// reel pack: the upload zip slice of one episode (contract §9) over reel/pack.h.
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli.h"
#include "reel/pack.h"

namespace reel::cli {
namespace {

struct PackArgs {
  std::string task;
  int64_t episode = 0;
  std::string output;  // empty = ./<task name>_ep{(N-1)%1000:06d}.zip
  bool json = false, force = false;
  std::string progress = "auto";
  PackOptions options;
  ObjectStoreOptions store;
};

// The task directory's own name, also for "path/to/task/" and "."; the last part of a URI.
std::string TaskName(const OpenedLocation& loc) {
  if (loc.object_store) return BaseName(loc.root);
  std::filesystem::path p = std::filesystem::absolute(loc.root).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

int RunPack(PackArgs& a) {
  // The task is read through its own file system (a URI's object store); the zip and the
  // scratch files are written locally.
  auto loc = OpenInput(a.task, a.store);
  if (!loc.ok()) return Fail(loc.status());
  const std::string out = a.output.empty() ? DefaultSliceName(TaskName(*loc), a.episode) : a.output;
  a.options.task_fs = loc->fs.get();
  a.options.output_fs = DefaultFileSystem();
  a.options.replace_existing = a.force;
  a.options.progress = MakeProgress(a.progress);
  auto packed = PackEpisode(loc->root, a.episode, out, a.options);
  if (!packed.ok()) return Fail(packed.status());
  if (a.json) {
    Json entries = Json::array();
    for (const PackedEntry& e : packed->entries)
      entries.push_back({{"arcname", e.arcname}, {"size", e.size}, {"recompressed", e.recompressed}});
    PrintJson({{"zip_path", packed->zip_path},
               {"episode_index", packed->episode_index},
               {"upload_episode_index", packed->upload_episode_index},
               {"zip_bytes", packed->zip_bytes},
               {"entries", entries}});
    return kExitOk;
  }
  for (const PackedEntry& e : packed->entries)
    std::cout << e.arcname << "  " << e.size << " bytes" << (e.recompressed ? "  (re-encoded HEVC)" : "")
              << "\n";
  std::cout << packed->zip_path << ": episode " << packed->episode_index << " (upload episode_index "
            << packed->upload_episode_index << "), " << packed->entries.size() << " entries, "
            << packed->zip_bytes << " bytes\n";
  return kExitOk;
}

}  // namespace

void AddPackCommand(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<PackArgs>();
  auto* pack = app.add_subcommand("pack", "Write the upload zip slice of one episode (contract §9)");
  pack->add_option("task", a->task, "task directory or URI (s3://bucket/path); the zip is written locally")
      ->required();
  AddStoreOptions(pack, a->store);
  pack->add_option("episode", a->episode, "global episode number N")->required();
  pack->add_option("-o,--output", a->output, "zip to write (default ./<task>_ep{(N-1)%1000:06d}.zip)");
  pack->add_flag("--precompress", a->options.precompress,
                 "re-encode RGB .mp4 that is not HEVC to HEVC (hvc1) first; depth is never touched");
  pack->add_option("--crf", a->options.precompress_crf, "CRF of --precompress (0..51)")
      ->check(CLI::Range(0, 51))
      ->capture_default_str();
  pack->add_option("--preset", a->options.precompress_preset, "x265 preset of --precompress")
      ->capture_default_str();
  pack->add_flag("--force", a->force, "replace an existing zip (never a directory or a link)");
  AddJsonFlag(pack, a->json);
  AddProgressOption(pack, a->progress);
  pack->callback([&exit_code, a] {
    RemoveScratchOnInterrupt();
    exit_code = RunPack(*a);
  });
}

}  // namespace reel::cli
