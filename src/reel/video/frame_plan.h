// Internal: how FramePool (reel/video.h) splits a batch read into per-file jobs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "reel/video.h"

namespace reel::internal {

// One file's share of a batch read: one reader decodes `frames` in one ReadRgb (its seek
// plan: ascending targets, one seek per cluster a keyframe reaches, no frame twice).
struct FrameJob {
  uint32_t file = 0;
  std::vector<int64_t> frames;  // the distinct frame indices asked of the file, ascending
  std::vector<size_t> targets;  // positions in the read's targets that these frames serve
};

// Groups `targets` by file. Jobs come largest first (most distinct frames, then by file),
// so threads that take them in order finish close together (longest processing time first).
std::vector<FrameJob> PlanFrameJobs(std::span<const FrameTarget> targets);

}  // namespace reel::internal
