// Test-only: the simulated rig at its smallest (3 frames of 64x48 video per episode), and
// a task of such episodes, for tests that need real episodes fast.
#pragma once

#include <string>

#include "reel/recorder.h"
#include "reel/simulate.h"

namespace reel::testing {

inline SimulateOptions TinyRig() {
  SimulateOptions sim;
  sim.seconds = 0.3;
  sim.fps = 10;
  sim.video_width = 64;
  sim.video_height = 48;
  return sim;
}

// Records `count` episodes into the task at `root` (created when new).
inline Status RecordTinyEpisodes(const std::string& root, int count) {
  REEL_ASSIGN_OR_RETURN(auto writer, TaskWriter::Open(root, SimulatedRigOptions("pick", TinyRig())));
  for (int i = 0; i < count; ++i) {
    REEL_ASSIGN_OR_RETURN(auto episode, writer->BeginEpisode());
    REEL_RETURN_IF_ERROR(SimulateEpisode(*episode, TinyRig(), episode->episode_index()));
    REEL_RETURN_IF_ERROR(episode->Commit().status());
  }
  return Status::OK();
}

}  // namespace reel::testing
