// reel._core: the keypoints mirror (include/reel/keypoints.h) as Task.keypoints_tables, and
// the tools that change an episode's data from outside files (include/reel/maintenance.h):
// backfill_hand_pose and add_columns, reports shaped like the CLI's --json output.
#include <arrow/api.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "binding.h"
#include "released.h"
#include "reel/keypoints.h"
#include "reel/jobs.h"
#include "reel/task.h"

namespace reel::py {

using namespace nb::literals;

void BindKeypoints(nb::class_<Task>& task) {
  task.def(
      "keypoints_tables",
      [](const Task& t, int64_t n, const std::string& keypoints) {
        KeypointsOptions options;
        options.keypoints_dir = keypoints;
        EpisodeKeypoints k = Released([&] { return ReadEpisodeKeypoints(t, n, options); });
        nb::dict parts, unmatched;
        for (KeypointsPart part : kKeypointsParts) {
          const AlignedKeypoints* a = k.Find(part);
          parts[KeypointsPartName(part)] =
              a ? StreamCapsule(std::make_shared<arrow::TableBatchReader>(a->table)) : nb::none();
          if (a) unmatched[KeypointsPartName(part)] = a->unmatched_frames;
        }
        nb::dict d;
        d["mirror"] = k.mirror;
        d["dir"] = k.dir;
        d["data_rows"] = k.data_rows;
        d["parts"] = parts;
        d["unmatched_frames"] = unmatched;
        return d;
      },
      "episode_index"_a, "keypoints"_a = "",
      "Episode N's keypoints mirror files (contract §10), validated and aligned to its data: "
      "{mirror, dir, data_rows, parts: {part: arrow_array_stream capsule or None}, unmatched_frames}.");
}

void BindKeypointsMaint(nb::module_& m) {
  m.def(
      "backfill_hand_pose",
      [](const std::string& task, const std::vector<int64_t>& episodes, const std::string& keypoints, bool dry_run) {
        BackfillHandPoseOptions o;
        o.episodes = episodes;
        o.keypoints_dir = keypoints;
        o.dry_run = dry_run;
        return ReportDict(ToJson(Released([&] { return BackfillHandPose(task, o); })));
      },
      "task"_a, "episodes"_a = std::vector<int64_t>{}, "keypoints"_a = "", "dry_run"_a = false,
      "hand_pose_3d landmarks into the hand-pose placeholder columns (`reel backfill-hand-pose`).");
  m.def(
      "add_columns",
      [](const std::string& task, int64_t n, const std::string& from, bool replace, bool drop_unmatched,
         const std::string& features, bool dry_run) {
        AddColumnsOptions o;
        o.from = from;
        o.replace = replace;
        o.drop_unmatched = drop_unmatched;
        o.feature_json = features;
        o.dry_run = dry_run;
        return ReportDict(ToJson(Released([&] { return AddColumns(task, n, o); })));
      },
      "task"_a, "episode_index"_a, "source"_a, "replace"_a = false, "drop_unmatched"_a = false, "features"_a = "",
      "dry_run"_a = false, "Columns of a parquet file appended to episode N's data (`reel add-columns`).");
}

}  // namespace reel::py
