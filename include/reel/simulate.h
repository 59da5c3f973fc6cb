// A simulated multi-device rig for demos, tests and benchmarks: two UMI grippers
// (force, state, force matrices at a chosen tier, SLAM at camera rate with _ns),
// an ego S80C stereo head with IMU at 400 Hz and an ego trajectory, two USB gloves
// with IMU quaternions, a D435 (forensic columns) and a UVC camera. Signals are
// physically plausible: during contact the force matrix's fz plane sums to the
// force sensor's fz, trajectories are smooth, the IMU sees gravity.
// Video is not simulated yet (the video issue adds frames).
//
// Thread safety: pure functions plus the EpisodeWriter they drive.
#pragma once

#include <cstdint>
#include <string>

#include "reel/recorder.h"

namespace reel {

struct SimulateOptions {
  double seconds = 2.0;              // per episode
  double fps = 30.0;
  std::string tier = "int16x100";    // force-matrix tier of both grippers' left matrix
  uint64_t seed = 1;
};

// The rig's devices, force-matrix tiers and SLAM declarations.
TaskWriterOptions SimulatedRigOptions(const std::string& task_name, const SimulateOptions& options);

// Appends round(seconds * fps) rows of episode number `episode` to `writer`.
Status SimulateEpisode(EpisodeWriter& writer, const SimulateOptions& options, int64_t episode);

}  // namespace reel
