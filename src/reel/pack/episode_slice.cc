#include "pack/episode_slice.h"

#include <arrow/api.h>
#include <parquet/arrow/writer.h>
#include <parquet/properties.h>

#include "reel/metadata.h"
#include "reel/task.h"
#include "io/parquet_io.h"

namespace reel::internal {

Status WriteSingleRowSlice(FileSystem* task_fs, const std::string& shard_path, int64_t episode_index,
                           FileSystem* out_fs, const std::string& out_path) {
  REEL_ASSIGN_OR_RETURN(auto table, ReadParquetFile(task_fs, shard_path));
  // Rows are located by the episode_index column, never by position or file name
  // (contract §12); EpisodeRowsFromTable keeps the table's row order.
  REEL_ASSIGN_OR_RETURN(auto rows, EpisodeRowsFromTable(*table, shard_path));
  int64_t found = -1;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].episode_index != episode_index) continue;
    if (found >= 0)
      return Status::Invalid(shard_path + ": legacy shard holds several rows with episode_index " +
                             std::to_string(episode_index));
    found = static_cast<int64_t>(i);
  }
  if (found < 0)
    return Status::NotFound(shard_path + ": legacy shard has no row with episode_index " +
                            std::to_string(episode_index));
  auto row = table->Slice(found, 1);
  // store_schema (the default) keeps the shard's Arrow schema, field metadata included.
  return WriteParquet(out_fs, out_path, *row, {.row_group_rows = 1});
}

}  // namespace reel::internal
