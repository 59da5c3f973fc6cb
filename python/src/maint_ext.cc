// reel._core.migrate: the maintenance tools (include/reel/maintenance.h) for Python.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "binding.h"
#include "reel/maintenance.h"

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
        Result<MigrateReport> result = NotRunYet();
        {
          nb::gil_scoped_release release;
          result = MigrateTask(task, o);
        }
        MigrateReport r = Unwrap(std::move(result));
        nb::list sessions;
        for (const MigratedSession& s : r.sessions) {
          nb::dict d;
          d["session"] = s.session;
          d["episode_index"] = s.episode_index;
          d["frames"] = s.frames;
          nb::list videos;
          for (const std::string& v : s.videos) videos.append(v);
          d["videos"] = videos;
          sessions.append(d);
        }
        nb::list warnings;
        for (const std::string& w : r.warnings) warnings.append(w);
        nb::dict d;
        d["task"] = r.task;
        d["already_pooled"] = r.already_pooled;
        d["dry_run"] = r.dry_run;
        d["backup"] = r.backup;
        d["sessions"] = sessions;
        d["frames"] = r.frames;
        d["restore"] = r.restore;
        d["nothing_to_restore"] = r.nothing_to_restore;
        d["keypoints"] = r.keypoints;
        d["keypoints_moved"] = r.keypoints_moved;
        d["warnings"] = warnings;
        return d;
      },
      "task"_a, "to"_a = "", "no_backup"_a = false, "dry_run"_a = false, "keypoints"_a = "", "restore"_a = false,
      "Converts a v1.0 task into pooled_episodes_v1, or undoes that (restore) (reel migrate); the report "
      "`reel migrate --json` prints.");
}

}  // namespace reel::py
