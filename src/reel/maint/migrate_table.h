// Internal: one v1.0 session's data parquet rows as a pooled data table (reel migrate).
//
// v1.0 (shared/docs/v1.0-layout.md) keeps one parquet per sensor (data/<sensor>/chunk-0000/
// chunk_000000.parquet, plus data/imu/... on stereo sessions) and a timestamps.json with one
// entry per frame, two on stereo frames (left and right eye). The pooled table has one row
// per frame_index (contract-decisions.md "v1.0 stereo sessions"): the frame's first
// timestamps.json entry gives timestamp, wall_time and hardware_ns (0 when absent); every other column is
// copied, values unchanged, from the frame's first row of the first table (sensors in
// name order, then imu) that has the column; a frame a table lacks gets the column's
// default (zeros, [] or "connected", reference-behaviour.md "data parquet").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "reel/status.h"

namespace arrow {
class Table;
}

namespace reel::internal {

// One frame from timestamps.json (its first entry).
struct LegacyFrame {
  int64_t frame_index = 0;
  double timestamp = 0.0;
  double wall_time = 0.0;
  int64_t hardware_ns = 0;
};

struct LegacyTable {
  std::string path;  // for messages
  std::shared_ptr<arrow::Table> table;
};

// The pooled table of episode `n`. `frames` ascending by frame_index, unique.
Result<std::shared_ptr<arrow::Table>> PooledTableFromLegacy(int64_t n, const std::vector<LegacyFrame>& frames,
                                                            const std::vector<LegacyTable>& sources);

}  // namespace reel::internal
