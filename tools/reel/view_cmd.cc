// reel view / reel report (docs/view.md): the viewer is built on the rerun SDK and the report
// on plotly, both Python libraries, so these two commands parse their options here (one
// grammar for every command) and run `python -m reel._view_cli '<options as JSON>'`, which
// prints the same output and exit code a native command would.
//
// The interpreter: $REEL_PYTHON (the wheel's console script sets it to its own Python), else
// the Python this CLI was built against (REEL_PYTHON_EXECUTABLE), else python3 on PATH.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "cli.h"

namespace reel::cli {
namespace {

struct ViewArgs {
  std::string command;  // "view" or "report"
  std::string task, episodes, save, output, bind = "127.0.0.1";
  bool serve = false, spawn = false, json = false;
  int web_port = 0, grpc_port = 0;
  int64_t max_frames = -1;  // -1: the command's default
  std::string progress = "auto";
};

std::string PythonExecutable() {
  if (const char* env = std::getenv("REEL_PYTHON"); env && *env) return env;
#ifdef REEL_PYTHON_EXECUTABLE
  if (::access(REEL_PYTHON_EXECUTABLE, X_OK) == 0) return REEL_PYTHON_EXECUTABLE;
#endif
  return "python3";
}

Json OptionsJson(const ViewArgs& a, const std::vector<int64_t>& episodes) {
  Json j = {{"command", a.command}, {"task", a.task}, {"json", a.json}, {"progress", a.progress}};
  if (!a.episodes.empty()) j["episodes"] = episodes;
  if (a.max_frames >= 0) j["max_frames"] = a.max_frames;
  if (a.command == "view") {
    j["save"] = a.save;
    j["serve"] = a.serve;
    // With no sink asked for, the native viewer is opened (rerun's own `rerun` program).
    j["spawn"] = a.spawn || (a.save.empty() && !a.serve);
    j["bind"] = a.bind;
    j["web_port"] = a.web_port;
    j["grpc_port"] = a.grpc_port;
  } else {
    j["output"] = a.output;
  }
  return j;
}

int RunView(const ViewArgs& a) {
  std::vector<int64_t> episodes;
  if (!a.episodes.empty()) {
    auto parsed = ParseListFlag("EPISODES", a.episodes, /*unique=*/true);
    if (!parsed.ok()) return UsageFail(parsed.status().message());
    episodes = *parsed;
  }
  const std::string python = PythonExecutable();
  const std::string options = OptionsJson(a, episodes).dump();
  std::vector<const char*> argv = {python.c_str(), "-m", "reel._view_cli", options.c_str(), nullptr};
  std::cout.flush();
  ::execvp(python.c_str(), const_cast<char* const*>(argv.data()));
  return UsageFail("reel " + a.command + " runs " + python + " -m reel._view_cli, which could not start (" +
                   std::strerror(errno) + "); set REEL_PYTHON to a Python with reel and rerun-sdk installed");
}

void AddCommonOptions(CLI::App* cmd, ViewArgs& a) {
  cmd->add_option("task", a.task, "task directory or URI (or a LeRobot v2/v3 dataset, a bundle)")->required();
  cmd->add_option("episodes", a.episodes, "episodes, e.g. 1,3,5-9 (default: all)");
  cmd->add_option("--max-frames", a.max_frames,
                  "cap on decoded images per entity, by keeping every k-th row (0 = no cap)")
      ->check(CLI::NonNegativeNumber);
  AddJsonFlag(cmd, a.json);
  AddProgressOption(cmd, a.progress);
}

}  // namespace

void AddViewCommands(CLI::App& app, int& exit_code) {
  auto v = std::make_shared<ViewArgs>();
  v->command = "view";
  auto* view = app.add_subcommand("view",
                                  "Open episodes in the rerun viewer, or save them as .rrd recordings "
                                  "(one per episode), or serve them to a browser");
  AddCommonOptions(view, *v);
  view->add_option("--save", v->save, "write OUT.rrd (one episode) or a directory of <task>_episode_N.rrd");
  view->add_flag("--serve", v->serve,
                 "serve the recordings and rerun's web viewer (rerun --serve-web) until interrupted");
  view->add_option("--bind", v->bind, "with --serve: the address to listen on")->capture_default_str();
  view->add_flag("--spawn", v->spawn, "open the native viewer (the default when neither --save nor --serve is given)");
  view->add_option("--web-port", v->web_port, "with --serve: the web viewer's port (0 = 9090)");
  view->add_option("--grpc-port", v->grpc_port, "with --serve: the gRPC data port (0 = 9876)");
  view->callback([&exit_code, v] { exit_code = RunView(*v); });

  auto r = std::make_shared<ViewArgs>();
  r->command = "report";
  auto* report = app.add_subcommand("report",
                                    "Write one self-contained HTML page about a task: episodes table, "
                                    "thumbnails per slot, signal plots, check findings");
  AddCommonOptions(report, *r);
  report->add_option("-o,--output", r->output, "the HTML file to write")->required();
  report->callback([&exit_code, r] { exit_code = RunView(*r); });
}

}  // namespace reel::cli
