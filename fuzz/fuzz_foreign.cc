// A foreign dataset (LeRobot v2.x / v3.x, bundle) made of fuzzed files, read the way
// `reel foreign` / reel.Dataset / `reel import` read it: ForeignDataset::Open,
// ReadEpisodes, ReadFrames, FindVideoTargets, a bundle's overlays (ListOverlays,
// ReadOverlay), Validate (which checks every overlay file). In-memory FileSystem; input
// format: fuzz/make_seeds.py "tree".
#include <arrow/api.h>

#include <cstdio>

#include "harness_util.h"
#include "reel/dataset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reel;
  static fuzz::MemFs fs;
  fs.Clear();
  const std::string root = "/mem/ds";
  fuzz::UnpackTree(data, size, root, fs);

  ForeignOpenOptions options;
  options.fs = &fs;
  auto ds = ForeignDataset::Open(root, options);
  if (fuzz::Debug()) fprintf(stderr, "foreign: open %s\n", ds.status().ToString().c_str());
  if (!ds.ok()) return 0;
  auto episodes = (*ds)->ReadEpisodes();
  if (episodes.ok()) {
    for (size_t i = 0; i < episodes->size() && i < 4; ++i) {
      const ForeignEpisode& e = (*episodes)[i];
      (void)(*ds)->ReadFrames(e);
      for (const std::string& key : (*ds)->info().video_keys) (void)(*ds)->FindVideoTargets(e, key);
    }
    auto overlays = (*ds)->ListOverlays();
    if (overlays.ok() && !episodes->empty())
      for (size_t i = 0; i < overlays->size() && i < 4; ++i) (void)(*ds)->ReadOverlay(episodes->front(), (*overlays)[i].name);
  }
  TaskReport report = (*ds)->Validate();
  if (fuzz::Debug()) {
    fprintf(stderr, "foreign: episodes %s\n", episodes.status().ToString().c_str());
    for (const auto& f : report.findings) fprintf(stderr, "  %s %s: %s\n", f.rule.c_str(), f.path.c_str(), f.message.c_str());
  }
  return 0;
}
