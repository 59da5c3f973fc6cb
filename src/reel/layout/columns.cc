#include "reel/columns.h"

#include <arrow/api.h>

#include <algorithm>

namespace reel {

ColumnFamily ClassifyColumn(const std::string& name, const std::vector<std::string>& sensors) {
  using F = ColumnFamily;
  if (name == "episode_index" || name == "frame_index" || name == "task_index" ||
      name == "hardware_ns" || name == "raw_hw_ns")
    return F::kKeyInt64;
  if (name == "timestamp") return F::kTimestamp;
  if (name == "wall_time") return F::kWallTime;
  if (name == "action") return F::kAction;
  if (name == "depth_ns" || name == "host_ns") return F::kForensicInt64;
  if (name == "rgb_dup" || name == "depth_dup" || name == "ts_src") return F::kForensicInt8;
  if (name == "rgb_gap" || name == "depth_gap") return F::kForensicInt32;
  if (name.starts_with("status.")) return F::kStatus;
  if (name == "imu_ts_ns") return F::kImuTimestamps;
  if (name == "observation.imu") return F::kImuSamples;
  if (!name.starts_with("observation.")) return F::kUnknown;
  if (name.ends_with("slam_trajectory_ns")) return F::kSlamStamps;
  if (name.ends_with("_ns")) return F::kScalarNs;
  if (name.ends_with("_force_matrix")) return F::kForceMatrix;
  if (name.ends_with("slam_trajectory")) return F::kSlamPoints;
  if (name.ends_with("_state") || name.ends_with("_force")) return F::kStateOrForce;
  if (name.ends_with("_hand_pose")) return F::kHandPose;
  if (name.ends_with("_imu_quat")) return F::kGloveImuQuat;
  if (name.ends_with("_imu_valid")) return F::kGloveImuValid;
  const std::string sensor = name.substr(12);
  if (name.ends_with("_glove") || std::find(sensors.begin(), sensors.end(), sensor) != sensors.end())
    return F::kGlove;
  return F::kUnknown;
}

std::vector<std::shared_ptr<arrow::DataType>> ArrowTypesOf(ColumnFamily family, int64_t sensor_dim) {
  using F = ColumnFamily;
  auto fixed = [](int32_t n) { return arrow::fixed_size_list(arrow::float32(), n); };
  switch (family) {
    case F::kKeyInt64:
    case F::kScalarNs:
    case F::kForensicInt64: return {arrow::int64()};
    case F::kTimestamp: return {arrow::float32()};
    case F::kWallTime: return {arrow::float64()};
    case F::kAction: return {fixed(1)};
    case F::kStatus: return {arrow::utf8(), arrow::large_utf8()};
    case F::kImuTimestamps:
    case F::kSlamStamps: return {arrow::list(arrow::int64())};
    case F::kImuSamples: return {arrow::list(fixed(6))};
    case F::kForceMatrix: return {arrow::list(arrow::int16()), arrow::list(arrow::float32())};
    case F::kSlamPoints: return {arrow::list(arrow::float64())};
    case F::kStateOrForce: return {fixed(3)};
    case F::kHandPose: return {fixed(63)};
    case F::kGloveImuQuat: return {fixed(64)};
    case F::kGloveImuValid: return {fixed(16)};
    case F::kGlove: return {fixed(static_cast<int32_t>(sensor_dim > 0 ? sensor_dim : 256))};
    case F::kForensicInt8: return {arrow::int8()};
    case F::kForensicInt32: return {arrow::int32()};
    case F::kUnknown: return {};
  }
  return {};
}

namespace {

// Structural equality that ignores the names of list fields ("item" vs "element").
bool SameShape(const arrow::DataType& a, const arrow::DataType& b) {
  if (a.id() != b.id() || a.num_fields() != b.num_fields()) return false;
  if (a.id() == arrow::Type::FIXED_SIZE_LIST &&
      static_cast<const arrow::FixedSizeListType&>(a).list_size() !=
          static_cast<const arrow::FixedSizeListType&>(b).list_size())
    return false;
  for (int i = 0; i < a.num_fields(); ++i)
    if (!SameShape(*a.field(i)->type(), *b.field(i)->type())) return false;
  return true;
}

}  // namespace

bool HasFamilyType(ColumnFamily family, int64_t sensor_dim, const arrow::DataType& type) {
  for (const auto& want : ArrowTypesOf(family, sensor_dim))
    if (SameShape(*want, type)) return true;
  return false;
}

std::string FamilyTypeName(ColumnFamily family, int64_t sensor_dim) {
  auto types = ArrowTypesOf(family, sensor_dim);
  std::string out;
  for (size_t i = 0; i < types.size(); ++i) out += (i ? " or " : "") + types[i]->ToString();
  return out;
}

bool IsListFamily(ColumnFamily family) {
  auto types = ArrowTypesOf(family, 256);
  return !types.empty() && (types[0]->id() == arrow::Type::LIST ||
                            types[0]->id() == arrow::Type::FIXED_SIZE_LIST);
}

}  // namespace reel
