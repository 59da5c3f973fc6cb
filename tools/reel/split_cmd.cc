// reel split-episodes: legacy multi-row shards into one episodes file per episode
// (docs/maintenance.md "split-episodes").
#include <iostream>

#include "cli.h"
#include "reel/jobs.h"

namespace reel::cli {
namespace {

struct SplitArgs {
  std::string task;
  bool dry_run = false, json = false;
  std::string progress = "auto";
};

void PrintReport(const SplitEpisodesReport& r) {
  if (r.shards.empty()) {
    std::cout << "no legacy shards: every episodes row already has its own file\n";
    return;
  }
  const char* verb = r.dry_run ? "would split " : "split ";
  for (const SplitShard& s : r.shards) {
    std::cout << verb << s.shard << ": " << s.split.size() << " rows into their own files";
    if (!s.kept.empty()) std::cout << ", " << s.kept.size() << " already had one";
    std::cout << (r.dry_run ? "; the shard would be removed\n" : "; shard removed\n");
  }
}

int RunSplit(const SplitArgs& a) {
  SplitEpisodesOptions options;
  options.dry_run = a.dry_run;
  options.progress = MakeProgress(a.progress);
  auto report = SplitEpisodes(a.task, options);
  if (!report.ok()) return Fail(report.status());
  if (a.json) PrintJson(ToJson(*report));
  else PrintReport(*report);
  return kExitOk;
}

}  // namespace

void AddSplitCommand(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<SplitArgs>();
  auto* cmd = app.add_subcommand(
      "split-episodes",
      "Split legacy multi-row episodes shards (meta/episodes/chunk-CCC/file-CCC.parquet) into one "
      "file per episode, rows unchanged, the shard removed last");
  cmd->add_option("task", a->task, "task directory")->required();
  cmd->add_flag("--dry-run", a->dry_run, "print what would be split, write nothing");
  AddJsonFlag(cmd, a->json);
  AddProgressOption(cmd, a->progress);
  cmd->callback([&exit_code, a] { exit_code = RunSplit(*a); });
}

}  // namespace reel::cli
