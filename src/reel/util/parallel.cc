#include "util/parallel.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace reel::internal {

void ParallelFor(int64_t n, int threads, const std::function<void(int64_t)>& fn) {
  const int workers = static_cast<int>(std::min<int64_t>(n, std::max(threads, 1)));
  if (workers <= 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<int64_t> next{0};
  std::vector<std::thread> pool;
  for (int w = 0; w < workers; ++w)
    pool.emplace_back([&] {
      for (int64_t i = next++; i < n; i = next++) fn(i);
    });
  for (auto& t : pool) t.join();
}


}  // namespace reel::internal
