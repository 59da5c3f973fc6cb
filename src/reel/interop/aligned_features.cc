#include "interop/aligned_features.h"

#include <arrow/api.h>

#include <cmath>
#include <cstring>

#include "reel/align.h"
#include "reel/decode.h"

namespace reel::internal {
namespace {

using Columns = std::map<std::string, std::shared_ptr<arrow::Array>>;

// `values` (rows x product(shape)) as the nested fixed_size_list column of `shape`.
template <typename ArrowArray, typename T>
Result<std::shared_ptr<arrow::Array>> ShapedColumn(std::vector<T> values, const std::vector<int64_t>& shape) {
  const int64_t total = static_cast<int64_t>(values.size());
  std::shared_ptr<arrow::Array> out = std::make_shared<ArrowArray>(total, arrow::Buffer::FromVector(std::move(values)));
  for (auto d = shape.rbegin(); d != shape.rend(); ++d) {
    if (shape.size() == 1 && *d == 1) break;  // shape [1]: a scalar column
    auto made = arrow::FixedSizeListArray::FromArrays(out, static_cast<int32_t>(*d));
    if (!made.ok()) return Status::Invalid("building an aligned column: " + made.status().ToString());
    out = *made;
  }
  return out;
}


// 1.0 where a frame has a paired sample, else 0.0, as a [1] feature.
Result<std::shared_ptr<arrow::Array>> ValidColumn(const std::vector<uint8_t>& ok) {
  std::vector<float> v(ok.size(), 0.0f);
  for (size_t r = 0; r < ok.size(); ++r) v[r] = ok[r] ? 1.0f : 0.0f;
  return ShapedColumn<arrow::FloatArray>(std::move(v), {1});
}

// Force matrix X: the cell of the X_ns sample nearest each frame, decoded (mN), whole or
// its fz plane (reel/align.h PairForceMatrices). A stamped row whose cell is empty pairs with nothing.
Status ForceMatrixColumns(const ExportSource& src, size_t i, const arrow::Table& pooled, const ExportFeature& f,
                          const std::vector<int64_t>& frame_ns, int64_t tolerance_ns, Columns* out) {
  const std::string& name = f.columns[0];
  auto column = pooled.GetColumnByName(name);
  if (!column) return Status::NotFound("no column " + name);
  const auto& list = static_cast<const arrow::BaseListType&>(*column->type());
  const std::string dtype = list.value_type()->id() == arrow::Type::INT16 ? "int16" : "float32";
  REEL_ASSIGN_OR_RETURN(auto spec, ResolveForceMatrixSpec(name, src.rows[i], src.task->info(), dtype));
  const ForcePlane plane = f.shape.size() == 3 ? ForcePlane::kFull : ForcePlane::kFz;
  REEL_ASSIGN_OR_RETURN(AlignedForceMatrices m, PairForceMatrices(*column, Int64ColumnValues(pooled, name + "_ns"),
                                                                  frame_ns, spec.spec, plane, 1, tolerance_ns));
  REEL_ASSIGN_OR_RETURN((*out)[f.key], ShapedColumn<arrow::FloatArray>(std::move(m.values), f.shape));
  REEL_ASSIGN_OR_RETURN((*out)[f.key + "_valid"], ValidColumn(m.valid));
  return Status::OK();
}

// The number of values in a list column's rows together.
int64_t ListValues(const arrow::ChunkedArray& column) {
  int64_t total = 0;
  if (column.type()->id() != arrow::Type::LIST) return 0;
  for (const auto& chunk : column.chunks()) {
    const auto& l = static_cast<const arrow::ListArray&>(*chunk);
    if (l.length() > 0) total += l.value_offset(l.length()) - l.value_offset(0);
  }
  return total;
}

// Trajectory X: the point of X (stamped by the list X_ns) nearest each frame.
Status TrajectoryColumns(const arrow::Table& pooled, const ExportFeature& f, const std::vector<int64_t>& frame_ns,
                         int64_t tolerance_ns, Columns* out) {
  const std::string& name = f.columns[0];
  // An unstamped episode has no _ns list (multi-device §8.1.3; the export fills it with []):
  // its points have no time, so no frame gets one (§8.2.4: no stamp, no pairing).
  auto stamps = pooled.GetColumnByName(name + "_ns");
  if (stamps && ListValues(*stamps) == 0) stamps = nullptr;
  REEL_ASSIGN_OR_RETURN(auto points, DecodeSlam(*pooled.GetColumnByName(name), stamps.get()));
  std::vector<int64_t> ns, rows;
  for (const SlamPoint& pt : points) ns.push_back(pt.ns), rows.push_back(pt.row);
  const auto p = PairFrames(frame_ns, ns, rows, tolerance_ns, AlignMethod::kNearest);
  std::vector<double> values(p.size() * 8, 0.0);
  std::vector<uint8_t> ok(p.size(), 0);
  for (size_t r = 0; r < p.size(); ++r) {
    if (p[r].a < 0) continue;
    const SlamPoint& pt = points[p[r].a];
    const double v[8] = {pt.t, pt.x, pt.y, pt.z, pt.qx, pt.qy, pt.qz, pt.qw};
    std::memcpy(&values[r * 8], v, sizeof v);
    ok[r] = 1;
  }
  REEL_ASSIGN_OR_RETURN((*out)[f.key], ShapedColumn<arrow::DoubleArray>(std::move(values), {8}));
  REEL_ASSIGN_OR_RETURN((*out)[f.key + "_valid"], ValidColumn(ok));
  return Status::OK();
}

// observation.imu: ImuWindowsOf's causal window and its mask; an episode without IMU
// samples gets empty windows (every slot masked).
Status ImuColumns(const ExportSource& src, size_t i, const arrow::Table& pooled, const ExportFeature& f,
                  Columns* out) {
  const int64_t n = pooled.num_rows();
  const int64_t k = f.shape[0];
  std::vector<float> values(static_cast<size_t>(n * k * 6), 0.0f), mask(static_cast<size_t>(n * k), 0.0f);
  // An episode without IMU samples (or without the columns, which the export fills with [])
  // gets empty windows without reading it again.
  auto stamps = pooled.GetColumnByName("imu_ts_ns");
  Result<ImuWindows> windows = Status::NotFound("no IMU samples");
  if (stamps && ListValues(*stamps) > 0) windows = ImuWindowsOf(*src.task, src.episodes[i].episode_index, k);
  if (windows.ok()) {
    if (static_cast<int64_t>(windows->valid.size()) != n * k)
      return Status::Invalid("IMU windows of " + std::to_string(windows->valid.size() / k) + " frames, the episode has " +
                             std::to_string(n));
    values = std::move(windows->values);
    for (size_t c = 0; c < mask.size(); ++c) mask[c] = windows->valid[c] ? 1.0f : 0.0f;
  } else if (windows.status().code() != StatusCode::kNotFound) {
    return windows.status();
  }
  REEL_ASSIGN_OR_RETURN((*out)[f.key], ShapedColumn<arrow::FloatArray>(std::move(values), f.shape));
  REEL_ASSIGN_OR_RETURN((*out)["observation.imu_mask"], ShapedColumn<arrow::FloatArray>(std::move(mask), {k}));
  return Status::OK();
}

// The left glove's frames in canonical order (CanonicalLeftGlove), row by row.
Status GloveColumn(const arrow::Table& pooled, const ExportFeature& f, Columns* out) {
  auto chunked = pooled.GetColumnByName(f.columns[0]);
  auto combined = arrow::Concatenate(chunked->chunks());
  if (!combined.ok()) return Status::IOError(f.key + ": " + combined.status().ToString());
  const auto& list = static_cast<const arrow::FixedSizeListArray&>(**combined);
  const auto& floats = static_cast<const arrow::FloatArray&>(*list.values());
  const int64_t n = list.length(), w = f.width;
  std::vector<float> values(static_cast<size_t>(n * w), 0.0f);
  for (int64_t r = 0; r < n; ++r)
    if (!list.IsNull(r)) CanonicalLeftGlove(floats.raw_values() + list.value_offset(r), &values[r * w]);
  REEL_ASSIGN_OR_RETURN((*out)[f.key], ShapedColumn<arrow::FloatArray>(std::move(values), {w}));
  return Status::OK();
}

}  // namespace

int64_t ToleranceNs(const StreamFeatures& streams, double fps, double default_frames) {
  const double s = streams.tolerance_s > 0 ? streams.tolerance_s : default_frames / (fps > 0 ? fps : 30.0);
  return static_cast<int64_t>(std::llround(s * 1e9));
}

std::vector<int64_t> Int64ColumnValues(const arrow::Table& table, const std::string& name) {
  std::vector<int64_t> out(static_cast<size_t>(table.num_rows()), 0);
  auto column = table.GetColumnByName(name);
  if (!column || column->type()->id() != arrow::Type::INT64) return out;
  int64_t row = 0;
  for (const auto& chunk : column->chunks()) {
    const auto& a = static_cast<const arrow::Int64Array&>(*chunk);
    for (int64_t k = 0; k < a.length(); ++k, ++row) out[row] = a.IsNull(k) ? 0 : a.Value(k);
  }
  return out;
}

Result<Columns> BuildAlignedColumns(const ExportSource& src, size_t i, const arrow::Table& pooled) {
  Columns out;
  const std::vector<int64_t> frame_ns = Int64ColumnValues(pooled, "hardware_ns");
  const int64_t tolerance = ToleranceNs(src.streams, src.task->info().fps, 0.5);
  const std::string where = src.task->Path(src.episodes[i].data_path);
  for (const ExportFeature& f : src.plan.features) {
    if (f.source != FeatureSource::kAligned) continue;
    Status st;
    switch (f.aligned) {
      case AlignedKind::kForceMatrix: st = ForceMatrixColumns(src, i, pooled, f, frame_ns, tolerance, &out); break;
      case AlignedKind::kTrajectory: st = TrajectoryColumns(pooled, f, frame_ns, tolerance, &out); break;
      case AlignedKind::kImuWindow: st = ImuColumns(src, i, pooled, f, &out); break;
      case AlignedKind::kGlove: st = GloveColumn(pooled, f, &out); break;
      case AlignedKind::kValid:
      case AlignedKind::kImuMask: break;  // made with the feature they qualify
    }
    if (!st.ok()) return st.WithContext(where + ": " + f.key);
  }
  return out;
}

}  // namespace reel::internal
