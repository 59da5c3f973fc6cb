// A simulated multi-device rig for demos, tests and benchmarks: two UMI grippers
// (force, state, force matrices at a chosen tier, SLAM at camera rate with _ns),
// an ego S80C stereo head with IMU at 400 Hz and an ego trajectory, two USB gloves
// with IMU quaternions, a D435 (forensic columns) and a UVC camera. Signals are
// physically plausible: during contact the force matrix's fz plane sums to the
// force sensor's fz, trajectories are smooth, the IMU sees gravity.
// Video: every camera slot records synthetic frames (moving patterns; depth a
// tilted plane with a box passing in front), the D435 depth source missing a frame
// where the data's depth_dup column says so, so the recorder repeats it.
//
// Thread safety: pure functions plus the EpisodeWriter they drive.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "reel/progress.h"
#include "reel/recorder.h"

namespace reel {

struct SimulateOptions {
  double seconds = 2.0;              // per episode
  double fps = 30.0;
  std::string tier = "int16x100";    // force-matrix tier of both grippers' left matrix
  uint64_t seed = 1;
  bool video = true;
  int video_width = 320;   // every slot's size (real rigs: 1280x800 stereo, 640x480 D435)
  int video_height = 240;
};

// The rig's video slots: stereo_left/right + stereo_depth (S80C), gripper_rgb,
// gripper_2_rgb, d435_rgb + d435_depth, head_left_rgb (UVC); none with video off.
std::vector<VideoSlotOptions> RigVideoSlots(const SimulateOptions& options);

// The rig's devices, force-matrix tiers, SLAM declarations and video slots.
TaskWriterOptions SimulatedRigOptions(const std::string& task_name, const SimulateOptions& options);

// Appends round(seconds * fps) rows of episode number `episode` to `writer`.
Status SimulateEpisode(EpisodeWriter& writer, const SimulateOptions& options, int64_t episode);

// The same rows handed to `sink` instead of a writer (benchmarks time the
// recorder apart from the signal generation this way).
Status SimulateRows(const SimulateOptions& options, int64_t episode,
                    const std::function<Status(const FrameRow&)>& sink);

// Appends rows made by SimulateRows, pushing the rig's video frames before each (so
// a benchmark can time the recorder, video included, without the row generation).
Status AppendSimulatedRows(EpisodeWriter& writer, const SimulateOptions& options,
                           const std::vector<FrameRow>& rows);

// A run of the simulated rig into a task: `reel simulate` and reel.simulate.
struct SimulateTaskOptions {
  int64_t count = 2;          // episodes recorded
  int64_t episode_index = 0;  // > 0: record this N, once; with `replace` again over its files
  bool replace = false;
  bool abort_last = false;    // the last episode is aborted instead of committed
  bool profile = false;       // time the recorder's part (append + commit) apart from the rows' making
  std::string task_name;      // of a new task; "" = TaskDirName(task)
  SimulateOptions rig;
  VideoOptions video;             // the writer's (TaskWriterOptions::video); its slots are the rig's
  int64_t progress_watermark = 0;  // TaskWriterOptions::progress_watermark
  ProgressFn progress;            // "episodes recorded"
};

struct SimulatedEpisode {
  int64_t episode_index = 0;
  int64_t length = 0;  // rows
  bool committed = false;
};

// The recorder's share of a profiled run.
struct SimulateProfile {
  double record_cpu_s = 0;   // CPU seconds of the process (every thread) in append + commit
  double record_wall_s = 0;  // wall seconds of the same
  double recorded_s = 0;     // seconds of recording made
};

struct SimulateReport {
  std::vector<SimulatedEpisode> episodes;  // in recording order
  std::optional<SimulateProfile> profile;  // with options.profile
};

// Records options.count episodes (or episode_index once) of the simulated rig into the
// task at `task` (a directory, created if missing). Errors: Invalid for `replace` without
// an episode_index; those of TaskWriter::Open, BeginEpisode and Commit. Episodes
// committed before an error stay.
Result<SimulateReport> SimulateTask(const std::string& task, const SimulateTaskOptions& options);

}  // namespace reel
