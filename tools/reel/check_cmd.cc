// reel check: the conformance checker.
#include <iostream>
#include <map>

#include "cli.h"
#include "reel/jobs.h"

namespace reel::cli {
namespace {

void PrintRules(bool markdown) {
  if (markdown) {
    std::cout << "| rule | severity | source | requires |\n| --- | --- | --- | --- |\n";
    for (const RuleInfo& r : Rules())
      std::cout << "| `" << r.id << "` | " << SeverityName(r.severity) << " | " << r.source << " | "
                << r.summary << " |\n";
    return;
  }
  for (const RuleInfo& r : Rules())
    std::cout << r.id << "\t" << SeverityName(r.severity) << "\t" << r.summary << "\n";
}

// One line for what was not looked into: a "folder of tasks" that is not a task is
// otherwise easy to take for a pass.
void PrintSkipped(const std::vector<SkippedFolder>& skipped) {
  if (skipped.empty()) return;
  std::map<std::string, std::vector<std::string>> by_reason;
  for (const SkippedFolder& f : skipped) by_reason[f.reason].push_back(f.path);
  for (const auto& [reason, paths] : by_reason) {
    std::cout << "skipped " << paths.size() << (paths.size() == 1 ? " folder" : " folders") << " (" << reason
              << (reason == "not a task" ? "; --recursive looks inside" : "") << "):";
    for (size_t i = 0; i < paths.size() && i < 20; ++i) std::cout << " " << paths[i];
    if (paths.size() > 20) std::cout << " ... (" << paths.size() - 20 << " more)";
    std::cout << "\n";
  }
}

}  // namespace

void AddCheckCommand(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "check", "Check a task (or every task in a folder) against the contract's MUST rules");
  struct Args {
    std::string path;
    bool json = false, list_rules = false, markdown = false;
    int threads = 0;
    std::string progress = "auto", episodes;
    CheckOptions options;
    ObjectStoreOptions store;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("path", args->path, "task directory or URI (s3://bucket/path), or a folder of tasks");
  AddJsonFlag(cmd, args->json);
  AddStoreOptions(cmd, args->store);
  cmd->add_flag("--recursive,-r", args->options.recursive,
                "look for tasks in nested folders too (symbolic links to folders are not followed)");
  cmd->add_option("--max-depth", args->options.max_depth, "with --recursive: folder levels searched")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  AddProgressOption(cmd, args->progress);
  cmd->add_flag("--list-rules", args->list_rules, "list every rule id and exit");
  cmd->add_flag("--markdown", args->markdown, "with --list-rules: a Markdown table");
  cmd->add_option("--threads", args->threads, "I/O threads (0 = all cores)");
  cmd->add_flag("--deep", args->options.deep,
                "read force-matrix columns whole through Arrow (default: each cell's length from the "
                "column's levels, the only thing the rules look at; same findings, faster)");
  cmd->add_option("--episodes", args->episodes,
                  "check only these episodes of a task, e.g. 7 or 1,3,5-9, and its task-level files (the "
                  "walks over the whole task are skipped: for a new episode of a large task)");
  cmd->callback([args, &exit_code] {
    if (args->list_rules) return PrintRules(args->markdown);
    if (args->path.empty()) throw CLI::RequiredError("path");
    if (!args->episodes.empty()) {
      auto list = ParseListFlag("--episodes", args->episodes, true);
      if (!list.ok()) {
        exit_code = UsageFail(list.status().message());
        return;
      }
      args->options.episodes = std::move(*list);
    }
    args->options.io_threads = args->threads;
    args->options.progress = MakeProgress(args->progress);
    auto folder = CheckJob(args->path, args->options, args->store);
    if (!folder.ok()) {
      exit_code = Fail(folder.status());
      return;
    }
    int64_t errors = 0;
    for (const TaskReport& r : folder->tasks) errors += r.Count(Severity::kError);
    exit_code = errors > 0 ? kExitFindings : kExitOk;
    if (args->json) {
      PrintJson(ToJson(*folder));
      return;
    }
    for (const TaskReport& r : folder->tasks) {
      for (const Finding& f : r.findings)
        std::cout << SeverityName(f.severity) << " " << f.rule << " "
                  << (f.path.empty() ? r.path : r.path + "/" + f.path) << ": " << f.message << "\n";
      const int64_t e = r.Count(Severity::kError), w = r.Count(Severity::kWarning);
      std::cout << r.path << ": " << (e ? "FAILED" : "OK") << " (" << r.format << ", " << r.episodes
                << " episodes, " << e << " errors, " << w << " warnings)\n";
    }
    PrintSkipped(folder->skipped);
  });
}

}  // namespace reel::cli
