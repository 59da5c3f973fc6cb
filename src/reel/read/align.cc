// The pairing core of reel/align.h: clock segments, frames paired with samples, the IMU's
// device clock put on the frame clock, and the time edge cases `reel check` reports.
#include "reel/align.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace reel {

namespace {

struct Stamp {
  int64_t ns;
  int64_t index;
};

uint64_t Distance(int64_t a, int64_t b) {
  return a > b ? static_cast<uint64_t>(a) - static_cast<uint64_t>(b)
               : static_cast<uint64_t>(b) - static_cast<uint64_t>(a);
}

int32_t SegmentOfRow(const std::vector<int32_t>& segment, int64_t row) {
  if (segment.empty()) return 0;
  if (row < 0) return segment.front();
  return row < static_cast<int64_t>(segment.size()) ? segment[row] : segment.back();
}

// Stamped samples per segment, sorted by stamp; of a repeated stamp only the first sample.
std::vector<std::vector<Stamp>> SamplesBySegment(const std::vector<int32_t>& segment,
                                                 const std::vector<int64_t>& sample_ns,
                                                 const std::vector<int64_t>& sample_row) {
  std::vector<std::vector<Stamp>> out(segment.empty() ? 1 : segment.back() + 1);
  for (size_t i = 0; i < sample_ns.size(); ++i) {
    if (sample_ns[i] == 0) continue;
    const int64_t row = i < sample_row.size() ? sample_row[i] : 0;
    out[SegmentOfRow(segment, row)].push_back({sample_ns[i], static_cast<int64_t>(i)});
  }
  const auto earlier = [](const Stamp& a, const Stamp& b) { return a.ns < b.ns; };
  for (auto& v : out) {
    if (!std::is_sorted(v.begin(), v.end(), earlier)) std::stable_sort(v.begin(), v.end(), earlier);  // rarely
    v.erase(std::unique(v.begin(), v.end(), [](const Stamp& a, const Stamp& b) { return a.ns == b.ns; }),
            v.end());
  }
  return out;
}

// The stamps either side of t in a sorted run: `before` <= t < `after`, null at the ends.
struct Bracket {
  const Stamp* before = nullptr;
  const Stamp* after = nullptr;
};
Bracket BracketOf(const std::vector<Stamp>& v, int64_t t) {
  auto it = std::upper_bound(v.begin(), v.end(), t, [](int64_t x, const Stamp& s) { return x < s.ns; });
  Bracket b;
  if (it != v.end()) b.after = &*it;
  if (it != v.begin()) b.before = &*std::prev(it);
  return b;
}

// The nearer of the bracket's stamps (ties go to the earlier one), or null.
const Stamp* Nearest(const Bracket& b, int64_t t) {
  if (b.before && b.after) return Distance(t, b.before->ns) <= Distance(b.after->ns, t) ? b.before : b.after;
  return b.before ? b.before : b.after;
}

FramePairing PairOne(const std::vector<Stamp>& v, int64_t t, int64_t tolerance_ns, AlignMethod method) {
  const Bracket b = BracketOf(v, t);
  const uint64_t tol = static_cast<uint64_t>(std::max<int64_t>(tolerance_ns, 0));
  if (method == AlignMethod::kInterpolate && b.before && b.after && b.before->ns != t &&
      Distance(b.after->ns, b.before->ns) <= 2 * tol) {
    const double w = static_cast<double>(t - b.before->ns) / static_cast<double>(b.after->ns - b.before->ns);
    const Stamp* nearer = Nearest(b, t);
    return {b.before->index, b.after->index, w, nearer->ns - t};
  }
  const Stamp* best = Nearest(b, t);
  if (!best || Distance(best->ns, t) > tol) return {};
  return {best->index, -1, 0.0, best->ns - t};
}

}  // namespace

void SlerpQuaternion(const double* qa, const double* qb, double w, double* out) {
  double b[4] = {qb[0], qb[1], qb[2], qb[3]};
  double dot = qa[0] * b[0] + qa[1] * b[1] + qa[2] * b[2] + qa[3] * b[3];
  if (dot < 0) {
    for (double& x : b) x = -x;
    dot = -dot;
  }
  double ka = 1.0 - w, kb = w;
  if (dot < 0.9995) {
    const double theta = std::acos(std::min(dot, 1.0));
    ka = std::sin((1.0 - w) * theta) / std::sin(theta);
    kb = std::sin(w * theta) / std::sin(theta);
  }
  double norm = 0;
  for (int k = 0; k < 4; ++k) {
    out[k] = ka * qa[k] + kb * b[k];
    norm += out[k] * out[k];
  }
  norm = std::sqrt(norm);
  for (int k = 0; k < 4 && norm > 0; ++k) out[k] /= norm;
}

