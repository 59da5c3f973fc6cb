// reel check: the conformance checker.
#include <iostream>

#include "cli.h"
#include "reel/check.h"

namespace reel::cli {
namespace {

Json ReportJson(const TaskReport& r) {
  Json findings = Json::array();
  for (const Finding& f : r.findings)
    findings.push_back({{"rule", f.rule}, {"severity", SeverityName(f.severity)},
                        {"path", f.path}, {"message", f.message}});
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

}  // namespace

void AddCheckCommand(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "check", "Check a task (or every task in a folder) against the contract's MUST rules");
  struct Args {
    std::string path;
    bool json = false, list_rules = false, markdown = false;
    int threads = 0;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("path", args->path, "task directory, or a folder of task directories");
  cmd->add_flag("--json", args->json, "machine-readable output");
  cmd->add_flag("--list-rules", args->list_rules, "list every rule id and exit");
  cmd->add_flag("--markdown", args->markdown, "with --list-rules: a Markdown table");
  cmd->add_option("--threads", args->threads, "I/O threads (0 = all cores)");
  cmd->callback([args, &exit_code] {
    if (args->list_rules) return PrintRules(args->markdown);
    if (args->path.empty()) throw CLI::RequiredError("path");
    auto reports = CheckPath(args->path, {nullptr, args->threads});
    if (!reports.ok()) {
      exit_code = Fail(reports.status());
      return;
    }
    int64_t errors = 0, warnings = 0;
    for (const TaskReport& r : *reports) {
      errors += r.Count(Severity::kError);
      warnings += r.Count(Severity::kWarning);
    }
    exit_code = errors > 0 ? kExitFindings : kExitOk;
    if (args->json) {
      Json tasks = Json::array();
      for (const TaskReport& r : *reports) tasks.push_back(ReportJson(r));
      PrintJson({{"tasks", std::move(tasks)}, {"errors", errors}, {"warnings", warnings}});
      return;
    }
    for (const TaskReport& r : *reports) {
      for (const Finding& f : r.findings)
        std::cout << SeverityName(f.severity) << " " << f.rule << " "
                  << (f.path.empty() ? r.path : r.path + "/" + f.path) << ": " << f.message << "\n";
      const int64_t e = r.Count(Severity::kError), w = r.Count(Severity::kWarning);
      std::cout << r.path << ": " << (e ? "FAILED" : "OK") << " (" << r.format << ", " << r.episodes
                << " episodes, " << e << " errors, " << w << " warnings)\n";
    }
  });
}

}  // namespace reel::cli
