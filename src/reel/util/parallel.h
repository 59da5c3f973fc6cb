// Internal: a small parallel loop for independent reads (one file per index).
#pragma once

#include <cstdint>
#include <functional>

namespace reel::internal {

// Runs fn(i) for i in [0, n) on up to `threads` threads (the calling thread alone when
// `threads` <= 1 or n <= 1). fn must be safe to call concurrently for distinct i.
void ParallelFor(int64_t n, int threads, const std::function<void(int64_t)>& fn);

}  // namespace reel::internal
