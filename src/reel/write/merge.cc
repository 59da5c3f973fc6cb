// Task-level merge rules for meta/stats.json and meta/info.json (contract §3, §4;
// multi-device §6.7; contract-decisions.md).
#include "reel/merge.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string_view>
#include <utility>

#include "util/json_util.h"

namespace reel {

namespace {

// Population std from float64 accumulator sums (contract §4).
double StdFromSums(double sum, double sum_sq, double n) {
  const double mean = sum / n;
  return std::sqrt(std::max(sum_sq / n - mean * mean, 0.0));
}

// A block's dimension, or Invalid when it lacks `count` or its four vectors disagree.
Result<size_t> CheckedDim(const StatsBlock& b, const char* which) {
  if (!b.count)
    return Status::Invalid(std::string(which) +
                           " block has no \"count\" (v1.1.0 stats.json): it needs a rebuild from "
                           "data/ before it can be merged (contract §4)");
  if (*b.count < 0)
    return Status::Invalid(std::string(which) + " block has a negative count " +
                           std::to_string(*b.count));
  const size_t dim = b.mean.size();
  if (b.std.size() != dim || b.min.size() != dim || b.max.size() != dim)
    return Status::Invalid(std::string(which) + " block has mean/std/min/max of different lengths (" +
                           std::to_string(b.mean.size()) + "/" + std::to_string(b.std.size()) + "/" +
                           std::to_string(b.min.size()) + "/" + std::to_string(b.max.size()) + ")");
  return dim;
}

int64_t ShapeProduct(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Union of ordered maps: `base` order first, `update`'s value wins, new keys appended.
template <typename V>
void UnionInto(OrderedMap<V>& base, const OrderedMap<V>& update) {
  for (const auto& [key, value] : update) {
    auto it = std::find_if(base.begin(), base.end(), [&](const auto& kv) { return kv.first == key; });
    if (it != base.end()) {
      it->second = value;
    } else {
      base.emplace_back(key, value);
    }
  }
}

// "observation.slam_trajectory" (rig 1) or "observation.gripper_<k>_slam_trajectory" (rig k,
// k digits; multi-device §4.6). Ego trajectories (observation.ego_...) are not gripper ones.
bool IsGripperTrajectory(std::string_view column) {
  constexpr std::string_view kRig1 = "observation.slam_trajectory";
  constexpr std::string_view kPrefix = "observation.gripper_";
  constexpr std::string_view kSuffix = "_slam_trajectory";
  if (column == kRig1) return true;
  if (!column.starts_with(kPrefix) || !column.ends_with(kSuffix)) return false;
  if (column.size() <= kPrefix.size() + kSuffix.size()) return false;
  const std::string_view rig =
      column.substr(kPrefix.size(), column.size() - kPrefix.size() - kSuffix.size());
  return std::all_of(rig.begin(), rig.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// True when the verbatim calibration text declares nothing ("", "{}", "{ }").
bool IsEmptyCalibration(const std::string& json) {
  if (json.empty()) return true;
  auto parsed = internal::ParseJson(json, "calibration");
  // Malformed text is kept (the serializer reports it) rather than silently dropped.
  return parsed.ok() && parsed->is_object() && parsed->empty();
}

}  // namespace

StatsBlock EmptyBlock(int64_t dim) {
  const size_t n = static_cast<size_t>(std::max<int64_t>(dim, 0));
  StatsBlock b;
  b.count = 0;
  b.mean.assign(n, 0.0);
  b.std.assign(n, 1.0);
  b.min.assign(n, 0.0);
  b.max.assign(n, 0.0);
  b.shape = {static_cast<int64_t>(n)};
  return b;
}

StatsBlock ActionPlaceholderBlock() { return EmptyBlock(1); }

StatsBlock BlockFromValues(const float* values, int64_t rows, int64_t dim) {
  if (rows <= 0 || dim <= 0 || values == nullptr) return EmptyBlock(dim);
  const size_t d = static_cast<size_t>(dim);
  std::vector<double> sum(d, 0.0), sum_sq(d, 0.0);
  StatsBlock b;
  b.count = rows;
  b.min.assign(values, values + d);
  b.max.assign(values, values + d);
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = values + static_cast<size_t>(r) * d;
    for (size_t i = 0; i < d; ++i) {
      const double v = row[i];
      sum[i] += v;
      sum_sq[i] += v * v;
      b.min[i] = std::min(b.min[i], v);
      b.max[i] = std::max(b.max[i], v);
    }
  }
  const double n = static_cast<double>(rows);
  b.mean.resize(d);
  b.std.resize(d);
  for (size_t i = 0; i < d; ++i) {
    b.mean[i] = sum[i] / n;
    b.std[i] = StdFromSums(sum[i], sum_sq[i], n);
  }
  b.shape = {dim};
  return b;
}

Result<StatsBlock> MergeBlocks(const StatsBlock& a, const StatsBlock& b) {
  REEL_ASSIGN_OR_RETURN(size_t dim_a, CheckedDim(a, "first"));
  REEL_ASSIGN_OR_RETURN(size_t dim_b, CheckedDim(b, "second"));
  if (dim_a != dim_b) {
    // An empty block of dimension 0 (reference: "empty/zero-dim block") carries no
    // dimension and contributes nothing; any other mismatch is a schema conflict.
    if (*a.count == 0 && dim_a == 0) return b;
    if (*b.count == 0 && dim_b == 0) return a;
    return Status::Invalid("blocks of different dimensions cannot be merged: " +
                           std::to_string(dim_a) + " vs " + std::to_string(dim_b));
  }
  if (*a.count == 0 && *b.count == 0) {
    StatsBlock empty = EmptyBlock(static_cast<int64_t>(dim_a));
    if (!a.shape.empty() && ShapeProduct(a.shape) == static_cast<int64_t>(dim_a)) empty.shape = a.shape;
    return empty;
  }
  if (*b.count == 0) return a;
  if (*a.count == 0) return b;

  const double ca = static_cast<double>(*a.count);
  const double cb = static_cast<double>(*b.count);
  const double n = ca + cb;
  StatsBlock out;
  out.count = *a.count + *b.count;
  out.shape = !a.shape.empty() ? a.shape : b.shape;
  out.mean.resize(dim_a);
  out.std.resize(dim_a);
  out.min.resize(dim_a);
  out.max.resize(dim_a);
  for (size_t i = 0; i < dim_a; ++i) {
    const double sum = a.mean[i] * ca + b.mean[i] * cb;
    const double sum_sq = (a.std[i] * a.std[i] + a.mean[i] * a.mean[i]) * ca +
                          (b.std[i] * b.std[i] + b.mean[i] * b.mean[i]) * cb;
    out.mean[i] = sum / n;
    out.std[i] = StdFromSums(sum, sum_sq, n);
    out.min[i] = std::min(a.min[i], b.min[i]);
    out.max[i] = std::max(a.max[i], b.max[i]);
  }
  return out;
}

Result<StatsJson> MergeStats(const StatsJson& task, const OrderedMap<StatsBlock>& episode) {
  constexpr std::string_view kAction = "action";
  StatsJson out = task;  // keeps block order and source_json (unknown content survives)
  auto find = [&](std::string_view name) {
    return std::find_if(out.blocks.begin(), out.blocks.end(),
                        [&](const auto& kv) { return kv.first == name; });
  };
  auto ensure_action = [&] {
    auto it = find(kAction);
    if (it != out.blocks.end()) {
      it->second = ActionPlaceholderBlock();
    } else {
      out.blocks.emplace_back(std::string(kAction), ActionPlaceholderBlock());
    }
  };
  for (const auto& [name, block] : episode) {
    if (name == kAction) {
      ensure_action();  // placeholder only: action never takes part in statistics
      continue;
    }
    auto it = find(name);
    if (it == out.blocks.end()) {
      // A new block still has to be a valid accumulator.
      auto dim = CheckedDim(block, "episode");
      if (!dim.ok()) return dim.status().WithContext("stats.json block \"" + name + "\"");
      out.blocks.emplace_back(name, block);
      continue;
    }
    auto merged = MergeBlocks(it->second, block);
    if (!merged.ok())
      return merged.status().WithContext("stats.json block \"" + name +
                                         "\" (task block first, episode block second)");
    it->second = std::move(merged).value();
  }
  ensure_action();
  return out;
}

InfoJson MergeInfo(const InfoJson& task, const InfoJson& episode, int64_t episode_index) {
  // Start from the task: format, chunks_size, path templates, source_json and
  // present_keys stay, so keys reel does not model survive serialization.
  InfoJson out = task;
  if (out.format.empty()) out.format = episode.format;

  // The episode's (latest) values; an empty string means "not declared".
  auto latest = [](std::string& field, const std::string& value) {
    if (!value.empty()) field = value;
  };
  latest(out.codebase_version, episode.codebase_version);
  latest(out.app_version, episode.app_version);
  latest(out.task_name, episode.task_name);
  out.fps = episode.fps;
  out.video = episode.video;
  out.sensor_dim = episode.sensor_dim;

  UnionInto(out.features, episode.features);
  UnionInto(out.cameras, episode.cameras);
  UnionInto(out.video_extensions, episode.video_extensions);
  UnionInto(out.device_names, episode.device_names);
  UnionInto(out.slam_frames, episode.slam_frames);

  for (const DeviceEntry& d : episode.devices) {
    auto it = std::find_if(out.devices.begin(), out.devices.end(),
                           [&](const DeviceEntry& e) { return e.key == d.key; });
    if (it != out.devices.end()) {
      *it = d;
    } else {
      out.devices.push_back(d);
    }
  }
  for (const std::string& s : episode.sensors)
    if (std::find(out.sensors.begin(), out.sensors.end(), s) == out.sensors.end())
      out.sensors.push_back(s);

  if (!IsEmptyCalibration(episode.calibration_json)) out.calibration_json = episode.calibration_json;

  // Set once, at task creation (contract-decisions.md).
  if (!out.created_at) out.created_at = episode.created_at;

  // Highest committed N: never decreases.
  out.total_episodes = std::max(task.total_episodes, episode_index);

  if (episode.gripper_slam_frame) {
    out.gripper_slam_frame = episode.gripper_slam_frame;
  } else if (out.gripper_slam_frame) {
    const bool has_gripper_trajectory =
        std::any_of(out.features.begin(), out.features.end(),
                    [](const auto& kv) { return IsGripperTrajectory(kv.first); });
    if (!has_gripper_trajectory) out.gripper_slam_frame.reset();
  }
  return out;
}

}  // namespace reel
