// Internal: LeRobot-style feature statistics (lerobot-and-daft.md "Stats").
// Per episode: min, max, mean, population std, count and the quantiles
// q01/q10/q50/q90/q99 (numpy's default linear interpolation) per element;
// camera features per channel over sampled frames, scaled to [0,1], shaped
// (3,1,1). Across episodes: count-weighted mean, the parallel variance formula,
// min of mins, max of maxes, and count-weighted quantiles (LeRobot's rule).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "reel/status.h"

namespace arrow {
class Array;
}

namespace reel::internal {

inline constexpr std::array<double, 5> kQuantiles = {0.01, 0.10, 0.50, 0.90, 0.99};
inline constexpr std::array<const char*, 5> kQuantileNames = {"q01", "q10", "q50", "q90", "q99"};

struct FeatureStats {
  bool image = false;  // values per channel, written with shape (3,1,1)
  int64_t count = 0;
  std::vector<double> min, max, mean, std;
  std::array<std::vector<double>, 5> quantiles;
};

// Stats of a numeric column: scalar, or fixed_size_list (one vector per row).
Result<FeatureStats> ColumnStats(const arrow::Array& column);
// Stats of `frames` packed RGB24 frames (height x width x 3 each), per channel.
FeatureStats ImageStats(std::span<const uint8_t> frames, int64_t frame_count);
// LeRobot's sample of an episode's frames for image stats: round(linspace(0,
// n-1, k)) with k = max(min(n, 100), min(floor(n^0.75), 10000)).
std::vector<int64_t> ImageSampleIndices(int64_t n);

FeatureStats Aggregate(const std::vector<const FeatureStats*>& parts);

// {"min": [...], "max": ..., "mean", "std", "count": [n], quantiles when asked}.
nlohmann::ordered_json FeatureStatsJson(const FeatureStats& stats, bool with_quantiles);

}  // namespace reel::internal
