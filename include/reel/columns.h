// Column families of the data parquet: what a column name means and which
// Arrow type it has (contract §7; multi-device §3, §4.6, App. C;
// reference-behaviour.md "data parquet"). The writer types columns with this
// table and the checker verifies them against it, so the two cannot disagree.
//
// Thread safety: pure functions.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace arrow {
class DataType;
}

namespace reel {

enum class ColumnFamily {
  kKeyInt64,        // episode_index, frame_index, task_index, hardware_ns, raw_hw_ns
  kTimestamp,       // timestamp (float32)
  kWallTime,        // wall_time (float64)
  kAction,          // action fixed_size_list<float32>[1]
  kStatus,          // status.<id> string
  kImuTimestamps,   // imu_ts_ns list<int64>
  kImuSamples,      // observation.imu list<fixed_size_list<float32>[6]>
  kSlamStamps,      // *slam_trajectory_ns list<int64>
  kScalarNs,        // other observation.*_ns int64
  kForceMatrix,     // *_force_matrix list<int16> | list<float32>
  kSlamPoints,      // *slam_trajectory list<float64>
  kStateOrForce,    // *_state, *_force fixed_size_list<float32>[3]
  kHandPose,        // *_hand_pose fixed_size_list<float32>[63]
  kGloveImuQuat,    // *_imu_quat fixed_size_list<float32>[64]
  kGloveImuValid,   // *_imu_valid fixed_size_list<float32>[16]
  kGlove,           // observation.<sensor> fixed_size_list<float32>[sensor_dim]
  kForensicInt64,   // depth_ns, host_ns
  kForensicInt8,    // rgb_dup, depth_dup, ts_src
  kForensicInt32,   // rgb_gap, depth_gap
  kUnknown,         // anything else: not typed by the contract
};

// Classifies `name`. Gripper suffixes are tested in the writer's order:
// slam_trajectory_ns, _ns, _force_matrix, slam_trajectory, _state/_force. A
// column observation.<x> is a glove when x is in `sensors` or ends with "_glove".
ColumnFamily ClassifyColumn(const std::string& name, const std::vector<std::string>& sensors);

// The Arrow types a family's column may have (force matrices: two), with
// `sensor_dim` for gloves. Empty for kUnknown.
std::vector<std::shared_ptr<arrow::DataType>> ArrowTypesOf(ColumnFamily family, int64_t sensor_dim);

// True when `type` is one of ArrowTypesOf(family) (list field names ignored).
bool HasFamilyType(ColumnFamily family, int64_t sensor_dim, const arrow::DataType& type);

// Human-readable expected type, e.g. "fixed_size_list<float32>[3]".
std::string FamilyTypeName(ColumnFamily family, int64_t sensor_dim);

// True for list-typed families (whose rows must never be null).
bool IsListFamily(ColumnFamily family);

}  // namespace reel
