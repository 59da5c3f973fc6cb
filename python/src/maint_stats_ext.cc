// reel._core.rebuild_stats / repair_scale: the maintenance tools of include/reel/maintenance.h
// (`reel stats --rebuild/--verify`, `reel repair-scale`), reports as dicts shaped like the
// CLI's --json output.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>


#include "binding.h"
#include "released.h"
#include "reel/jobs.h"

namespace reel {
namespace py {

using namespace nb::literals;

void BindMaintStats(nb::module_& m) {
  m.def(
      "rebuild_stats",
      [](const std::string& task, bool dry_run, bool verify, const ObjectStoreOptions& storage) {
        RebuildStatsOptions o;
        o.dry_run = dry_run || verify;
        return ReportDict(ToJson(Released([&] { return RebuildStatsJob(task, o, storage); })));
      },
      "task"_a, "dry_run"_a = false, "verify"_a = false, "storage"_a = ObjectStoreOptions(),
      "meta/stats.json recomputed from data/ of the task (a path or URI; `reel stats --rebuild`; verify: "
      "compare only, `--verify`); the report `--json` prints.");
  m.def(
      "repair_scale",
      [](const std::string& task, bool apply, bool all, const std::vector<int64_t>& episodes) {
        RepairScaleOptions o;
        o.apply = apply;
        o.all = all;
        o.episodes = episodes;
        return ReportDict(ToJson(Released([&] { return RepairScale(task, o); })));
      },
      "task"_a, "apply"_a = false, "all"_a = false, "episodes"_a = std::vector<int64_t>{},
      "Infers the scale of int16 force-matrix columns without a spec (`reel repair-scale`); "
      "writes force_matrix_specs only with apply. The report `--json` prints.");
}

}  // namespace py
}  // namespace reel
