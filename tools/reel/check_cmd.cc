// reel check: the conformance checker.
#include <iostream>
#include <map>

#include "cli.h"
#include "reel/check.h"

namespace reel::cli {
namespace {

Json ReportJson(const TaskReport& r) {
  Json findings = Json::array();
  for (const Finding& f : r.findings)
    findings.push_back({{"rule", f.rule}, {"severity", SeverityName(f.severity)},
                        {"path", f.path}, {"message", NameInputs(f.message)}});
  return {{"path", r.path},
          {"format", r.format},
          {"episodes", r.episodes},
          {"errors", r.Count(Severity::kError)},
          {"warnings", r.Count(Severity::kWarning)},
          {"findings", std::move(findings)}};
}

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
    auto loc = OpenInput(args->path, args->store);
    if (!loc.ok()) {
      exit_code = Fail(loc.status());
      return;
    }
    args->options.fs = loc->fs.get();
    auto folder = CheckFolder(loc->root, args->options);
    if (!folder.ok()) {
      exit_code = Fail(folder.status());
      return;
    }
    // Reports name tasks as the user wrote the location (the URI, not the store's path).
    for (TaskReport& r : folder->tasks)
      if (r.path.compare(0, loc->root.size(), loc->root) == 0) r.path = loc->display + r.path.substr(loc->root.size());
    for (SkippedFolder& f : folder->skipped)
      if (f.path.compare(0, loc->root.size(), loc->root) == 0) f.path = loc->display + f.path.substr(loc->root.size());
    const std::vector<TaskReport>* reports = &folder->tasks;
    int64_t errors = 0, warnings = 0;
    for (const TaskReport& r : *reports) {
      errors += r.Count(Severity::kError);
      warnings += r.Count(Severity::kWarning);
    }
    exit_code = errors > 0 ? kExitFindings : kExitOk;
    if (args->json) {
      Json tasks = Json::array();
      for (const TaskReport& r : *reports) tasks.push_back(ReportJson(r));
      Json skipped = Json::array();
      for (const SkippedFolder& f : folder->skipped) skipped.push_back({{"path", f.path}, {"reason", f.reason}});
      PrintJson({{"tasks", std::move(tasks)}, {"errors", errors}, {"warnings", warnings}, {"skipped", skipped}});
      return;
    }
    for (const TaskReport& r : *reports) {
      for (const Finding& f : r.findings)
        std::cout << SeverityName(f.severity) << " " << f.rule << " "
                  << (f.path.empty() ? r.path : r.path + "/" + f.path) << ": " << NameInputs(f.message) << "\n";
      const int64_t e = r.Count(Severity::kError), w = r.Count(Severity::kWarning);
      std::cout << r.path << ": " << (e ? "FAILED" : "OK") << " (" << r.format << ", " << r.episodes
                << " episodes, " << e << " errors, " << w << " warnings)\n";
    }
    PrintSkipped(folder->skipped);
  });
}

}  // namespace reel::cli
