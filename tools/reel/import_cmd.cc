// reel import: a LeRobot (v2.0/v2.1/v3.x) or bundle dataset into a pooled task, over reel/interop.h.
#include <iostream>
#include <memory>
#include <optional>

#include "cli.h"
#include "reel/jobs.h"

namespace reel::cli {
namespace {

struct ImportArgs {
  std::string source;
  std::string task;
  bool json = false;
  std::string progress = "auto";
  ImportOptions options;
  ObjectStoreOptions store;
};

int RunImport(ImportArgs& a) {
  a.options.progress = MakeProgress(a.progress);
  auto job = ImportJob(a.source, a.task, a.options, a.store);
  if (!job.ok()) return Fail(job.status());
  if (a.json) {
    PrintJson(ToJson(*job));
    return kExitOk;
  }
  const ImportReport* report = &job->report;
  const std::optional<PushReport>& pushed = job->pushed;
  for (const auto& w : report->warnings) std::cerr << "reel: warning: " << w << "\n";
  std::cout << a.task << ": imported " << report->episodes << " episodes, " << report->frames
            << " frames" << (report->round_trip ? " (a reel export: pooled columns restored)" : "")
            << "; videos: " << report->videos_copied << " stream-copied, " << report->videos_reencoded
            << " re-encoded\n";
  if (pushed)
    std::cout << a.task << ": published " << pushed->files_sent << " files, " << pushed->bytes_sent << " bytes\n";
  for (const SkippedEpisode& k : report->skipped)
    std::cout << "source episode " << k.source_episode << ": already present as episode " << k.episode_index
              << " (identical rows and videos), skipped\n";
  return kExitOk;
}

}  // namespace

void AddImportCommand(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<ImportArgs>();
  auto* cmd = app.add_subcommand("import", "Import a LeRobot or bundle dataset into a pooled task");
  cmd->add_option("source", a->source, "LeRobot v2.0/v2.1/v3.x or bundle dataset: a directory or URI")->required();
  cmd->add_option("task", a->task,
                  "pooled task directory or URI (s3://bucket/path; published with the push protocol of "
                  "docs/storage.md), created if missing")
      ->required();
  AddStoreOptions(cmd, a->store);
  cmd->add_option("--task-name", a->options.task_name, "task_name of a new task (default: the directory's name)");
  cmd->add_flag("--renumber", a->options.renumber,
                "import an episode that is already in the task with other content under a new number "
                "(default: refused; identical ones are skipped)");
  AddJsonFlag(cmd, a->json);
  AddProgressOption(cmd, a->progress);
  cmd->callback([&exit_code, a] {
    RemoveScratchOnInterrupt();
    exit_code = RunImport(*a);
  });
}

}  // namespace reel::cli
