// Internal: how FramePool (reel/video.h) splits a batch read into jobs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "reel/video.h"

namespace reel::internal {

// A share of one file's frames in a batch read: one reader decodes `frames` in one ReadRgb
// (its seek plan: ascending targets, one seek per cluster a keyframe reaches, no frame twice).
struct FrameJob {
  uint32_t file = 0;
  std::vector<int64_t> frames;  // distinct frame indices of the file, ascending
  std::vector<size_t> targets;  // positions in the read's targets that these frames serve
  int64_t cost = 0;             // frames it decodes, estimated (SplitFrameJobs); 0 = unknown
  size_t part = 0;              // which piece of its file (SplitFrameJobs): 0 = the first
};

// Groups `targets` by file: one job per file holding its distinct frames. Jobs come largest
// first (most distinct frames, then by file), so threads that take them in order finish close
// together (longest processing time first).
std::vector<FrameJob> PlanFrameJobs(std::span<const FrameTarget> targets);

// Cuts the file jobs `files` (PlanFrameJobs of `targets`) into at most `threads` pieces each,
// so that `threads` threads taking the pieces in order (largest estimated cost first) finish
// close together even when a batch spans few files. `keyframe_of(file, frame)` is the index
// of the keyframe at or before `frame` in that file (the reader's seek target for it; 0 when
// the file lists no keyframes, which allows no cut).
//
// A cut falls only between consecutive frames a < b where b's keyframe comes after a: the
// frames before the cut and after it then share no GOP, so (closed GOPs, as the reader's
// seeks assume) no frame is decoded by two pieces, and each piece still seeks once per
// cluster. A piece's cost: per cluster, the frames from its keyframe to its last target.
// Files are only cut when threads > 1, into pieces of about total / (4 * threads) (at least
// one cluster each), so a batch over many files keeps one job per file.
std::vector<FrameJob> SplitFrameJobs(std::span<const FrameTarget> targets, std::vector<FrameJob> files,
                                     int threads,
                                     const std::function<int64_t(uint32_t file, int64_t frame)>& keyframe_of);

}  // namespace reel::internal
