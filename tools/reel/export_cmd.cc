// reel export: a pooled task to LeRobot v3.0 / v2.1 or bundles, over reel/interop.h.
#include <iostream>
#include <memory>
#include <sstream>

#include "cli.h"
#include "reel/jobs.h"

namespace reel::cli {
namespace {

struct ExportArgs {
  std::string to = "lerobot-v3";
  std::string task;
  std::string output, positional_output;
  std::string episodes;  // "1,3,5-9"; "" = all
  std::string state;   // comma-separated, "" = default rule, "-" = none
  std::string action;  // comma-separated
  std::vector<std::string> drop, last, list_drop;
  bool no_depth = false;
  bool no_align = false;
  std::string force_matrix;  // "" = the StreamFeatures default
  std::string glove_order = "canonical";
  bool json = false;
  std::string progress = "auto";
  ExportOptions options;
  ObjectStoreOptions store;
};

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

int RunExport(ExportArgs& a) {
  if (!a.positional_output.empty() && !a.output.empty() && a.positional_output != a.output)
    return UsageFail("two outputs given: \"" + a.positional_output + "\" and -o \"" + a.output + "\"");
  if (a.output.empty()) a.output = a.positional_output;
  if (a.output.empty()) return UsageFail("export needs an output directory or URI: -o/--output DIR");
  if (!a.episodes.empty()) {
    auto episodes = ParseListFlag("--episodes", a.episodes, true);
    if (!episodes.ok()) return UsageFail(episodes.status().message());
    a.options.episodes = *episodes;
  }
  auto format = ParseExportFormat(a.to);
  if (!format.ok()) return Fail(format.status());
  ExportOptions& o = a.options;
  o.format = *format;
  if (a.state == "-") {
    o.mapping.state_columns = std::vector<std::string>{};
  } else if (!a.state.empty()) {
    o.mapping.state_columns = SplitCommas(a.state);
  }
  o.mapping.action_columns = SplitCommas(a.action);
  o.mapping.drop_columns = a.drop;
  for (const auto& c : a.last) o.mapping.list_rules[c] = ListRule::kLast;
  for (const auto& c : a.list_drop) o.mapping.list_rules[c] = ListRule::kDrop;
  o.mapping.include_depth = !a.no_depth;
  o.mapping.streams.align = !a.no_align;
  if (!a.force_matrix.empty()) {
    auto mode = ParseForceMatrixFeature(a.force_matrix);
    if (!mode.ok()) return UsageFail("--force-matrix: " + mode.status().message());
    o.mapping.streams.force_matrix = *mode;
  }
  if (a.glove_order != "canonical" && a.glove_order != "raw")
    return UsageFail("--glove-order: canonical or raw, got \"" + a.glove_order + "\"");
  o.mapping.streams.canonical_gloves = a.glove_order == "canonical";
  if (o.mapping.streams.imu_window < 0 || o.mapping.streams.imu_window > 4096)
    return UsageFail("--imu-window: 0 to 4096 samples");
  if (!(o.mapping.streams.tolerance_s >= 0)) return UsageFail("--align-tolerance: seconds, 0 or more");
  o.progress = MakeProgress(a.progress);
  auto report = ExportJob(a.task, a.output, o, a.store);
  if (!report.ok() && report.status().code() == StatusCode::kAlreadyExists && !o.replace_existing)
    return UsageFail(report.status().message() + " (--force replaces it)");
  if (!report.ok()) return Fail(report.status());
  if (a.json) {
    PrintJson(ToJson(*report));
    return kExitOk;
  }
  for (const auto& w : report->warnings) std::cerr << "reel: warning: " << w << "\n";
  std::cout << report->out_dir << ": " << ExportFormatName(o.format) << ", " << report->episodes
            << " episodes, " << report->frames << " frames, " << report->features.size()
            << " features; videos: " << report->videos_copied << " stream-copied, "
            << report->videos_reencoded << " re-encoded\n";
  return kExitOk;
}

}  // namespace

void AddExportCommand(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<ExportArgs>();
  auto* cmd = app.add_subcommand("export", "Export a task to LeRobot v3.0 / v2.1, bundles or the flat per-sample table");
  cmd->add_option("--to", a->to, "lerobot-v3, lerobot-v2.1, bundle or flat")->capture_default_str();
  cmd->add_option("task", a->task, "pooled task directory or URI (s3://bucket/path)")->required();
  AddStoreOptions(cmd, a->store);
  cmd->add_option("out", a->positional_output, "output directory or URI (the same as -o)");
  cmd->add_option("-o,--output", a->output,
                  "output directory, or URI (s3://bucket/path: staged locally, then uploaded with "
                  "meta/info.json, manifest.json or flat.json last); must not exist, unless --force");
  cmd->add_flag("--force", a->options.replace_existing,
                "replace an existing output (a dataset or an empty directory) once the export succeeded; "
                "on a URI not atomically: the old marker file, then the old files are deleted, then "
                "the new export is uploaded, marker last");
  cmd->add_option("--state", a->state,
                  "columns joined into observation.state, comma-separated ('-' = none; default: "
                  "fixed-size float32 observation.*_state and *_force columns)");
  cmd->add_option("--action", a->action,
                  "columns joined into action (default: the pooled placeholder `action`)");
  cmd->add_option("--drop", a->drop, "leave a column out (repeatable)");
  cmd->add_option("--last", a->last, "list column sampled per frame: newest sample, held (default)");
  cmd->add_option("--drop-list", a->list_drop, "list column left out");
  cmd->add_flag("--no-depth", a->no_depth, "leave depth slots out");
  cmd->add_flag("--no-align", a->no_align,
                "LeRobot: the row mapping of earlier releases (no time-aligned force matrices, IMU window or "
                "trajectory pose; the left glove in firmware order)");
  cmd->add_option("--force-matrix", a->force_matrix,
                  "LeRobot: each force-matrix column as full (float32 [250,250,3] mN), fz ([250,250]) or none; "
                  "paired by its _ns, with <column>_valid (default: fz)");
  cmd->add_option("--imu-window", a->options.mapping.streams.imu_window,
                  "LeRobot: observation.imu as the K newest IMU samples at or before each frame, [K,6], with "
                  "observation.imu_mask [K]; 0 = the newest sample, held")
      ->capture_default_str();
  cmd->add_option("--align-tolerance", a->options.mapping.streams.tolerance_s,
                  "seconds a paired sample may be from its frame (0 = half a frame period; flat: one frame "
                  "period, the reach of an interpolation)")
      ->capture_default_str();
  cmd->add_option("--glove-order", a->glove_order,
                  "LeRobot: the left glove's frame in canonical or raw (firmware) order")
      ->capture_default_str();
  cmd->add_option("--episodes", a->episodes, "pooled episode numbers to export, e.g. 1,3,5-9 (default: all)");
  cmd->add_option("--robot-type", a->options.robot_type, "info.json robot_type")->capture_default_str();
  cmd->add_option("--data-file-mb", a->options.data_files_size_in_mb, "v3 data file rollover size")
      ->capture_default_str();
  cmd->add_option("--video-file-mb", a->options.video_files_size_in_mb, "v3 video file rollover size")
      ->capture_default_str();
  AddJsonFlag(cmd, a->json);
  AddProgressOption(cmd, a->progress);
  cmd->callback([&exit_code, a] {
    RemoveScratchOnInterrupt();
    exit_code = RunExport(*a);
  });
}

}  // namespace reel::cli
