// Internal: builds one episode's data parquet from frame rows, streaming row
// groups to a dotfile temp so memory stays bounded by `row_group_rows`.
//
// Sparse columns (reference-behaviour.md "data parquet"): a column exists only
// once the episode supplies it; earlier rows are filled with [0]*d, [] or 0
// ("connected" for status.*). When a column first appears after row groups were
// already written, the current segment is closed and a new one started with the
// wider schema; Finish() then rewrites the segments into one file (row group by
// row group, so memory stays bounded). The common case is one segment and no
// rewrite.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "reel/columns.h"
#include "reel/decode.h"
#include "reel/metadata.h"
#include "reel/recorder.h"

namespace reel::internal {

class EpisodeData {
 public:
  struct Options {
    FileSystem* fs = nullptr;
    std::string final_path;  // absolute path of data/chunk-CCC/episode-FFF.parquet
    int64_t episode_index = 0;
    int64_t row_group_rows = 256;
    // ...or sooner, once the buffered rows hold about this many bytes of values.
    int64_t row_group_bytes = 16 << 20;
    std::map<std::string, ForceMatrixSpec> force_matrix_specs;  // column -> tier spec
  };
  explicit EpisodeData(Options options);
  ~EpisodeData();

  // Validates the row against the contract's naming and shape rules, then buffers it.
  Status Append(const FrameRow& row);
  // Writes everything out; returns the fsynced temp file to rename over final_path,
  // or "" when the episode has no rows (no rows -> no data file).
  Result<std::string> Finish();
  // Removes every temp file written so far.
  void Discard();

  int64_t rows() const { return rows_; }
  // Columns in file order, with their families, once Finish() succeeded.
  std::vector<std::pair<std::string, ColumnFamily>> Columns() const;
  // Fixed-size list widths of the columns (for feature shapes).
  int32_t WidthOf(const std::string& column) const;
  // Frame-level and sample-level stats blocks of this episode (contract §4).
  OrderedMap<StatsBlock> Stats() const;

  struct Column;

 private:
  Status ValidateName(const std::string& name, ColumnFamily family) const;
  Result<Column*> Ensure(const std::string& name, ColumnFamily family, int32_t width,
                         std::shared_ptr<arrow::DataType> type);
  Status FlushRowGroup();
  // The value bytes `row` adds to the builders (an estimate for row_group_bytes).
  int64_t ApproxRowBytes(const FrameRow& row) const;
  Status OpenSegment();
  Status CloseSegment();
  Result<std::string> MergeSegments();
  // Removes the stamp columns (*_ns, *slam_trajectory_ns) whose every stamp is 0: a
  // 0 stamp means "no stamp", and an episode without one has no column (multi-device
  // §8.1.3). Returns whether one was removed.
  bool DropUnstampedColumns();
  // Adds observation.left_hand_pose and right_hand_pose once a glove appears: zero
  // placeholders that post-processing backfills (contract §7.2, multi-device §4.5).
  Status EnsureHandPosePlaceholders();
  // Append's steps; `touched` collects the columns given a value on this row.
  Status ValidateRow(const FrameRow& row);
  Status AppendKeys(const FrameRow& row, std::map<std::string, bool>& touched);
  Status AppendFixed(const FrameRow& row, std::map<std::string, bool>& touched);
  Status AppendScalars(const FrameRow& row, std::map<std::string, bool>& touched);
  Status AppendImu(const FrameRow& row, std::map<std::string, bool>& touched);
  Status AppendSlam(const FrameRow& row, std::map<std::string, bool>& touched);
  Status AppendForceMatrices(const FrameRow& row, std::map<std::string, bool>& touched);
  Status AppendStatuses(const FrameRow& row, std::map<std::string, bool>& touched);
  std::string TempPath(const std::string& tag);

  Options options_;
  int64_t rows_ = 0;           // rows appended
  int64_t flushed_rows_ = 0;   // rows already written to segments
  int64_t buffered_bytes_ = 0; // ApproxRowBytes of the rows not yet flushed
  std::vector<std::unique_ptr<Column>> columns_;
  std::map<std::string, Column*> by_name_;
  struct Segment;
  std::vector<std::unique_ptr<Segment>> segments_;
  bool schema_grew_ = false;  // a column appeared after the open segment's schema
  // Stats accumulators (sum, sum of squares, min, max per dimension).
  struct Accumulator;
  std::map<std::string, std::unique_ptr<Accumulator>> stats_;
};

}  // namespace reel::internal
