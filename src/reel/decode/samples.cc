// IMU samples, SLAM points and glove frames.
#include <arrow/api.h>

#include <algorithm>
#include <cctype>

#include "reel/decode.h"

namespace reel {

namespace {

// Calls fn(row, list_array, local_row) for every row of a chunked list column.
template <typename Fn>
Status ForEachListRow(const arrow::ChunkedArray& column, const char* what, Fn&& fn) {
  int64_t row = 0;
  for (const auto& chunk : column.chunks()) {
    if (chunk->type_id() != arrow::Type::LIST)
      return Status::Invalid(std::string(what) + " must be a list column, found " +
                             chunk->type()->ToString());
    const auto& list = static_cast<const arrow::ListArray&>(*chunk);
    for (int64_t i = 0; i < list.length(); ++i, ++row) REEL_RETURN_IF_ERROR(fn(row, list, i));
  }
  return Status::OK();
}

Result<const int64_t*> Int64Values(const arrow::ListArray& list, int64_t i, const char* what) {
  if (list.values()->type_id() != arrow::Type::INT64)
    return Status::Invalid(std::string(what) + " must be list<int64>, found " +
                           list.type()->ToString());
  return static_cast<const arrow::Int64Array&>(*list.values()).raw_values() + list.value_offset(i);
}

// Per-row lengths of an optional parallel list column.
Result<std::vector<int64_t>> RowLengths(const arrow::ChunkedArray* column, const char* what) {
  std::vector<int64_t> lengths;
  if (!column) return lengths;
  REEL_RETURN_IF_ERROR(ForEachListRow(*column, what,
                                      [&](int64_t, const arrow::ListArray& l, int64_t i) {
                                        lengths.push_back(l.IsNull(i) ? 0 : l.value_length(i));
                                        return Status::OK();
                                      }));
  return lengths;
}

}  // namespace

Result<ImuSamples> DecodeImu(const arrow::ChunkedArray& imu, const arrow::ChunkedArray* ts_ns) {
  ImuSamples out;
  out.row_offsets.push_back(0);
  REEL_ASSIGN_OR_RETURN(auto ts_lengths, RowLengths(ts_ns, "imu_ts_ns"));
  if (ts_ns && ts_ns->length() != imu.length())
    return Status::Invalid("imu_ts_ns has " + std::to_string(ts_ns->length()) +
                           " rows, observation.imu has " + std::to_string(imu.length()));
  REEL_RETURN_IF_ERROR(ForEachListRow(
      imu, "observation.imu", [&](int64_t row, const arrow::ListArray& list, int64_t i) -> Status {
        const int64_t n = list.IsNull(i) ? 0 : list.value_length(i);
        if (ts_ns && ts_lengths[row] != n)
          return Status::Invalid("row " + std::to_string(row) + ": observation.imu has " +
                                 std::to_string(n) + " samples but imu_ts_ns has " +
                                 std::to_string(ts_lengths[row]) + " stamps");
        if (n > 0) {
          const auto* inner = list.values().get();
          if (inner->type_id() != arrow::Type::FIXED_SIZE_LIST ||
              static_cast<const arrow::FixedSizeListArray&>(*inner).list_type()->list_size() != 6 ||
              static_cast<const arrow::FixedSizeListArray&>(*inner).values()->type_id() !=
                  arrow::Type::FLOAT)
            return Status::Invalid("observation.imu must be list<fixed_size_list<float32>[6]>, found " +
                                   list.type()->ToString());
          const auto& fsl = static_cast<const arrow::FixedSizeListArray&>(*inner);
          const float* base = static_cast<const arrow::FloatArray&>(*fsl.values()).raw_values();
          for (int64_t k = 0; k < n; ++k) {
            const float* v = base + fsl.value_offset(list.value_offset(i) + k);
            out.values.push_back({v[0], v[1], v[2], v[3], v[4], v[5]});
          }
        }
        out.row_offsets.push_back(out.row_offsets.back() + n);
        return Status::OK();
      }));
  if (ts_ns) {
    REEL_RETURN_IF_ERROR(ForEachListRow(*ts_ns, "imu_ts_ns",
                                        [&](int64_t, const arrow::ListArray& l, int64_t i) -> Status {
                                          if (l.IsNull(i) || l.value_length(i) == 0)
                                            return Status::OK();
                                          REEL_ASSIGN_OR_RETURN(const int64_t* v,
                                                                Int64Values(l, i, "imu_ts_ns"));
                                          out.ts_ns.insert(out.ts_ns.end(), v, v + l.value_length(i));
                                          return Status::OK();
                                        }));
  }
  return out;
}

Result<std::vector<SlamPoint>> DecodeSlam(const arrow::ChunkedArray& points,
                                          const arrow::ChunkedArray* ns) {
  REEL_ASSIGN_OR_RETURN(auto ns_lengths, RowLengths(ns, "slam_trajectory_ns"));
  std::vector<const int64_t*> ns_rows;
  if (ns) {
    if (ns->length() != points.length())
      return Status::Invalid("slam_trajectory_ns has " + std::to_string(ns->length()) +
                             " rows, the trajectory has " + std::to_string(points.length()));
    REEL_RETURN_IF_ERROR(ForEachListRow(*ns, "slam_trajectory_ns",
                                        [&](int64_t, const arrow::ListArray& l, int64_t i) -> Status {
                                          if (l.IsNull(i) || l.value_length(i) == 0) {
                                            ns_rows.push_back(nullptr);
                                            return Status::OK();
                                          }
                                          REEL_ASSIGN_OR_RETURN(
                                              const int64_t* v,
                                              Int64Values(l, i, "slam_trajectory_ns"));
                                          ns_rows.push_back(v);
                                          return Status::OK();
                                        }));
  }
  std::vector<SlamPoint> out;
  REEL_RETURN_IF_ERROR(ForEachListRow(
      points, "slam_trajectory",
      [&](int64_t row, const arrow::ListArray& list, int64_t i) -> Status {
        const int64_t n = list.IsNull(i) ? 0 : list.value_length(i);
        if (n % 8 != 0)
          return Status::Invalid("row " + std::to_string(row) + ": slam_trajectory has " +
                                 std::to_string(n) + " values, not a multiple of 8 [t,x,y,z,qx,qy,qz,qw]");
        if (ns && ns_lengths[row] != n / 8)
          return Status::Invalid("row " + std::to_string(row) + ": slam_trajectory has " +
                                 std::to_string(n / 8) + " points but slam_trajectory_ns has " +
                                 std::to_string(ns_lengths[row]) + " stamps (they move in lockstep)");
        if (n == 0) return Status::OK();
        if (list.values()->type_id() != arrow::Type::DOUBLE)
          return Status::Invalid("slam_trajectory must be list<float64>, found " +
                                 list.type()->ToString());
        const double* v =
            static_cast<const arrow::DoubleArray&>(*list.values()).raw_values() + list.value_offset(i);
        for (int64_t k = 0; k < n / 8; ++k) {
          const double* p = v + 8 * k;
          SlamPoint pt{p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], 0, row};
          if (ns && ns_rows[row]) pt.ns = ns_rows[row][k];
          out.push_back(pt);
        }
        return Status::OK();
      }));
  return out;
}

bool IsLeftGlove(const std::string& column) {
  std::string lower = column;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("left") != std::string::npos;
}

void CanonicalLeftGlove(const float* in, float* out) {
  for (int i = 0; i < kGloveSide; ++i)
    for (int j = 0; j < kGloveSide; ++j)
      out[i * kGloveSide + j] = in[(kGloveSide - 1 - j) * kGloveSide + (kGloveSide - 1 - i)];
}

}  // namespace reel
