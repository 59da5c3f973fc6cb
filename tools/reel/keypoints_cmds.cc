// The keypoints mirror (contract §10; include/reel/keypoints.h) in `reel ls` / `reel show`,
// and the two commands that change an episode's data from outside files
// (include/reel/maintenance.h): backfill-hand-pose (the mirror's hand_pose_3d into the
// hand-pose placeholder columns) and add-columns (post-hoc columns, multi-device §4.7).
#include <iostream>

#include "cli.h"
#include "reel/keypoints.h"
#include "reel/layout.h"
#include "reel/jobs.h"
#include "reel/task.h"

namespace reel::cli {

Json KeypointsLsJson(const Task& task, const std::string& mirror, int64_t episode_index) {
  Json parts = Json::array();
  auto files = ListKeypointsFiles(task.fs(), mirror, episode_index);
  if (!files.ok()) return {{"error", files.status().message()}};
  for (const KeypointsFile& f : *files)
    if (f.exists) parts.push_back(KeypointsPartName(f.part));
  return parts;
}

void PrintKeypointsShow(const Json& j) {
  std::cout << "  keypoints " << j["dir"].get<std::string>() << "\n";
  for (const Json& f : j["files"]) {
    std::cout << "    " << f["part"].get<std::string>() << ": ";
    if (!f["exists"].get<bool>()) {
      std::cout << "absent\n";
    } else if (f.contains("rows")) {
      std::cout << f["rows"].get<int64_t>() << " rows, " << f["matched_rows"].get<int64_t>() << " aligned to data, "
                << f["unmatched_frames"].get<int64_t>() << " without a data row\n";
    } else {
      std::cout << "present\n";
    }
  }
  if (j.contains("error")) std::cout << "    error: " << j["error"].get<std::string>() << "\n";
}

namespace {

// ---- backfill-hand-pose ------------------------------------------------------------------

struct BackfillArgs {
  std::string task, keypoints, progress = "auto";
  std::vector<std::string> episodes;  // lists "7" or "1,3,5-9", like every episode list
  bool dry_run = false, json = false;
};

int RunBackfill(const BackfillArgs& a) {
  BackfillHandPoseOptions options;
  for (const std::string& text : a.episodes) {
    auto list = ParseListFlag("episodes", text, true);
    if (!list.ok()) return UsageFail(list.status().message());
    options.episodes.insert(options.episodes.end(), list->begin(), list->end());
  }
  options.keypoints_dir = a.keypoints;
  options.dry_run = a.dry_run;
  options.progress = MakeProgress(a.progress);
  auto r = BackfillHandPose(a.task, options);
  if (!r.ok()) return Fail(r.status());
  if (a.json) {
    PrintJson(ToJson(*r));
    return kExitOk;
  }
  for (const HandPoseBackfill& e : r->episodes) {
    std::cout << "episode " << e.episode_index << ": ";
    if (!e.skipped.empty()) {
      std::cout << "skipped (" << e.skipped << ")\n";
      continue;
    }
    std::cout << e.left_rows << " left / " << e.right_rows << " right of " << e.data_rows << " rows; "
              << e.unmatched_rows << " keypoint rows without a data row, " << e.ambiguous_rows
              << " rows with two hands of one label, " << e.unlabelled_hands << " unlabelled hands -> "
              << (e.written ? "written" : e.changed ? "would change" : "unchanged") << "\n";
  }
  std::cout << (r->dry_run ? "dry run: nothing written" : std::to_string(r->episodes_written) + " episodes written")
            << " (mirror " << r->mirror << ")\n";
  return kExitOk;
}

// ---- add-columns -------------------------------------------------------------------------

struct AddColumnsArgs {
  std::string task, from, features;
  int64_t episode = 0;
  bool replace = false, drop_unmatched = false, dry_run = false, json = false;
};

int RunAddColumns(const AddColumnsArgs& a) {
  AddColumnsOptions options;
  options.from = a.from;
  options.replace = a.replace;
  options.drop_unmatched = a.drop_unmatched;
  options.feature_json = a.features;
  options.dry_run = a.dry_run;
  auto r = AddColumns(a.task, a.episode, options);
  if (!r.ok()) return Fail(r.status());
  if (a.json) {
    PrintJson(ToJson(*r));
    return kExitOk;
  }
  for (const AddedColumn& c : r->columns)
    std::cout << (c.replaced ? "replace " : "add ") << c.name << " " << c.type << "  feature " << c.feature_json
              << (c.counted ? "  (stats block)" : "") << "\n";
  std::cout << "episode " << r->episode_index << ": " << r->filled_rows << " of " << r->data_rows
            << " rows from " << r->source_rows << " source rows, " << r->unmatched_rows
            << " source rows without a data row; "
            << (r->dry_run ? "dry run: nothing written" : r->written ? "written" : "unchanged") << "\n";
  return kExitOk;
}

}  // namespace

void AddKeypointsCommands(CLI::App& app, int& exit_code) {
  auto b = std::make_shared<BackfillArgs>();
  auto* backfill = app.add_subcommand(
      "backfill-hand-pose",
      "Write the keypoints mirror's hand_pose_3d landmarks into observation.left/right_hand_pose (contract §10)");
  backfill->add_option("task", b->task, "task directory")->required();
  backfill->add_option("episodes", b->episodes, "episode numbers, e.g. 7 or 1,3,5-9 (default: every episode; those without a hand_pose_3d file are skipped)");
  backfill->add_option("--keypoints", b->keypoints, "the task's keypoints mirror folder (default: keypoints_output/<task> "
                                                    "beside the task or up to three levels above)");
  backfill->add_flag("--dry-run", b->dry_run, "report what would change, write nothing");
  AddJsonFlag(backfill, b->json);
  AddProgressOption(backfill, b->progress);
  backfill->callback([&exit_code, b] { exit_code = RunBackfill(*b); });

  auto c = std::make_shared<AddColumnsArgs>();
  auto* add = app.add_subcommand(
      "add-columns", "Append columns from a parquet file to episode N's data, aligned by frame_index (multi-device §4.7)");
  add->add_option("task", c->task, "task directory")->required();
  add->add_option("episode", c->episode, "episode number N")->required();
  add->add_option("--from", c->from, "parquet file with a frame_index column and the new columns")->required();
  add->add_option("--features", c->features,
                  "JSON {column: {frame, frame_axes, time, owner, source_slot, clock, encoding}} declared with the "
                  "columns (multi-device §6.6)");
  add->add_flag("--replace", c->replace, "rewrite columns the episode already has (never a stats-counted column)");
  add->add_flag("--drop-unmatched", c->drop_unmatched,
                "ignore source rows whose frame_index has no data row (default: refuse)");
  add->add_flag("--dry-run", c->dry_run, "validate and report, write nothing");
  AddJsonFlag(add, c->json);
  add->callback([&exit_code, c] { exit_code = RunAddColumns(*c); });
}

}  // namespace reel::cli
