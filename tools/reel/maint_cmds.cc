// The maintenance tools (docs/maintenance.md) over reel/maintenance.h: reel migrate.
#include <iostream>
#include <memory>

#include "cli.h"
#include "reel/jobs.h"

namespace reel::cli {
namespace {

struct MigrateArgs {
  std::string task;
  bool json = false;
  std::string progress = "auto";
  MigrateOptions options;
};

int PrintRestore(const MigrateReport& r) {
  if (r.nothing_to_restore) {
    std::cout << r.task << ": a v1.0 task; nothing to restore\n";
    return kExitOk;
  }
  for (const MigratedSession& s : r.sessions)
    std::cout << "episode " << s.episode_index << " -> " << s.session << "\n";
  std::cout << r.task << ": " << (r.dry_run ? "would restore " : "restored ") << r.sessions.size()
            << " sessions from " << r.backup << "/";
  if (!r.keypoints.empty()) std::cout << "; keypoints " << r.keypoints << " (" << r.keypoints_moved << " folders moved back)";
  std::cout << "\n";
  return kExitOk;
}

int RunMigrate(MigrateArgs& a) {
  a.options.progress = MakeProgress(a.progress);
  auto report = MigrateTask(a.task, a.options);
  if (!report.ok()) return Fail(report.status());
  if (a.json) {
    PrintJson(ToJson(*report));
    return kExitOk;
  }
  for (const auto& w : report->warnings) std::cerr << "reel: warning: " << w << "\n";
  if (report->restore) return PrintRestore(*report);
  if (report->already_pooled) {
    std::cout << report->task << ": already a pooled_episodes_v1 task; nothing to migrate\n";
    return kExitOk;
  }
  const char* verb = report->dry_run ? "would migrate" : "migrated";
  for (const MigratedSession& s : report->sessions)
    std::cout << s.session << " -> episode " << s.episode_index
              << (report->dry_run ? std::string() : " (" + std::to_string(s.frames) + " frames)") << "\n";
  std::cout << report->task << ": " << verb << " " << report->sessions.size() << " sessions";
  if (!report->dry_run) std::cout << ", " << report->frames << " frames";
  if (!report->backup.empty()) std::cout << "; backup " << report->backup << "/";
  if (!report->keypoints.empty())
    std::cout << "; keypoints " << report->keypoints << " (" << report->keypoints_moved << " folders "
              << (report->dry_run ? "to re-key" : "re-keyed") << ")";
  std::cout << "\n";
  return kExitOk;
}

}  // namespace

void AddMaintenanceCommands(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<MigrateArgs>();
  auto* cmd = app.add_subcommand("migrate", "Convert a v1.0 task (one folder per session) into pooled_episodes_v1");
  cmd->add_option("task", a->task, "the v1.0 task directory")->required();
  cmd->add_option("--to", a->options.to,
                  "write the pooled task to this new (or empty) directory and leave the source as it is "
                  "(default: in place)");
  cmd->add_flag("--no-backup", a->options.no_backup,
                "in place: move the videos and remove the session folders instead of keeping them in "
                "_migrate_backup_<time>/");
  cmd->add_option("--keypoints", a->options.keypoints,
                  "the keypoints mirror to re-key from <session>/ to episode_NNNNNN/ (default: keypoints_output/<task> "
                  "beside the task, when there is one)");
  cmd->add_flag("--restore", a->options.restore,
                "undo an in-place migration from meta/.migrate_manifest.json and its _migrate_backup_* folder");
  cmd->add_flag("--dry-run", a->options.dry_run, "print the plan (sessions and their episode numbers), write nothing");
  AddJsonFlag(cmd, a->json);
  AddProgressOption(cmd, a->progress);
  cmd->callback([&exit_code, a] { exit_code = RunMigrate(*a); });
}

}  // namespace reel::cli
