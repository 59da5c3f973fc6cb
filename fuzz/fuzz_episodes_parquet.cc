// A meta/episodes parquet file (or legacy shard): parquet bytes through reel's reader
// (ReadParquetFile over an in-memory FileSystem), EpisodeRowsFromTable, and the JSON
// string column force_matrix_specs through ResolveForceMatrixSpec.
#include <arrow/api.h>

#include <cstdio>

#include "harness_util.h"
#include "reel/decode.h"
#include "reel/metadata.h"
#include "reel/task.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reel;
  static fuzz::MemFs fs;
  fs.Clear();
  const std::string path = "/mem/task/meta/episodes/chunk-000/episode-000.parquet";
  fs.Put(path, std::string_view(reinterpret_cast<const char*>(data), size));
  (void)ReadParquetSchema(&fs, path);
  auto table = ReadParquetFile(&fs, path);
  if (!table.ok()) return 0;
  auto rows = EpisodeRowsFromTable(**table, path);
  if (fuzz::Debug()) fprintf(stderr, "episodes rows: %s\n", rows.status().ToString().c_str());
  if (!rows.ok()) return 0;
  static const InfoJson info;
  for (const EpisodeRow& row : *rows) {
    (void)row.HasColumn("slam_specs");
    (void)ResolveForceMatrixSpec("observation.left_force_matrix", row, info, "int16");
    (void)ResolveForceMatrixSpec("observation.right_force_matrix", row, info, "float32");
  }
  return 0;
}
