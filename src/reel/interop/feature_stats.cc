#include "interop/feature_stats.h"

#include <arrow/api.h>

#include <algorithm>
#include <cmath>

namespace reel::internal {
namespace {

// numpy.quantile's default ("linear"): position q*(n-1) between sorted values.
double Quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

template <typename ArrowType>
void ReadDoubles(const arrow::Array& values, int64_t start, int64_t count, double* out) {
  const auto* src = static_cast<const arrow::NumericArray<ArrowType>&>(values).raw_values() + start;
  for (int64_t i = 0; i < count; ++i) out[i] = static_cast<double>(src[i]);
}

Status ToDoubles(const arrow::Array& values, int64_t start, int64_t count, double* out) {
  switch (values.type_id()) {
    case arrow::Type::INT8: ReadDoubles<arrow::Int8Type>(values, start, count, out); break;
    case arrow::Type::INT16: ReadDoubles<arrow::Int16Type>(values, start, count, out); break;
    case arrow::Type::INT32: ReadDoubles<arrow::Int32Type>(values, start, count, out); break;
    case arrow::Type::INT64: ReadDoubles<arrow::Int64Type>(values, start, count, out); break;
    case arrow::Type::UINT8: ReadDoubles<arrow::UInt8Type>(values, start, count, out); break;
    case arrow::Type::UINT16: ReadDoubles<arrow::UInt16Type>(values, start, count, out); break;
    case arrow::Type::UINT32: ReadDoubles<arrow::UInt32Type>(values, start, count, out); break;
    case arrow::Type::UINT64: ReadDoubles<arrow::UInt64Type>(values, start, count, out); break;
    case arrow::Type::FLOAT: ReadDoubles<arrow::FloatType>(values, start, count, out); break;
    case arrow::Type::DOUBLE: ReadDoubles<arrow::DoubleType>(values, start, count, out); break;
    default: return Status::NotSupported("stats of " + values.type()->ToString());
  }
  return Status::OK();
}

}  // namespace

Result<FeatureStats> ColumnStats(const arrow::Array& column) {
  std::shared_ptr<arrow::Array> values;
  int64_t width = 1, start = 0;
  if (column.type_id() == arrow::Type::FIXED_SIZE_LIST) {
    const auto& f = static_cast<const arrow::FixedSizeListArray&>(column);
    width = f.list_type()->list_size();
    values = f.values();
    start = f.offset() * width;
  } else {
    values = column.Slice(0);
  }
  const int64_t n = column.length();
  std::vector<double> data(static_cast<size_t>(n * width));  // row-major
  REEL_RETURN_IF_ERROR(ToDoubles(*values, start, n * width, data.data()));
  FeatureStats s;
  s.count = n;
  s.min.assign(width, 0);
  s.max.assign(width, 0);
  s.mean.assign(width, 0);
  s.std.assign(width, 0);
  for (auto& q : s.quantiles) q.assign(width, 0);
  std::vector<double> element(static_cast<size_t>(n));
  for (int64_t k = 0; k < width; ++k) {
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      element[i] = data[i * width + k];
      sum += element[i];
    }
    if (n == 0) continue;
    const double mean = sum / static_cast<double>(n);
    double ss = 0;
    for (double v : element) ss += (v - mean) * (v - mean);
    std::sort(element.begin(), element.end());
    s.min[k] = element.front();
    s.max[k] = element.back();
    s.mean[k] = mean;
    s.std[k] = std::sqrt(ss / static_cast<double>(n));
    for (size_t q = 0; q < kQuantiles.size(); ++q) s.quantiles[q][k] = Quantile(element, kQuantiles[q]);
  }
  return s;
}

