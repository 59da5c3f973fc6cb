// reel._core.rebuild_stats / repair_scale: the maintenance tools of include/reel/maintenance.h
// (`reel stats --rebuild/--verify`, `reel repair-scale`), reports as dicts shaped like the
// CLI's --json output.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>


#include "binding.h"
#include "released.h"
#include "reel/maintenance.h"

namespace reel {
namespace py {

using namespace nb::literals;

namespace {

nb::dict StatsReportDict(const RebuildStatsReport& r, bool dry_run) {
  nb::list diffs;
  for (const StatsBlockDiff& d : r.diffs) {
    nb::dict e;
    e["block"] = d.block;
    e["what"] = d.what;
    e["detail"] = d.detail;
    diffs.append(e);
  }
  nb::dict d;
  d["episodes"] = r.episodes;
  d["dry_run"] = dry_run;
  d["written"] = r.written;
  d["agrees"] = r.diffs.empty();
  d["diffs"] = diffs;
  d["stats_json"] = r.rebuilt_json;
  return d;
}

nb::dict DecisionDict(const ScaleDecision& s) {
  nb::dict d;
  d["episode_index"] = s.episode_index;
  d["column"] = s.column;
  d["force_column"] = s.force_column;
  d["current_source"] = s.current_source;
  d["current_scale"] = s.current_scale;
  d["contact_frames"] = s.contact_frames;
  d["ratio"] = s.ratio;
  d["ratio_p10"] = s.ratio_low;
  d["ratio_p90"] = s.ratio_high;
  d["scale"] = s.scale ? nb::cast(*s.scale) : nb::none();
  d["decided"] = s.scale.has_value();
  d["reason"] = s.reason;
  d["written"] = s.written;
  return d;
}

}  // namespace

void BindMaintStats(nb::module_& m) {
  m.def(
      "rebuild_stats",
      [](const std::string& task, bool dry_run, bool verify) {
        RebuildStatsOptions o;
        o.dry_run = dry_run || verify;
        RebuildStatsReport r =
            Released([&] { return RebuildStats(task, o); });
        return StatsReportDict(r, o.dry_run);
      },
      "task"_a, "dry_run"_a = false, "verify"_a = false,
      "meta/stats.json recomputed from data/ (`reel stats --rebuild`; verify: compare only, "
      "`--verify`); the report `--json` prints, the new file's text as stats_json.");
  m.def(
      "repair_scale",
      [](const std::string& task, bool apply, bool all, const std::vector<int64_t>& episodes) {
        RepairScaleOptions o;
        o.apply = apply;
        o.all = all;
        o.episodes = episodes;
        RepairScaleReport r = Released([&] { return RepairScale(task, o); });
        nb::list decisions;
        int64_t refused = 0;
        for (const ScaleDecision& s : r.decisions) {
          decisions.append(DecisionDict(s));
          refused += s.scale ? 0 : 1;
        }
        nb::dict d;
        d["applied"] = r.applied;
        d["episodes_examined"] = r.episodes_examined;
        d["rows_written"] = r.rows_written;
        d["refused"] = refused;
        d["decisions"] = decisions;
        return d;
      },
      "task"_a, "apply"_a = false, "all"_a = false, "episodes"_a = std::vector<int64_t>{},
      "Infers the scale of int16 force-matrix columns without a spec (`reel repair-scale`); "
      "writes force_matrix_specs only with apply. The report `--json` prints.");
}

}  // namespace py
}  // namespace reel
