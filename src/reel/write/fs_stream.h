// Internal: an arrow::io::OutputStream over reel::WritableFile, so the parquet
// writer's bytes go through the FileSystem interface (and its injected faults).
#pragma once

#include <arrow/io/interfaces.h>

#include <memory>

#include "reel/fs.h"

namespace reel::internal {

class FsOutputStream final : public arrow::io::OutputStream {
 public:
  FsOutputStream(std::unique_ptr<WritableFile> file, std::string path)
      : file_(std::move(file)), path_(std::move(path)) {}

  arrow::Status Write(const void* data, int64_t nbytes) override {
    Status st = file_->Append(std::string_view(static_cast<const char*>(data),
                                               static_cast<size_t>(nbytes)));
    if (!st.ok()) return arrow::Status::IOError(st.message());
    position_ += nbytes;
    return arrow::Status::OK();
  }
  arrow::Status Flush() override { return arrow::Status::OK(); }
  arrow::Result<int64_t> Tell() const override { return position_; }
  bool closed() const override { return closed_; }
  // Close() syncs: a closed stream's bytes are durable.
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
