// Internal: maint/rewrite_data.h.
#include "maint/rewrite_data.h"

#include <arrow/api.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/schema.h>
#include <parquet/arrow/writer.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/properties.h>
#include <parquet/schema.h>

#include <map>
#include <vector>

#include "io/parquet_io.h"

namespace reel::internal {

namespace {

// How the file was written, as its footer tells.
struct WrittenAs {
  std::vector<int64_t> row_groups;  // rows per row group
  bool store_schema = false;
  parquet::ParquetVersion::type version = parquet::ParquetVersion::PARQUET_2_6;
  struct Leaf {
    parquet::Compression::type codec = parquet::Compression::ZSTD;
    bool dictionary = false;
    bool statistics = true;
  };
  std::map<std::string, Leaf> leaves;  // by dotted column path
  Leaf first;                          // for columns the file did not have
};

WrittenAs ReadWrittenAs(const parquet::FileMetaData& meta) {
  WrittenAs w;
  w.version = meta.version();
  const auto kv = meta.key_value_metadata();
  w.store_schema = kv && kv->Contains("ARROW:schema");
  for (int g = 0; g < meta.num_row_groups(); ++g) w.row_groups.push_back(meta.RowGroup(g)->num_rows());
  if (meta.num_row_groups() == 0) return w;
  auto group = meta.RowGroup(0);
  for (int c = 0; c < group->num_columns(); ++c) {
    auto chunk = group->ColumnChunk(c);
    WrittenAs::Leaf leaf{chunk->compression(), chunk->has_dictionary_page(), chunk->is_stats_set()};
    w.leaves[meta.schema()->Column(c)->path()->ToDotString()] = leaf;
    if (c == 0) w.first = {leaf.codec, false, leaf.statistics};
  }
  return w;
}

std::shared_ptr<parquet::WriterProperties> PropertiesFor(const WrittenAs& w, const parquet::SchemaDescriptor& schema) {
  parquet::WriterProperties::Builder b;
  b.version(w.version);
  b.compression(w.first.codec);
  b.disable_dictionary();
  for (int c = 0; c < schema.num_columns(); ++c) {
    const std::string path = schema.Column(c)->path()->ToDotString();
    auto it = w.leaves.find(path);
    const WrittenAs::Leaf leaf = it != w.leaves.end() ? it->second : w.first;
    b.compression(path, leaf.codec);
    if (leaf.dictionary) b.enable_dictionary(path);
    if (!leaf.statistics) b.disable_statistics(path);
  }
  return b.build();
}

// Writes `table` to `path` with `w`'s row groups (the last one takes any rows beyond them).
Status WriteLike(FileSystem* fs, const std::string& path, const arrow::Table& table, const WrittenAs& w) {
  parquet::ArrowWriterProperties::Builder ab;
  if (w.store_schema) ab.store_schema();
  auto arrow_props = ab.build();
  std::shared_ptr<parquet::SchemaDescriptor> descr;
  arrow::Status st = parquet::arrow::ToParquetSchema(table.schema().get(), *parquet::default_writer_properties(),
                                                     *arrow_props, &descr);
  if (!st.ok()) return Status::Invalid(path + ": " + st.ToString());
  REEL_ASSIGN_OR_RETURN(auto file, fs->NewWritableFile(path));
  auto sink = std::make_shared<FsOutputStream>(std::move(file), path);
  auto writer = parquet::arrow::FileWriter::Open(*table.schema(), arrow::default_memory_pool(), sink,
                                                 PropertiesFor(w, *descr), arrow_props);
  if (!writer.ok()) return Status::IOError(path + ": " + writer.status().ToString());
  int64_t offset = 0;
  for (size_t g = 0; g < w.row_groups.size() && st.ok(); ++g) {
    const bool last = g + 1 == w.row_groups.size();
    const int64_t rows = last ? table.num_rows() - offset : std::min(w.row_groups[g], table.num_rows() - offset);
    if (rows <= 0 && !last) continue;
    st = (*writer)->WriteTable(*table.Slice(offset, rows), std::max<int64_t>(rows, 1));
    offset += rows;
  }
  if (st.ok() && w.row_groups.empty()) st = (*writer)->WriteTable(table, std::max<int64_t>(table.num_rows(), 1));
  if (st.ok()) st = (*writer)->Close();
  if (st.ok()) st = sink->Close();  // Close() fsyncs
  if (!st.ok()) return Status::IOError(path + ": " + st.ToString());
  return Status::OK();
}

}  // namespace

Result<bool> RewriteEpisodeData(TaskLock& lock, const Task& task, const EpisodeEntry& e,
                                const DataTransform& transform, const DataRewriteOptions& options) {
  if (e.data_path.empty())
    return Status::NotFound("episode " + std::to_string(e.episode_index) + " has no data file");
  const std::string path = task.Path(e.data_path);
  REEL_ASSIGN_OR_RETURN(FileInfo info, task.fs()->Stat(path));
  if (static_cast<int64_t>(info.size) > options.max_data_bytes)
    return Status::Invalid(path + ": " + std::to_string(info.size) + " bytes, more than the rewrite limit of " +
                           std::to_string(options.max_data_bytes));
  REEL_ASSIGN_OR_RETURN(auto reader, OpenParquet(task.fs(), path, false));
  const WrittenAs written = ReadWrittenAs(*reader->parquet_reader()->metadata());
  REEL_ASSIGN_OR_RETURN(auto table, ReadColumns(*reader, {}, path));
  reader.reset();
  auto result = transform(table);
  if (!result.ok()) return result.status();
  const std::shared_ptr<arrow::Table>& updated = *result;
  if (updated->num_rows() != table->num_rows())
    return Status::Invalid(path + ": a rewrite changed the row count (" + std::to_string(table->num_rows()) + " -> " +
                           std::to_string(updated->num_rows()) + ")");
  const bool changed = updated != table && !updated->Equals(*table, /*check_metadata=*/true);
  if (!changed || options.dry_run) return changed;
  REEL_ASSIGN_OR_RETURN(auto txn, EpisodeTransaction::Begin(&lock, e.episode_index));
  REEL_ASSIGN_OR_RETURN(std::string temp, txn->NewTemp(e.data_path, "data"));
  REEL_RETURN_IF_ERROR(WriteLike(task.fs(), temp, *updated, written));
  Status st = options.update ? txn->Commit(*options.update) : txn->CommitFiles();
  if (!st.ok()) return st.WithContext(path);
  return true;
}

}  // namespace reel::internal
