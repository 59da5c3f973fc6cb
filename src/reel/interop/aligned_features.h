// Internal: the kAligned features of one exported episode (ExportMapping::streams): each
// stream paired with the frames on its own clock by the pairing of reel/align.h, so that
// what LeRobot loads for frame i is the sample nearest frame i in time, not the one that
// happens to share its row (multi-device §5.3).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "interop/export_internal.h"

namespace arrow {
class Array;
class Table;
}  // namespace arrow

namespace reel::internal {

// Key -> column (one value per frame, FeatureArrowType of its feature) for every kAligned
// feature of source.plan, from exported episode i's pooled table. Force matrices and
// trajectories: the sample nearest each frame's hardware_ns within the tolerance
// (PairFrames), with `<key>_valid` 1.0 where there is one (values zero where not); the
// IMU window from ImuWindowsOf (zeros and mask 0 when the episode has no IMU); the left
// glove in canonical order. Errors: decoding a force-matrix cell, reading the IMU.
Result<std::map<std::string, std::shared_ptr<arrow::Array>>> BuildAlignedColumns(const ExportSource& source,
                                                                                 size_t i,
                                                                                 const arrow::Table& pooled);

// The pairing tolerance of `streams` for a task of `fps`: tolerance_s, or `default_frames`
// frame periods when it is 0.
int64_t ToleranceNs(const StreamFeatures& streams, double fps, double default_frames);

// An int64 column's values, null as 0 (a missing column: zeros).
std::vector<int64_t> Int64ColumnValues(const arrow::Table& table, const std::string& name);

}  // namespace reel::internal