FeatureStats ImageStats(std::span<const uint8_t> frames, int64_t frame_count) {
  FeatureStats s;
  s.image = true;
  s.count = frame_count;
  std::array<std::array<int64_t, 256>, 3> histogram{};
  for (size_t i = 0; i + 2 < frames.size(); i += 3) {
    ++histogram[0][frames[i]];
    ++histogram[1][frames[i + 1]];
    ++histogram[2][frames[i + 2]];
  }
  for (auto* v : {&s.min, &s.max, &s.mean, &s.std}) v->assign(3, 0);
  for (auto& q : s.quantiles) q.assign(3, 0);
  for (int c = 0; c < 3; ++c) {
    const auto& h = histogram[c];
    int64_t total = 0;
    double sum = 0;
    for (int v = 0; v < 256; ++v) {
      total += h[v];
      sum += static_cast<double>(h[v]) * v;
    }
    if (total == 0) continue;
    const double mean = sum / static_cast<double>(total);
    double ss = 0;
    int lo = 255, hi = 0;
    for (int v = 0; v < 256; ++v) {
      if (!h[v]) continue;
      ss += static_cast<double>(h[v]) * (v - mean) * (v - mean);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    // The value at sorted position k, from the cumulative counts.
    auto at = [&](int64_t k) {
      int64_t seen = 0;
      for (int v = 0; v < 256; ++v) {
        seen += h[v];
        if (seen > k) return static_cast<double>(v);
      }
      return 255.0;
    };
    s.min[c] = lo / 255.0;
    s.max[c] = hi / 255.0;
    s.mean[c] = mean / 255.0;
    s.std[c] = std::sqrt(ss / static_cast<double>(total)) / 255.0;
    for (size_t q = 0; q < kQuantiles.size(); ++q) {
      const double pos = kQuantiles[q] * static_cast<double>(total - 1);
      const int64_t k = static_cast<int64_t>(std::floor(pos));
      const double a = at(k), b = at(std::min(k + 1, total - 1));
      s.quantiles[q][c] = (a + (pos - static_cast<double>(k)) * (b - a)) / 255.0;
    }
  }
  return s;
}

std::vector<int64_t> ImageSampleIndices(int64_t n) {
  if (n <= 0) return {};
  const int64_t min_samples = std::min<int64_t>(n, 100);
  const int64_t k = std::max(min_samples, std::min<int64_t>(
                                              static_cast<int64_t>(std::pow(static_cast<double>(n), 0.75)),
                                              10000));
  std::vector<int64_t> out(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) {
    const double x = k == 1 ? 0.0 : static_cast<double>(i) * static_cast<double>(n - 1) / static_cast<double>(k - 1);
    out[i] = static_cast<int64_t>(std::nearbyint(x));  // numpy.round: half to even
  }
  return out;
}

FeatureStats Aggregate(const std::vector<const FeatureStats*>& parts) {
  FeatureStats total;
  if (parts.empty()) return total;
  const size_t width = parts[0]->mean.size();
  total.image = parts[0]->image;
  total.min = parts[0]->min;
  total.max = parts[0]->max;
  total.mean.assign(width, 0);
  total.std.assign(width, 0);
  for (auto& q : total.quantiles) q.assign(width, 0);
  for (const auto* p : parts) total.count += p->count;
  if (total.count == 0) return total;
  for (const auto* p : parts) {
    const double w = static_cast<double>(p->count) / static_cast<double>(total.count);
    for (size_t k = 0; k < width; ++k) {
      total.min[k] = std::min(total.min[k], p->min[k]);
      total.max[k] = std::max(total.max[k], p->max[k]);
      total.mean[k] += w * p->mean[k];
      for (size_t q = 0; q < kQuantiles.size(); ++q) total.quantiles[q][k] += w * p->quantiles[q][k];
    }
  }
  for (const auto* p : parts) {
    const double w = static_cast<double>(p->count) / static_cast<double>(total.count);
    for (size_t k = 0; k < width; ++k) {
      const double d = p->mean[k] - total.mean[k];
      total.std[k] += w * (p->std[k] * p->std[k] + d * d);
    }
  }
  for (auto& v : total.std) v = std::sqrt(v);
  return total;
}

nlohmann::ordered_json FeatureStatsJson(const FeatureStats& stats, bool with_quantiles) {
  auto shaped = [&](const std::vector<double>& v) {
    if (!stats.image) return nlohmann::ordered_json(v);
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (double x : v) out.push_back({{x}});  // (3,1,1)
    return out;
  };
  nlohmann::ordered_json j;
  j["min"] = shaped(stats.min);
  j["max"] = shaped(stats.max);
  j["mean"] = shaped(stats.mean);
  j["std"] = shaped(stats.std);
  j["count"] = {stats.count};
  if (with_quantiles) {
    for (size_t q = 0; q < kQuantiles.size(); ++q) j[kQuantileNames[q]] = shaped(stats.quantiles[q]);
  }
  return j;
}

}  // namespace reel::internal
