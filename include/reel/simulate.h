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
#include <string>
#include <vector>

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

}  // namespace reel
