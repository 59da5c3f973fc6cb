// Test-only: a FileSystem that holds a real directory under a made-up absolute prefix
// ("/reel-virtual-input/clip.mp4" is <real>/clip.mp4), for proving which FileSystem a
// helper reads and writes through. A virtual path exists through this FileSystem only:
// a read or write of it through any other (DefaultFileSystem() included) fails, so code
// that picks the wrong FileSystem cannot pass. Paths outside the prefix are forwarded
// unchanged and counted as `outside`.
//
// kReadOnly refuses every write (IOError) and counts reads; kWriteOnly refuses
// ReadFile/OpenRandomAccess of virtual paths and counts writes (Stat and ListDir stay
// allowed: writers look before they create).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "reel/fs.h"

namespace reel::testing {

class RootedFs final : public FileSystemWrapper {
 public:
  enum Mode { kReadOnly, kWriteOnly };
  RootedFs(std::string virtual_root, std::string real_root, Mode mode)
      : FileSystemWrapper(DefaultFileSystem()), virtual_(std::move(virtual_root)), real_(std::move(real_root)),
        mode_(mode) {}

  std::atomic<int> reads{0}, writes{0}, outside{0}, refused{0};

  Result<FileInfo> Stat(const std::string& p) override { return target()->Stat(Map(p)); }
  Result<std::vector<DirEntry>> ListDir(const std::string& p) override { return target()->ListDir(Map(p)); }
  Result<std::string> ReadFile(const std::string& p) override {
    REEL_RETURN_IF_ERROR(Read(p));
    return target()->ReadFile(Map(p));
  }
  Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenRandomAccess(const std::string& p) override {
    REEL_RETURN_IF_ERROR(Read(p));
    return target()->OpenRandomAccess(Map(p));
  }
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& p) override {
    REEL_RETURN_IF_ERROR(Write(p));
    return target()->NewWritableFile(Map(p));
  }
  Status Rename(const std::string& from, const std::string& to) override {
    REEL_RETURN_IF_ERROR(Write(to));
    return target()->Rename(Map(from), Map(to));
  }
  Status SyncDir(const std::string& p) override { return target()->SyncDir(Map(p)); }
  Status RemoveFile(const std::string& p) override {
    REEL_RETURN_IF_ERROR(Write(p));
    return target()->RemoveFile(Map(p));
  }
  Status RemoveDir(const std::string& p) override {
    REEL_RETURN_IF_ERROR(Write(p));
    return target()->RemoveDir(Map(p));
  }
  Status CreateDirs(const std::string& p) override {
    REEL_RETURN_IF_ERROR(Write(p));
    return target()->CreateDirs(Map(p));
  }
  Result<std::string> CreateUniqueDir(const std::string& prefix) override {
    REEL_RETURN_IF_ERROR(Write(prefix));
    REEL_ASSIGN_OR_RETURN(std::string made, target()->CreateUniqueDir(Map(prefix)));
    return Virtual(prefix) ? virtual_ + made.substr(real_.size()) : made;
  }
  Status SyncFile(const std::string& p) override { return target()->SyncFile(Map(p)); }

 private:
  bool Virtual(const std::string& p) const {
    return p.compare(0, virtual_.size(), virtual_) == 0 && (p.size() == virtual_.size() || p[virtual_.size()] == '/');
  }
  std::string Map(const std::string& p) {
    if (!Virtual(p)) {
      ++outside;
      return p;
    }
    return real_ + p.substr(virtual_.size());
  }
  Status Read(const std::string& p) {
    if (mode_ == kWriteOnly && Virtual(p)) {
      ++refused;
      return Status::IOError(p + ": read through the output's file system");
    }
    ++reads;
    return Status::OK();
  }
  Status Write(const std::string& p) {
    if (mode_ == kReadOnly) {
      ++refused;
      return Status::IOError(p + ": write through the input's file system");
    }
    ++writes;
    return Status::OK();
  }

  std::string virtual_, real_;
  Mode mode_;
};

}  // namespace reel::testing
