// reel._core.migrate: the maintenance tools (include/reel/maintenance.h) for Python.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "binding.h"
#include "released.h"
#include "reel/jobs.h"

namespace reel::py {

using namespace nanobind::literals;

void BindMaintenance(nb::module_& m) {
  m.def(
      "migrate",
      [](const std::string& task, const std::string& to, bool no_backup, bool dry_run, const std::string& keypoints,
         bool restore) {
        MigrateOptions o;
        o.to = to;
        o.no_backup = no_backup;
        o.dry_run = dry_run;
        o.keypoints = keypoints;
        o.restore = restore;
        return ReportDict(ToJson(Released([&] { return MigrateTask(task, o); })));
      },
      "task"_a, "to"_a = "", "no_backup"_a = false, "dry_run"_a = false, "keypoints"_a = "", "restore"_a = false,
      "Converts a v1.0 task into pooled_episodes_v1, or undoes that (restore) (reel migrate); the report "
      "`reel migrate --json` prints.");
}

}  // namespace reel::py
