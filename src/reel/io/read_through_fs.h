// Internal: a local staging directory that reads through to a task on another store.
//
// A task on an object store cannot be changed in place (no rename, no lock), so a writer
// changes a local staging directory instead and pushes the result (push/staged_change).
// This FileSystem makes the staging directory look like the stored task: a path under
// `staging_root` that the local file system lacks is read from the same relative path
// under `store_root`, and listings are the union of both. Every write, rename, removal,
// lock and sync goes to the local file system only, so the store is never changed here.
//
// Dotfiles of the store (its push lock and push journals, meta/.push-*.json) are not
// read through: they belong to the store's publishing protocol, not to the task
// (contract §7.4: readers ignore dotfiles).
//
// Paths outside `staging_root` go to the local file system unchanged. Both file systems
// must outlive this one. Thread safety: as the two file systems.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "reel/fs.h"

namespace reel::internal {

class ReadThroughFileSystem : public FileSystemWrapper {
 public:
  ReadThroughFileSystem(FileSystem* local, std::string staging_root, FileSystem* store, std::string store_root);

  Result<FileInfo> Stat(const std::string& path) override;
  Result<std::vector<DirEntry>> ListDir(const std::string& path) override;
  Result<std::string> ReadFile(const std::string& path) override;
  Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenRandomAccess(const std::string& path) override;
  // Renaming or removing a file that exists only at the store: NotSupported (the store's
  // copy is read-only here). Syncing a directory that exists only there: OK, nothing to do.
  Status Rename(const std::string& from, const std::string& to) override;
  Status RemoveFile(const std::string& path) override;
  Status SyncDir(const std::string& path) override;

  // Whether `path` (under the staging root) is a file of the local staging directory,
  // not one read through from the store.
  Result<bool> IsStaged(const std::string& path);

 private:
  // The store's path for `path`, when it lies under the staging root and is no dotfile.
  std::optional<std::string> AtStore(const std::string& path) const;
  Status StoreOnly(const std::string& path, const char* what);

  FileSystem* local_;
  std::string staging_root_;
  FileSystem* store_;
  std::string store_root_;
};

}  // namespace reel::internal