Result<AlignMethod> ParseAlignMethod(const std::string& name) {
  if (name == "nearest") return AlignMethod::kNearest;
  if (name == "interpolate") return AlignMethod::kInterpolate;
  return Status::Invalid("method must be \"nearest\" or \"interpolate\", got \"" + name + "\"");
}

const char* StreamClockName(StreamClock clock) {
  switch (clock) {
    case StreamClock::kScalarNs: return "scalar_ns";
    case StreamClock::kSlamNs: return "slam_ns";
    case StreamClock::kImuDevice: return "imu_device";
    case StreamClock::kRow: return "row";
    case StreamClock::kNone: break;
  }
  return "none";
}

std::vector<int32_t> ClockSegments(const std::vector<int64_t>& frame_ns) {
  std::vector<int32_t> segment(frame_ns.size(), 0);
  int32_t s = 0;
  int64_t last = 0;
  for (size_t r = 0; r < frame_ns.size(); ++r) {
    if (frame_ns[r] != 0) {
      if (last != 0 && frame_ns[r] < last) ++s;
      last = frame_ns[r];
    }
    segment[r] = s;
  }
  return segment;
}

std::vector<FramePairing> PairFrames(const std::vector<int64_t>& frame_ns,
                                     const std::vector<int64_t>& sample_ns,
                                     const std::vector<int64_t>& sample_row, int64_t tolerance_ns,
                                     AlignMethod method) {
  const std::vector<int32_t> segment = ClockSegments(frame_ns);
  const auto samples = SamplesBySegment(segment, sample_ns, sample_row);
  std::vector<FramePairing> out(frame_ns.size());
  for (size_t r = 0; r < frame_ns.size(); ++r)
    if (frame_ns[r] != 0) out[r] = PairOne(samples[segment[r]], frame_ns[r], tolerance_ns, method);
  return out;
}

std::vector<int64_t> NearestFrames(const std::vector<int64_t>& frame_ns,
                                   const std::vector<int64_t>& sample_ns,
                                   const std::vector<int64_t>& sample_row) {
  const std::vector<int32_t> segment = ClockSegments(frame_ns);
  std::vector<int64_t> rows(frame_ns.size());
  for (size_t r = 0; r < rows.size(); ++r) rows[r] = static_cast<int64_t>(r);
  // The frames as "samples" of their own rows: stamped frames per segment, sorted.
  const auto frames = SamplesBySegment(segment, frame_ns, rows);
  std::vector<int64_t> out(sample_ns.size(), -1);
  for (size_t i = 0; i < sample_ns.size(); ++i) {
    if (sample_ns[i] == 0) continue;
    const auto& v = frames[SegmentOfRow(segment, i < sample_row.size() ? sample_row[i] : 0)];
    if (const Stamp* s = Nearest(BracketOf(v, sample_ns[i]), sample_ns[i])) out[i] = s->index;
  }
  return out;
}

namespace {

// True when at least half of the stamped IMU samples lie within a second of the span of
// `clock`'s stamps: the two are one clock.
bool SharesClock(const std::vector<int64_t>& clock, const std::vector<int64_t>& imu_ns) {
  constexpr int64_t kSlack = 1'000'000'000;
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  for (int64_t v : clock)
    if (v != 0) lo = std::min(lo, v), hi = std::max(hi, v);
  if (lo > hi) return false;
  int64_t in = 0, stamped = 0;
  for (int64_t v : imu_ns) {
    if (v == 0) continue;
    ++stamped;
    in += (v >= lo - kSlack && v <= hi + kSlack) ? 1 : 0;
  }
  return stamped > 0 && 2 * in >= stamped;
}

// The median over rows of hardware_ns minus the row's last IMU stamp; 0 when no row has both.
int64_t MedianRowOffset(const std::vector<int64_t>& frame_ns, const std::vector<int64_t>& imu_ns,
                        const std::vector<int64_t>& imu_row) {
  std::vector<int64_t> last(frame_ns.size(), 0);
  for (size_t i = 0; i < imu_ns.size() && i < imu_row.size(); ++i)
    if (imu_ns[i] != 0 && imu_row[i] >= 0 && imu_row[i] < static_cast<int64_t>(last.size()))
      last[imu_row[i]] = imu_ns[i];
  std::vector<int64_t> offsets;
  for (size_t r = 0; r < last.size(); ++r)
    if (last[r] != 0 && frame_ns[r] != 0) offsets.push_back(frame_ns[r] - last[r]);
  if (offsets.empty()) return 0;
  std::nth_element(offsets.begin(), offsets.begin() + offsets.size() / 2, offsets.end());
  return offsets[offsets.size() / 2];
}

}  // namespace

