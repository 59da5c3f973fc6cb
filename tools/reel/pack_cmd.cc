// reel pack: the upload zip slice of one episode (contract §9) over reel/pack.h.
#include <iostream>
#include <memory>

#include "cli.h"
#include "reel/jobs.h"

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

int RunPack(PackArgs& a) {
  a.options.replace_existing = a.force;
  a.options.progress = MakeProgress(a.progress);
  auto packed = PackJob(a.task, a.episode, a.output, a.options, a.store);
  if (!packed.ok()) return Fail(packed.status());
  if (a.json) {
    PrintJson(ToJson(*packed));
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
