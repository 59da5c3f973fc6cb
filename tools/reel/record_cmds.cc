// reel simulate | delete: the recorder from the command line.
#include <iostream>

#include "cli.h"
#include "reel/recorder.h"
#include "reel/simulate.h"

namespace reel::cli {
namespace {

struct SimulateArgs {
  std::string task;
  int64_t episodes = 2;
  int64_t watermark = 0;
  bool abort_last = false, json = false;
  SimulateOptions sim;
};

int RunSimulate(const SimulateArgs& a) {
  TaskWriterOptions options = SimulatedRigOptions(BaseName(a.task), a.sim);
  options.progress_watermark = a.watermark;
  auto writer = TaskWriter::Open(a.task, options);
  if (!writer.ok()) return Fail(writer.status());
  Json list = Json::array();
  for (int64_t k = 0; k < a.episodes; ++k) {
    auto episode = (*writer)->BeginEpisode();
    if (!episode.ok()) return Fail(episode.status());
    Status st = SimulateEpisode(**episode, a.sim, (*episode)->episode_index());
    if (!st.ok()) return Fail(st);
    const bool abort = a.abort_last && k + 1 == a.episodes;
    Json entry = {{"episode_index", (*episode)->episode_index()}, {"length", (*episode)->rows()},
                  {"committed", !abort}};
    if (abort) {
      st = (*episode)->Abort();
      if (!st.ok()) return Fail(st);
    } else {
      auto done = (*episode)->Commit();
      if (!done.ok()) return Fail(done.status());
    }
    if (!a.json)
      std::cout << (abort ? "aborted " : "recorded ") << "episode " << entry["episode_index"] << " ("
                << entry["length"] << " rows)\n";
    list.push_back(entry);
  }
  if (a.json) PrintJson({{"episodes", list}});
  return kExitOk;
}

}  // namespace

void AddRecordCommands(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<SimulateArgs>();
  auto* sim = app.add_subcommand("simulate", "Record episodes from a simulated multi-device rig");
  sim->add_option("task", a->task, "task directory (created if missing)")->required();
  sim->add_option("--episodes", a->episodes, "episodes to record")->capture_default_str();
  sim->add_option("--seconds", a->sim.seconds, "seconds per episode")->capture_default_str();
  sim->add_option("--fps", a->sim.fps, "frame rate")->capture_default_str();
  sim->add_option("--tier", a->sim.tier, "force-matrix tier: int16, int16x10, int16x100, int16x1000, float32")
      ->capture_default_str();
  sim->add_option("--seed", a->sim.seed, "random seed")->capture_default_str();
  sim->add_option("--watermark", a->watermark, "caller's progress watermark: the next N it expects");
  sim->add_flag("--abort-last", a->abort_last, "abort the last episode instead of committing it");
  sim->add_flag("--json", a->json, "machine-readable output");
  sim->callback([&exit_code, a] { exit_code = RunSimulate(*a); });

  auto task = std::make_shared<std::string>();
  auto n = std::make_shared<int64_t>(0);
  auto* del = app.add_subcommand(
      "delete", "Delete an episode's data and videos (its episodes row, stats and number stay)");
  del->add_option("task", *task, "task directory")->required();
  del->add_option("episode", *n, "global episode number N")->required();
  del->callback([&exit_code, task, n] {
    Status st = DeleteEpisode(*task, *n);
    exit_code = st.ok() ? kExitOk : Fail(st);
  });
}

}  // namespace reel::cli
