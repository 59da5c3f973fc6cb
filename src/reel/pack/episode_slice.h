// Internal: the single-row episodes file of a pack when episode N's row lives in a
// legacy multi-row shard (contract §9: "旧分片回退时打成单行切片").
#pragma once

#include <cstdint>
#include <string>

#include "reel/fs.h"
#include "reel/status.h"

namespace reel::internal {

// Reads the shard at `shard_path` (through `task_fs`), keeps the one row whose
// episode_index is `episode_index`, and writes it (same schema, same column order) as a
// parquet at `out_path` (through `out_fs`), fsynced. Errors: NotFound naming the shard
// when no row has that index; Invalid when several do (the shard is ambiguous); those
// of the reader and the writer.
Status WriteSingleRowSlice(FileSystem* task_fs, const std::string& shard_path, int64_t episode_index,
                           FileSystem* out_fs, const std::string& out_path);

}  // namespace reel::internal
