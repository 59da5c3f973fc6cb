// reel simulate | delete: the recorder from the command line.
#include <cstdio>
#include <iostream>

#include "cli.h"
#include "reel/jobs.h"

namespace reel::cli {
namespace {

struct SimulateArgs {
  std::string task;
  int64_t episodes = 2;
  int64_t deprecated_episodes = -1;  // simulate --episodes N, before --count
  int64_t watermark = 0;
  int64_t episode = 0;  // --episode N: record N again (0 = a new number)
  bool replace = false;
  std::string progress = "auto";
  bool abort_last = false, json = false, profile = false, no_video = false, depth_ffv1 = false,
       depth_hevc = false, queue_drop = false;
  std::string video_size = "320x240", depth_preset = "fast";
  VideoEncoderOptions rgb;
  SimulateOptions sim;
};

int RunSimulate(SimulateArgs a) {
  if (a.deprecated_episodes >= 0) {
    std::cerr << "reel: warning: `simulate --episodes N` is now `simulate --count N` (--episodes names "
                 "which episodes elsewhere)\n";
    a.episodes = a.deprecated_episodes;
  }
  if (a.replace && a.episode == 0) return UsageFail("--replace re-records a number: give it with --episode N");
  SimulateTaskOptions o;
  o.rig = a.sim;
  o.rig.video = !a.no_video;
  if (std::sscanf(a.video_size.c_str(), "%dx%d", &o.rig.video_width, &o.rig.video_height) != 2)
    return Fail(Status::Invalid("--video-size \"" + a.video_size + "\": expected WIDTHxHEIGHT"));
  o.count = a.episodes;
  o.episode_index = a.episode;
  o.replace = a.replace;
  o.abort_last = a.abort_last;
  o.profile = a.profile;
  o.video.rgb = a.rgb;
  o.video.depth_ffv1 = a.depth_ffv1;
  o.video.keep_task_depth_codec = !a.depth_hevc;
  o.video.depth_preset = a.depth_preset;
  if (a.queue_drop) o.video.queue_full = QueueFullPolicy::kDrop;
  o.progress_watermark = a.watermark;
  o.progress = MakeProgress(a.progress);
  auto report = SimulateTask(a.task, o);
  if (!report.ok()) return Fail(report.status());
  if (a.json) {
    PrintJson(ToJson(*report));
    return kExitOk;
  }
  for (const SimulatedEpisode& e : report->episodes)
    std::cout << (e.committed ? "recorded " : "aborted ") << "episode " << e.episode_index << " (" << e.length
              << " rows)\n";
  if (const auto& p = report->profile)
    std::cout << "recorder: " << p->record_cpu_s << " CPU s, " << p->record_wall_s << " wall s for "
              << p->recorded_s << " recorded s\n";
  return kExitOk;
}

struct DeleteArgs {
  std::string task, episodes;
  bool dry_run = false, json = false;
};

int RunDelete(const DeleteArgs& a) {
  auto episodes = ParseListFlag("episodes", a.episodes, true);
  if (!episodes.ok()) return UsageFail(episodes.status().message());
  auto report = DeleteJob(a.task, *episodes, a.dry_run);
  if (!report.ok()) return Fail(report.status());
  if (a.json) {
    PrintJson(ToJson(*report));
    return kExitOk;
  }
  for (const DeletedEpisode& e : report->episodes) {
    if (!a.dry_run) {
      std::cout << "deleted episode " << e.episode_index << " (" << e.files.size() << " files)\n";
      continue;
    }
    std::cout << "would delete episode " << e.episode_index << ":\n";
    for (const std::string& f : e.files) std::cout << "  " << f << "\n";
  }
  return kExitOk;
}

}  // namespace

void AddRecordCommands(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<SimulateArgs>();
  auto* sim = app.add_subcommand("simulate", "Record episodes from a simulated multi-device rig");
  sim->add_option("task", a->task, "task directory (created if missing)")->required();
  sim->add_option("--count", a->episodes, "episodes to record")->capture_default_str();
  sim->add_option("--episodes", a->deprecated_episodes, "deprecated spelling of --count")->group("");
  sim->add_option("--seconds", a->sim.seconds, "seconds per episode")->capture_default_str();
  sim->add_option("--fps", a->sim.fps, "frame rate")->capture_default_str();
  sim->add_option("--tier", a->sim.tier, "force-matrix tier: int16, int16x10, int16x100, int16x1000, float32")
      ->capture_default_str();
  sim->add_option("--seed", a->sim.seed, "random seed")->capture_default_str();
  sim->add_option("--watermark", a->watermark, "caller's progress watermark: the next N it expects");
  auto* episode = sim->add_option("--episode", a->episode,
                                  "record this number again (one whose data was deleted; a live one needs "
                                  "--replace); records one episode")
                      ->check(CLI::PositiveNumber);
  sim->add_flag("--replace", a->replace,
                "with --episode: replace a live episode's files (old files the new recording lacks are "
                "removed in the same commit; stats.json keeps counting N once)")
      ->needs(episode);
  sim->add_flag("--no-video", a->no_video, "record no video streams");
  sim->add_option("--video-size", a->video_size, "every camera's WIDTHxHEIGHT")->capture_default_str();
  sim->add_option("--codec", a->rgb.codec, "RGB codec: h264 or hevc")->capture_default_str();
  sim->add_option("--preset", a->rgb.preset, "x264/x265 preset")->capture_default_str();
  sim->add_option("--crf", a->rgb.crf, "RGB constant rate factor")->capture_default_str();
  sim->add_option("--gop", a->rgb.gop, "keyframe interval")->capture_default_str();
  sim->add_option("--depth-preset", a->depth_preset, "x265 preset of 12-bit HEVC depth")->capture_default_str();
  auto* ffv1 = sim->add_flag("--depth-ffv1", a->depth_ffv1, "depth as FFV1 .mkv (lossless mm) instead of 12-bit HEVC");
  sim->add_flag("--depth-hevc", a->depth_hevc,
                "depth as 12-bit HEVC .mp4 even where the task records a depth slot as FFV1 .mkv (by "
                "default a slot keeps the task's codec family)")
      ->excludes(ffv1);
  sim->add_flag("--queue-drop", a->queue_drop,
                "drop (and count) frames when an encoder falls behind instead of waiting");
  sim->add_flag("--abort-last", a->abort_last, "abort the last episode instead of committing it");
  AddJsonFlag(sim, a->json);
  AddProgressOption(sim, a->progress);
  sim->add_flag("--profile", a->profile,
                "generate each episode's rows first, then report the recorder's CPU and wall "
                "seconds (append + commit) apart from the simulation");
  sim->callback([&exit_code, a] {
    RemoveScratchOnInterrupt();
    exit_code = RunSimulate(*a);
  });

  auto d = std::make_shared<DeleteArgs>();
  auto* del = app.add_subcommand(
      "delete", "Delete episodes' data and videos (their episodes rows, stats and numbers stay)");
  del->add_option("task", d->task, "task directory")->required();
  del->add_option("episodes", d->episodes, "global episode numbers, e.g. 7 or 1,3,5-9")->required();
  del->add_flag("--dry-run", d->dry_run, "print what would be deleted, delete nothing");
  AddJsonFlag(del, d->json);
  del->callback([&exit_code, d] { exit_code = RunDelete(*d); });
}

}  // namespace reel::cli
