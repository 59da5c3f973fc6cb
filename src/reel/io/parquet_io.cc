// Parquet files read through the FileSystem interface, with errors that name the file.
#include <arrow/api.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/schema.h>
#include <parquet/arrow/writer.h>
#include <parquet/exception.h>

#include <algorithm>
#include <set>

#include "io/parquet_io.h"

namespace reel::internal {

namespace {

void CollectLeaves(const parquet::arrow::SchemaField& field, std::vector<int>& out) {
  if (field.column_index >= 0) out.push_back(field.column_index);
  for (const auto& child : field.children) CollectLeaves(child, out);
}

}  // namespace

Result<std::shared_ptr<parquet::arrow::FileReader>> OpenParquet(FileSystem* fs,
                                                               const std::string& path,
                                                               bool use_threads) {
  REEL_ASSIGN_OR_RETURN(auto file, fs->OpenRandomAccess(path));
  try {
    auto reader = parquet::arrow::OpenFile(file, arrow::default_memory_pool());
    if (!reader.ok())
      return Status::Corruption(path + ": not a readable parquet file (" +
                                reader.status().message() + ")");
    std::shared_ptr<parquet::arrow::FileReader> shared = std::move(*reader);
    shared->set_use_threads(use_threads);
    // Columns are found by name everywhere; a second column of one name would be
    // ambiguous, and Arrow's by-name lookup answers it with no column at all.
    std::set<std::string> names;
    for (const auto& field : shared->manifest().schema_fields)
      if (!names.insert(field.field->name()).second)
        return Status::Corruption(path + ": the column \"" + field.field->name() +
                                  "\" appears more than once");
    return shared;
  } catch (const std::exception& e) {
    return Status::Corruption(path + ": not a readable parquet file (" + e.what() + ")");
  }
}

Result<std::vector<int>> LeafIndices(const parquet::arrow::FileReader& reader,
                                     const std::vector<std::string>& columns,
                                     const std::string& path) {
  std::shared_ptr<arrow::Schema> schema;
  const auto& fields = reader.manifest().schema_fields;
  std::vector<int> leaves;
  for (const std::string& name : columns) {
    bool found = false;
    for (const auto& field : fields) {
      if (field.field->name() != name) continue;
      CollectLeaves(field, leaves);
      found = true;
      break;
    }
    if (!found) return Status::NotFound(path + ": no column \"" + name + "\" in this episode");
  }
  return leaves;
}

}  // namespace reel::internal

namespace reel {
namespace internal {

namespace {

// Reads the named top-level columns (all when empty) of an open file.
Result<std::shared_ptr<arrow::Table>> ReadColumns(parquet::arrow::FileReader& reader,
                                                  const std::vector<std::string>& columns,
                                                  const std::string& path) {
  try {
    arrow::Result<std::shared_ptr<arrow::Table>> table;
    if (columns.empty()) {
      table = reader.ReadTable();
    } else {
      REEL_ASSIGN_OR_RETURN(auto leaves, LeafIndices(reader, columns, path));
      table = reader.ReadTable(leaves);
    }
    if (!table.ok())
      return Status::Corruption(path + ": cannot read parquet data (" + table.status().message() +
                                ")");
    return *table;
  } catch (const std::exception& e) {
    return Status::Corruption(path + ": cannot read parquet data (" + e.what() + ")");
  }
}

}  // namespace

Result<std::shared_ptr<arrow::Table>> ReadParquetTable(FileSystem* fs, const std::string& path,
                                                       const std::vector<std::string>& columns,
                                                       bool use_threads) {
  REEL_ASSIGN_OR_RETURN(auto reader, OpenParquet(fs, path, use_threads));
  return ReadColumns(*reader, columns, path);
}

Result<std::shared_ptr<arrow::Table>> ReadParquetColumnsPresent(
    FileSystem* fs, const std::string& path, const std::vector<std::string>& columns) {
  REEL_ASSIGN_OR_RETURN(auto reader, OpenParquet(fs, path, false));
  std::vector<std::string> present;
  for (const auto& field : reader->manifest().schema_fields)
    if (std::find(columns.begin(), columns.end(), field.field->name()) != columns.end())
      present.push_back(field.field->name());
  if (present.empty())
    return Status::Invalid(path + ": has none of the columns asked for (first: " + columns.front() +
                           ")");
  return ReadColumns(*reader, present, path);
}

std::shared_ptr<parquet::WriterProperties> ParquetWriterProperties(const ParquetWriteOptions& options) {
  parquet::WriterProperties::Builder b;
  b.compression(parquet::Compression::ZSTD);
  if (!options.dictionary) b.disable_dictionary();
  return b.build();
}

std::shared_ptr<parquet::ArrowWriterProperties> ParquetArrowProperties(const ParquetWriteOptions& options) {
  parquet::ArrowWriterProperties::Builder b;
  if (options.store_schema) b.store_schema();
  return b.build();
}

Status WriteParquet(FileSystem* fs, const std::string& path, const arrow::Table& table,
                    const ParquetWriteOptions& options) {
  REEL_RETURN_IF_ERROR(fs->CreateDirs(DirName(path)));
  REEL_ASSIGN_OR_RETURN(auto file, fs->NewWritableFile(path));
  auto sink = std::make_shared<FsOutputStream>(std::move(file), path);
  arrow::Status st = parquet::arrow::WriteTable(table, arrow::default_memory_pool(), sink, options.row_group_rows,
                                                 ParquetWriterProperties(options), ParquetArrowProperties(options));
  if (st.ok()) st = sink->Close();  // Close() fsyncs
  if (!st.ok()) return Status::IOError(path + ": " + st.ToString());
  return Status::OK();
}

}  // namespace internal
}  // namespace reel
