// reel push: mirror a local task to another storage (reel/push.h, docs/storage.md).
#include <iostream>
#include <memory>

#include "cli.h"
#include "reel/jobs.h"

namespace reel::cli {
namespace {

struct PushArgs {
  std::string task, destination;
  std::string episodes;  // "1,3,5-9"; "" = all
  bool json = false;
  std::string progress = "auto";
  PushOptions options;
  ObjectStoreOptions store;  // the destination's (--endpoint-url, --region, --anonymous)
};

int RunPush(PushArgs& a) {
  if (!a.episodes.empty()) {
    auto episodes = ParseListFlag("--episodes", a.episodes, true);
    if (!episodes.ok()) return UsageFail(episodes.status().message());
    a.options.episodes = *episodes;
  }
  a.options.progress = MakeProgress(a.progress);
  auto pushed = PushJob(a.task, a.destination, a.options, a.store);
  if (!pushed.ok()) return Fail(pushed.status());
  if (a.json) {
    PrintJson(ToJson(*pushed));
    return kExitOk;
  }
  const char* verb = pushed->dry_run ? "would send" : "sent";
  std::cout << a.destination << ": " << verb << " " << pushed->sent.size() << " of " << pushed->episodes
            << " episode(s) (" << pushed->files_sent << " file(s), " << pushed->bytes_sent << " bytes), "
            << pushed->present << " already there";
  if (!pushed->resumed.empty()) std::cout << ", " << pushed->resumed.size() << " interrupted push(es) completed";
  if (!pushed->task_files_sent.empty()) std::cout << "; task files " << verb << ":";
  for (const std::string& f : pushed->task_files_sent) std::cout << " " << f;
  std::cout << "\n";
  return kExitOk;
}

}  // namespace

void AddPushCommand(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<PushArgs>();
  auto* push = app.add_subcommand("push", "Mirror a task to another storage: only what is missing, resumable, "
                                          "never a torn episode (docs/storage.md)");
  push->add_option("task", a->task, "local task directory")->required();
  push->add_option("destination", a->destination, "where the copy lives: a URI (s3://bucket/prefix/task) or a directory")
      ->required();
  push->add_option("--episodes", a->episodes,
                   "push only these episodes, e.g. 1,3,5-9 (default: all); the task files go either way");
  push->add_flag("--dry-run", a->options.dry_run, "say what would be sent; send nothing");
  push->add_flag("--verify", a->options.verify, "compare files already there byte for byte, not by size");
  push->add_option("--lock-lease", a->options.lock_lease_s,
                   "seconds a push lock stays valid without renewal (a dead writer's lock is taken over after it)")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
  AddStoreOptions(push, a->store);
  AddJsonFlag(push, a->json);
  AddProgressOption(push, a->progress);
  push->callback([&exit_code, a] { exit_code = RunPush(*a); });
}

}  // namespace reel::cli
