// Internal: the one way the maintenance tools rewrite an existing episode's data parquet
// (backfill-hand-pose, add-columns): read the file, transform its table, write the result
// as a temp of an EpisodeTransaction::Begin(lock, N) and publish it over the old file in one
// journaled commit, so a kill at any moment leaves the old file or the new one.
//
// Everything the transform does not change is kept: the other columns' values and types,
// the schema's key-value metadata, and how the file was written (row-group boundaries, the
// codec and dictionary choice of each column, the parquet format version, whether the Arrow
// schema is stored, statistics). New columns get the codec of the file's first column and
// no dictionary (episode data's setting).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "reel/status.h"
#include "reel/task.h"
#include "write/transaction.h"

namespace arrow {
class Table;
}

namespace reel::internal {

// Returns the new table (same number of rows), or the input itself for "no change".
using DataTransform = std::function<Result<std::shared_ptr<arrow::Table>>(const std::shared_ptr<arrow::Table>&)>;

struct DataRewriteOptions {
  bool dry_run = false;  // transform, write nothing
  // Task files merged by the same commit (EpisodeTransaction::Commit), e.g. features and
  // stats blocks of added columns; read after the transform ran, so the transform may fill
  // it. Null: CommitFiles (info.json and stats.json untouched).
  const TaskFilesUpdate* update = nullptr;
  int64_t max_data_bytes = int64_t{64} << 30;  // a data file beyond this is refused
};

// Rewrites episode `e`'s data file of `task` (opened under `lock`) with `transform`.
// Returns whether the file changed (false: the transform returned an equal table, nothing
// written). Errors name the data file; NotFound when the episode has no data file.
Result<bool> RewriteEpisodeData(TaskLock& lock, const Task& task, const EpisodeEntry& e,
                                const DataTransform& transform, const DataRewriteOptions& options);

}  // namespace reel::internal
