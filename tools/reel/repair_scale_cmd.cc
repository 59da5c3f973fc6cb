// reel repair-scale TASK: the scale of int16 force-matrix columns without a spec in their
// episode row, inferred by the contract's criterion (§7.2.1; include/reel/maintenance.h).
// A dry run by default; --apply writes force_matrix_specs of the decided rows only.
#include <iomanip>
#include <iostream>
#include <sstream>

#include "cli.h"
#include "reel/jobs.h"

namespace reel::cli {
namespace {

struct RepairScaleArgs {
  std::string task;
  bool apply = false, all = false, json = false;
  std::string episodes;
  std::string progress = "auto";
};

void PrintDecision(const ScaleDecision& d) {
  std::ostringstream ratio;
  ratio << std::setprecision(4) << d.ratio << " (p10 " << d.ratio_low << ", p90 " << d.ratio_high << ")";
  std::cout << "episode " << d.episode_index << " " << d.column << ": now " << d.current_scale << " ("
            << d.current_source << "); " << d.contact_frames << " contact frames, ratio " << ratio.str()
            << " -> " << (d.scale ? "x" + std::to_string(static_cast<int64_t>(*d.scale)) : std::string("REFUSED"))
            << (d.written ? " [written]" : "") << "\n    " << d.reason << "\n";
}

int RunRepairScale(const RepairScaleArgs& a) {
  RepairScaleOptions options;
  options.apply = a.apply;
  options.all = a.all;
  options.progress = MakeProgress(a.progress);
  if (!a.episodes.empty()) {
    auto list = ParseListFlag("--episodes", a.episodes, true);
    if (!list.ok()) return UsageFail(list.status().message());
    options.episodes = *list;
  }
  auto r = RepairScale(a.task, options);
  if (!r.ok()) return Fail(r.status());
  if (a.json) {
    PrintJson(ToJson(*r));
    return kExitOk;
  }
  int64_t refused = 0;
  for (const ScaleDecision& d : r->decisions) refused += d.scale ? 0 : 1;
  for (const ScaleDecision& d : r->decisions) PrintDecision(d);
  std::cout << r->episodes_examined << " episodes examined, " << r->decisions.size() << " columns without a spec, "
            << refused << " refused; "
            << (r->applied ? std::to_string(r->rows_written) + " episodes rows written"
                           : std::string("dry run: nothing written (--apply writes)"))
            << "\n";
  return kExitOk;
}

}  // namespace

void AddRepairScaleCommand(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<RepairScaleArgs>();
  auto* cmd = app.add_subcommand(
      "repair-scale",
      "Infer the scale of int16 force-matrix episodes without a spec (contract §7.2.1); dry run unless --apply");
  cmd->add_option("task", a->task, "task directory")->required();
  cmd->add_flag("--apply", a->apply, "write the decided scales into the episodes rows' force_matrix_specs");
  cmd->add_flag("--all", a->all, "also examine columns whose episodes row already declares a spec");
  cmd->add_option("--episodes", a->episodes, "only these episode numbers, e.g. 1,3,5-9");
  AddJsonFlag(cmd, a->json);
  AddProgressOption(cmd, a->progress);
  cmd->callback([&exit_code, a] { exit_code = RunRepairScale(*a); });
}

}  // namespace reel::cli
