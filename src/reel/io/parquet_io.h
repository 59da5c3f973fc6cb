// Internal: Parquet files read and written through the FileSystem interface, with
// errors that name the file. The one place where reel's parquet writer settings are
// built (ParquetWriterProperties), shared by every area that writes parquet.
#pragma once

#include <arrow/io/interfaces.h>
#include <arrow/result.h>

#include <memory>
#include <string>
#include <vector>

#include "reel/fs.h"
#include "reel/status.h"

namespace arrow {
class Array;
class MemoryPool;
class Table;
}
namespace parquet {
class WriterProperties;
class ArrowWriterProperties;
}  // namespace parquet
namespace parquet::arrow {
class FileReader;
}

namespace reel::internal {

// What a page-level reader needs beside an open FileReader: the file it reads and the
// bounded pool its buffers come from (both live as long as the FileReader).
struct ParquetSource {
  std::shared_ptr<arrow::io::RandomAccessFile> file;
  arrow::MemoryPool* pool = nullptr;
};
// Opens a parquet file; Corruption naming `path` when it is not parquet. `source`, when
// given, receives the file and pool (for ReadListRows).
Result<std::shared_ptr<parquet::arrow::FileReader>> OpenParquet(FileSystem* fs,
                                                               const std::string& path,
                                                               bool use_threads, ParquetSource* source = nullptr);
// The same over a file already open (or bytes already read: arrow::io::BufferReader);
// `path` names it in errors.
Result<std::shared_ptr<parquet::arrow::FileReader>> OpenParquetFile(std::shared_ptr<arrow::io::RandomAccessFile> file,
                                                                   const std::string& path, bool use_threads,
                                                                   ParquetSource* source = nullptr);
// Leaf column indices of the named top-level columns; NotFound for an absent name.
Result<std::vector<int>> LeafIndices(const parquet::arrow::FileReader& reader,
                                     const std::vector<std::string>& columns,
                                     const std::string& path);
// Reads the named top-level columns (all when empty) of an open file.
Result<std::shared_ptr<arrow::Table>> ReadColumns(parquet::arrow::FileReader& reader,
                                                  const std::vector<std::string>& columns,
                                                  const std::string& path);
Result<std::shared_ptr<arrow::Table>> ReadParquetTable(FileSystem* fs, const std::string& path,
                                                       const std::vector<std::string>& columns,
                                                       bool use_threads);

// Per-row element counts of the top-level list column `column`, from its repetition and
// definition levels alone, counted as Arrow's list reader counts them (the list field's
// parquet LevelInfo): values are decoded into a small scratch buffer and dropped, so no
// column-sized buffer is built. For readers that need a list column's shape, not its
// values (the checker's force-matrix rule: a cell is 0 or 187,500 values). A null row is
// -1. NotSupported when the column is not a list of one primitive leaf (INT32, INT64,
// FLOAT, DOUBLE; read it with ReadParquetTable instead); Corruption when the file cannot
// be decoded or its levels disagree with its row groups' row counts.
Result<std::vector<int64_t>> ReadListLengths(parquet::arrow::FileReader& reader, const std::string& column,
                                             const std::string& path);

// Rows `rows` (ascending, distinct) of the top-level list column `column`, as one list
// array of the column's Arrow type holding them in that order. Where the file has an offset
// index (reel's writer and Arrow C++'s default write one; a page then starts at a row) and
// no dictionary page, only the pages holding a wanted row are read (one ReadAt per run of
// adjacent pages), decompressed and decoded, so one force-matrix frame costs one frame,
// not the episode; otherwise each row group holding one is read whole. Corruption when the
// pages disagree with the index; Invalid for rows out of order or range.
Result<std::shared_ptr<arrow::Array>> ReadListRows(parquet::arrow::FileReader& reader, const ParquetSource& source,
                                                   const std::string& column, const std::vector<int64_t>& rows,
                                                   const std::string& path);
// Reads those of `columns` that the file has (a narrower read than ReadParquetTable).
Result<std::shared_ptr<arrow::Table>> ReadParquetColumnsPresent(FileSystem* fs,
                                                                const std::string& path,
                                                                const std::vector<std::string>& columns);

// How reel writes parquet. Every file is ZSTD-compressed; the defaults are those of an
// exported or packed file (pyarrow's write_table defaults but the codec).
struct ParquetWriteOptions {
  // Dictionary pages: off for episode data (floats and fixed-size lists gain nothing and
  // the writer's memory would grow with distinct values), on elsewhere.
  bool dictionary = true;
  // The Arrow schema in the file metadata (ARROW:schema) keeps fixed_size_list and other
  // Arrow types exact on read-back. Episodes rows are written without it, as they always were.
  bool store_schema = true;
  int64_t row_group_rows = 64 * 1024;  // WriteParquet's row-group size
};
std::shared_ptr<parquet::WriterProperties> ParquetWriterProperties(const ParquetWriteOptions& options);
std::shared_ptr<parquet::ArrowWriterProperties> ParquetArrowProperties(const ParquetWriteOptions& options);

// Writes `table` to `path` (parent directories created), fsynced on return.
Status WriteParquet(FileSystem* fs, const std::string& path, const arrow::Table& table,
                    const ParquetWriteOptions& options = {});

// An arrow::io::OutputStream over reel::WritableFile, so the parquet writer's bytes go
// through the FileSystem interface (and its injected faults). Close() syncs: a closed
// stream's bytes are durable.
class FsOutputStream final : public arrow::io::OutputStream {
 public:
  FsOutputStream(std::unique_ptr<WritableFile> file, std::string path)
      : file_(std::move(file)), path_(std::move(path)) {}

  arrow::Status Write(const void* data, int64_t nbytes) override {
    Status st = file_->Append(std::string_view(static_cast<const char*>(data), static_cast<size_t>(nbytes)));
    if (!st.ok()) return arrow::Status::IOError(st.message());
    position_ += nbytes;
    return arrow::Status::OK();
  }
  arrow::Status Flush() override { return arrow::Status::OK(); }
  arrow::Result<int64_t> Tell() const override { return position_; }
  bool closed() const override { return closed_; }
  arrow::Status Close() override {
    if (closed_) return arrow::Status::OK();
    closed_ = true;
    Status st = file_->Sync();
    if (st.ok()) st = file_->Close();
    return st.ok() ? arrow::Status::OK() : arrow::Status::IOError(st.message());
  }

 private:
  std::unique_ptr<WritableFile> file_;
  std::string path_;
  int64_t position_ = 0;
  bool closed_ = false;
};

}  // namespace reel::internal