ImuClockMap MapImuClock(const std::vector<int64_t>& frame_ns, const std::vector<int64_t>& raw_hw_ns,
                        const std::vector<int64_t>& imu_ns, const std::vector<int64_t>& imu_row) {
  ImuClockMap out;
  out.ns.assign(imu_ns.size(), 0);
  if (!raw_hw_ns.empty() && SharesClock(raw_hw_ns, imu_ns)) {
    out.source = "raw_hw_ns";
    const std::vector<int64_t> f = NearestFrames(raw_hw_ns, imu_ns, imu_row);
    for (size_t i = 0; i < imu_ns.size(); ++i)
      if (f[i] >= 0 && frame_ns[f[i]] != 0) out.ns[i] = frame_ns[f[i]] + (imu_ns[i] - raw_hw_ns[f[i]]);
    return out;
  }
  if (SharesClock(frame_ns, imu_ns)) {
    out.source = "hardware_ns";
    out.ns = imu_ns;
    return out;
  }
  out.source = "row_offset";
  const int64_t offset = MedianRowOffset(frame_ns, imu_ns, imu_row);
  if (offset != 0)
    for (size_t i = 0; i < imu_ns.size(); ++i) out.ns[i] = imu_ns[i] == 0 ? 0 : imu_ns[i] + offset;
  return out;
}

std::vector<TimeEvent> FindTimeEvents(const std::string& column,
                                      const std::vector<std::vector<int64_t>>& row_stamps,
                                      int64_t start_ns, int64_t end_ns) {
  std::vector<TimeEvent> events;
  std::vector<int64_t> steps;
  struct Seen {
    int64_t row, ns;
  };
  std::vector<Seen> seen;  // stamped samples in order
  for (size_t r = 0; r < row_stamps.size(); ++r)
    for (int64_t s : row_stamps[r])
      if (s != 0) seen.push_back({static_cast<int64_t>(r), s});
  for (size_t i = 1; i < seen.size(); ++i) {
    const Seen &a = seen[i - 1], &b = seen[i];
    if (b.ns < a.ns) events.push_back({TimeEventKind::kReset, column, b.row, b.row, a.ns, b.ns});
    else if (b.ns == a.ns) events.push_back({TimeEventKind::kRepeated, column, b.row, b.row, a.ns, b.ns});
    else steps.push_back(b.ns - a.ns);
  }
  int64_t threshold = 1'000'000'000;
  if (!steps.empty()) {
    std::nth_element(steps.begin(), steps.begin() + steps.size() / 2, steps.end());
    if (steps[steps.size() / 2] < std::numeric_limits<int64_t>::max() / 10)
      threshold = std::max(threshold, 10 * steps[steps.size() / 2]);
  }
  const int64_t rows = static_cast<int64_t>(row_stamps.size());
  auto silence = [&](int64_t row, int64_t to_row, int64_t from, int64_t to) {
    if (to > from && Distance(to, from) > static_cast<uint64_t>(threshold))
      events.push_back({TimeEventKind::kSilence, column, row, to_row, from, to});
  };
  if (seen.empty()) return events;
  if (start_ns != 0) silence(0, seen.front().row, start_ns, seen.front().ns);
  for (size_t i = 1; i < seen.size(); ++i) silence(seen[i - 1].row, seen[i].row, seen[i - 1].ns, seen[i].ns);
  if (end_ns != 0) silence(seen.back().row, rows, seen.back().ns, end_ns);
  return events;
}

}  // namespace reel
