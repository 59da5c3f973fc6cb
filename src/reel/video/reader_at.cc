// VideoReader::ReadRgbAt and ReadRgbAtTimestamps: frames by timestamp, with
// clustered seeks (one seek per cluster of nearby targets).
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <sstream>

#include "video/reader_impl.h"

namespace reel {
namespace {

std::string Seconds(double s) {
  std::ostringstream o;
  o.precision(6);
  o << s << " s";
  return o.str();
}

}  // namespace

Status VideoReader::ReadRgbAt(std::span<const double> targets, double tolerance_s,
                              std::span<uint8_t> out, double cluster_gap_s) {
  Impl& m = *impl_;
  if (m.info.depth)
    return Status::Invalid(m.path + ": is a depth stream (" + m.info.codec + " " + m.info.pix_fmt +
                           "); timestamp reads return RGB");
  const size_t frame_bytes = static_cast<size_t>(m.info.width) * m.info.height * 3;
  if (out.size() != targets.size() * frame_bytes)
    return Status::Invalid(m.path + ": output buffer holds " + std::to_string(out.size()) +
                           " bytes, " + std::to_string(targets.size()) + " RGB frames of " +
                           std::to_string(m.info.width) + "x" + std::to_string(m.info.height) +
                           " need " + std::to_string(targets.size() * frame_bytes));
  if (!(tolerance_s >= 0))
    return Status::Invalid(m.path + ": tolerance must be >= 0 s, got " + std::to_string(tolerance_s));
  if (targets.empty()) return Status::OK();
  REEL_RETURN_IF_ERROR(m.EnsureFramePts());
  if (m.frame_pts.empty()) return Status::Invalid(m.path + ": the file has no frames");

  // The nearest frame of every target (the earlier one on a tie).
  std::vector<double> times(m.frame_pts.size());
  for (size_t i = 0; i < times.size(); ++i) times[i] = m.TimeOf(m.frame_pts[i]);
  std::vector<int64_t> nearest(targets.size());
  for (size_t p = 0; p < targets.size(); ++p) {
    const double t = targets[p];
    if (!std::isfinite(t))
      return Status::Invalid(m.path + ": target " + std::to_string(p) + " is not a finite time");
    auto it = std::lower_bound(times.begin(), times.end(), t);
    size_t i = it == times.end() ? times.size() - 1 : static_cast<size_t>(it - times.begin());
    if (i > 0 && std::abs(t - times[i - 1]) <= std::abs(times[i] - t)) --i;
    // A hair of slack: a tolerance of exactly half a period must accept a target
    // computed in float32 halfway between two frames.
    if (std::abs(times[i] - t) > tolerance_s + 1e-9)
      return Status::Invalid(m.path + ": no frame within " + Seconds(tolerance_s) + " of target " +
                             Seconds(t) + ": the nearest is frame " + std::to_string(i) + " at " +
                             Seconds(times[i]) + " (the file has " + std::to_string(times.size()) +
                             " frames, " + Seconds(times.front()) + " to " + Seconds(times.back()) +
                             ")");
    nearest[p] = static_cast<int64_t>(i);
  }

  // Targets in time order, split into clusters at gaps wider than cluster_gap_s.
  std::vector<size_t> order(targets.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return targets[a] < targets[b]; });
  size_t begin = 0;
  while (begin < order.size()) {
    size_t end = begin + 1;
    while (end < order.size() && targets[order[end]] - targets[order[end - 1]] <= cluster_gap_s) ++end;
    // The cluster's distinct frames, ascending (time order = frame order), and the
    // first asked position of each.
    std::vector<int64_t> frames;
    std::vector<size_t> first;
    for (size_t q = begin; q < end; ++q) {
      const size_t p = order[q];
      if (frames.empty() || frames.back() != nearest[p]) {
        frames.push_back(nearest[p]);
        first.push_back(p);
      }
    }
    REEL_RETURN_IF_ERROR(m.ReadSorted(frames, Impl::Policy::kOneSeek,
                                      [&](size_t k, const AVFrame& f) {
                                        return m.ConvertRgb(f, frames[k], out.data() + first[k] * frame_bytes);
                                      }));
    for (size_t q = begin; q < end; ++q) {
      const size_t p = order[q];
      const size_t k = std::lower_bound(frames.begin(), frames.end(), nearest[p]) - frames.begin();
      if (first[k] != p)
        std::copy_n(out.data() + first[k] * frame_bytes, frame_bytes, out.data() + p * frame_bytes);
    }
    begin = end;
  }
  return Status::OK();
}

Status ReadRgbAtTimestamps(std::span<const TimestampTarget> targets, std::span<uint8_t> out,
                           double tolerance_s, double cluster_gap_s, VideoReadStats* stats) {
  if (targets.empty()) {
    if (!out.empty()) return Status::Invalid("ReadRgbAtTimestamps: no targets but a non-empty output");
    return Status::OK();
  }
  // One reader per file, in order of first appearance; the asked positions of each.
  std::vector<std::unique_ptr<VideoReader>> readers;
  std::vector<std::vector<size_t>> positions;
  std::map<std::string, size_t> by_path;
  for (size_t p = 0; p < targets.size(); ++p) {
    auto [it, added] = by_path.emplace(targets[p].path, readers.size());
    if (added) {
      REEL_ASSIGN_OR_RETURN(auto reader, VideoReader::Open(targets[p].path));
      readers.push_back(std::move(reader));
      positions.emplace_back();
    }
    positions[it->second].push_back(p);
  }
  const VideoInfo& first = readers.front()->info();
  for (const auto& r : readers)
    if (r->info().width != first.width || r->info().height != first.height)
      return Status::Invalid(r->path() + ": frames are " + std::to_string(r->info().width) + "x" +
                             std::to_string(r->info().height) + " but " + readers.front()->path() +
                             " has " + std::to_string(first.width) + "x" +
                             std::to_string(first.height) + "; one read needs one frame size");
  const size_t frame_bytes = static_cast<size_t>(first.width) * first.height * 3;
  if (out.size() != targets.size() * frame_bytes)
    return Status::Invalid("ReadRgbAtTimestamps: output buffer holds " + std::to_string(out.size()) +
                           " bytes, " + std::to_string(targets.size()) + " RGB frames of " +
                           std::to_string(first.width) + "x" + std::to_string(first.height) +
                           " need " + std::to_string(targets.size() * frame_bytes));
  std::vector<double> times;
  std::vector<uint8_t> buffer;
  for (size_t r = 0; r < readers.size(); ++r) {
    VideoReader& reader = *readers[r];
    double tolerance = tolerance_s;
    if (tolerance < 0) {
      if (!(reader.info().fps > 0))
        return Status::Invalid(reader.path() + ": no frame rate, so no default tolerance; pass one");
      tolerance = 0.5 / reader.info().fps;
    }
    times.clear();
    for (size_t p : positions[r]) times.push_back(targets[p].time_s);
    buffer.resize(times.size() * frame_bytes);
    Status st = reader.ReadRgbAt(times, tolerance, buffer, cluster_gap_s);
    if (stats) AddReadStats(reader.stats(), stats);
    REEL_RETURN_IF_ERROR(st);
    for (size_t q = 0; q < positions[r].size(); ++q)
      std::copy_n(buffer.data() + q * frame_bytes, frame_bytes, out.data() + positions[r][q] * frame_bytes);
  }
  return Status::OK();
}

}  // namespace reel
