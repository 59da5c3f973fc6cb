// Internal: parquet helpers shared by the task reader and the checker.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "reel/fs.h"
#include "reel/status.h"

namespace arrow {
class Table;
}
namespace parquet::arrow {
class FileReader;
}

namespace reel::internal {

// Opens a parquet file; Corruption naming `path` when it is not parquet.
Result<std::shared_ptr<parquet::arrow::FileReader>> OpenParquet(FileSystem* fs,
                                                               const std::string& path,
                                                               bool use_threads);
// Leaf column indices of the named top-level columns; NotFound for an absent name.
Result<std::vector<int>> LeafIndices(const parquet::arrow::FileReader& reader,
                                     const std::vector<std::string>& columns,
                                     const std::string& path);
Result<std::shared_ptr<arrow::Table>> ReadParquetTable(FileSystem* fs, const std::string& path,
                                                       const std::vector<std::string>& columns,
                                                       bool use_threads);

// Reads those of `columns` that the file has (a narrower read than ReadParquetTable).
Result<std::shared_ptr<arrow::Table>> ReadParquetColumnsPresent(FileSystem* fs,
                                                                const std::string& path,
                                                                const std::vector<std::string>& columns);

// Runs fn(i) for i in [0, n) on up to `threads` threads.
void ParallelFor(int64_t n, int threads, const std::function<void(int64_t)>& fn);

}  // namespace reel::internal
