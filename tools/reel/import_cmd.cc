// reel import: a LeRobot (v2.0/v2.1/v3.x) or bundle dataset into a pooled task, over reel/interop.h.
#include <iostream>
#include <memory>

#include "cli.h"
#include "reel/interop.h"

namespace reel::cli {
namespace {

struct ImportArgs {
  std::string source;
  std::string task;
  bool json = false;
  ImportOptions options;
};

int RunImport(const ImportArgs& a) {
  auto report = ImportDataset(a.source, a.task, a.options);
  if (!report.ok()) return Fail(report.status());
  if (a.json) {
    PrintJson({{"task", a.task},
               {"episodes", report->episodes},
               {"frames", report->frames},
               {"episode_indices", report->episode_indices},
               {"videos_copied", report->videos_copied},
               {"videos_reencoded", report->videos_reencoded},
               {"round_trip", report->round_trip},
               {"warnings", report->warnings}});
    return kExitOk;
  }
  for (const auto& w : report->warnings) std::cerr << "reel: warning: " << w << "\n";
  std::cout << a.task << ": imported " << report->episodes << " episodes, " << report->frames
            << " frames" << (report->round_trip ? " (a reel export: pooled columns restored)" : "")
            << "; videos: " << report->videos_copied << " stream-copied, " << report->videos_reencoded
            << " re-encoded\n";
  return kExitOk;
}

}  // namespace

void AddImportCommand(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<ImportArgs>();
  auto* cmd = app.add_subcommand("import", "Import a LeRobot or bundle dataset into a pooled task");
  cmd->add_option("source", a->source, "LeRobot v2.0/v2.1/v3.x or bundle dataset")->required();
  cmd->add_option("task", a->task, "pooled task directory (created if missing)")->required();
  cmd->add_option("--task-name", a->options.task_name, "task_name of a new task (default: the directory's name)");
  cmd->add_flag("--json", a->json, "machine-readable output");
  cmd->callback([&exit_code, a] { exit_code = RunImport(*a); });
}

}  // namespace reel::cli
