// FileSystem: the one interface through which reel touches the disk.
//
// Every read and write in the library goes through a FileSystem so that tests
// can inject faults (I/O errors, dropped unsynced writes) without touching the
// code under test. Paths are plain strings joined with '/'.
//
// Thread safety: the default POSIX file system is safe to use from any number
// of threads at once. Implementations used by tests must be too.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "reel/status.h"

namespace arrow::io {
class RandomAccessFile;
}

namespace reel {

enum class FileType { kNotFound, kFile, kDirectory, kOther };

// What a FileSystem can do beyond reading and writing whole files. Writers ask this
// instead of probing with a call that might fail: a store without atomic rename cannot
// take the episode transaction's commit (it is written by `reel push`'s protocol,
// docs/storage.md), one without locks cannot serialise writers, one without directories
// has only implicit ones (a prefix exists while an object lies below it).
struct FileSystemCapabilities {
  bool atomic_rename = true;  // Rename replaces `to` atomically (POSIX rename(2))
  bool locks = true;          // LockFile excludes other processes (flock(2))
  bool directories = true;    // directories exist by themselves: created, synced, removed
};

struct FileInfo {
  FileType type = FileType::kNotFound;
  uint64_t size = 0;
  // Last modification, nanoseconds since the Unix epoch; 0 when the store keeps none.
  // Used for age-based sweeps (stale scratch directories, expired uploads).
  int64_t mtime_ns = 0;
};

struct DirEntry {
  std::string name;
  FileType type = FileType::kOther;  // of what the entry points to, for a symbolic link
  bool symlink = false;              // the entry itself is a symbolic link
  // A file's size and last modification (ns since the Unix epoch) where the store lists them
  // with its entries (object stores list them with every key); 0 where it does not (POSIX
  // directories give names and types only).
  uint64_t size = 0;
  int64_t mtime_ns = 0;
};

// A file being written. Close() without a prior Sync() gives no durability.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  // Writes `data` at the end of what was written so far.
  virtual Status Append(std::string_view data) = 0;
  // Overwrites bytes already written: [offset, offset + data.size()) must lie within
  // the file's current size (Invalid otherwise; a write past the end is Append's job).
  // Does not move the point where Append continues. For container muxers that patch
  // headers after the payload (mp4's moov/mdat sizes, Matroska's cues and duration).
  // The default returns NotSupported: stores that can only append (an object store's
  // multipart upload) cannot take such files, and their writers stage them elsewhere.
  virtual Status WriteAt(uint64_t offset, std::string_view data);
  virtual Status Sync() = 0;  // fsync: data and size are durable on return
  virtual Status Close() = 0;
};

// Forwards every call to another WritableFile (owned). Fault-injecting tests derive
// from it and override only the calls they fail.
class WritableFileWrapper : public WritableFile {
 public:
  explicit WritableFileWrapper(std::unique_ptr<WritableFile> target) : target_(std::move(target)) {}
  WritableFile* target() const { return target_.get(); }
  Status Append(std::string_view data) override { return target_->Append(data); }
  Status WriteAt(uint64_t offset, std::string_view data) override {
    return target_->WriteAt(offset, data);
  }
  Status Sync() override { return target_->Sync(); }
  Status Close() override { return target_->Close(); }

 private:
  std::unique_ptr<WritableFile> target_;
};

// An exclusive advisory lock (flock) held until destruction.
class FileLock {
 public:
  virtual ~FileLock() = default;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // Type and size of `path`. A missing path is not an error: type kNotFound.
  virtual Result<FileInfo> Stat(const std::string& path) = 0;
  // Entries of a directory (no "." or ".."), sorted by name.
  virtual Result<std::vector<DirEntry>> ListDir(const std::string& path) = 0;
  // Stat of each `names[i]` inside the directory `dir`, in order; one result each (a
  // missing name is kNotFound, as for Stat). For listing many files of one directory:
  // the default calls Stat per joined path; the POSIX file system resolves `dir` once
  // (fstatat on a directory descriptor), which halves the cost of 100,000 stats.
  virtual std::vector<Result<FileInfo>> StatMany(const std::string& dir,
                                                 const std::vector<std::string>& names);
  // Whole file contents.
  virtual Result<std::string> ReadFile(const std::string& path) = 0;
  // A random-access handle for Arrow/Parquet readers.
  virtual Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenRandomAccess(
      const std::string& path) = 0;

  // Creates or truncates `path`.
  virtual Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) = 0;
  // Opens `path` for appending: Append continues after its current contents; the
  // file is created empty when missing. WriteAt may be unsupported on such a file.
  // For the import server's upload spool (resumable uploads grow one chunk at a time).
  // The default returns NotSupported.
  virtual Result<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path);
  // Atomically replaces `to` with `from` (POSIX rename).
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  // fsync of a directory, making renames and creations inside it durable.
  virtual Status SyncDir(const std::string& path) = 0;
  virtual Status RemoveFile(const std::string& path) = 0;
  // Removes the empty directory `path` (rmdir). NotFound when missing; an error when it
  // is not empty. The default returns NotSupported. See RemoveAll below for a tree.
  virtual Status RemoveDir(const std::string& path);
  // mkdir -p.
  virtual Status CreateDirs(const std::string& path) = 0;
  // Creates a new directory "<prefix>XXXXXX" (six characters chosen so that the name
  // did not exist; mkdtemp) readable by the owner only, and returns its path. The parent
  // of `prefix` must exist. The default returns NotSupported.
  virtual Result<std::string> CreateUniqueDir(const std::string& prefix);
  // fsync of a file by path, for a writer that no longer holds its WritableFile.
  // Video and zip writers sync through their WritableFile now (VideoEncoderOptions::
  // sync_on_finish, pack's zip commit); this remains for the exporters and dataset
  // import until they do too. The default returns NotSupported.
  virtual Status SyncFile(const std::string& path);
  // Blocks until an exclusive lock on `path` (created empty if missing) is held.
  // The default implementation returns NotSupported.
  virtual Result<std::unique_ptr<FileLock>> LockFile(const std::string& path);
  // What this file system can do (see FileSystemCapabilities). The default matches the
  // defaults above: Rename is atomic and directories exist (the pure virtual calls), no
  // lock (LockFile's default is NotSupported). An implementation that differs overrides it.
  virtual FileSystemCapabilities Capabilities() const { return {.locks = false}; }
};

// Forwards every call to another FileSystem (not owned; it must outlive the
// wrapper). LevelDB's EnvWrapper: a test derives from it and overrides only the calls
// it fails or records, so a new FileSystem method needs no change in the tests.
class FileSystemWrapper : public FileSystem {
 public:
  explicit FileSystemWrapper(FileSystem* target) : target_(target) {}
  FileSystem* target() const { return target_; }

  Result<FileInfo> Stat(const std::string& path) override { return target_->Stat(path); }
  Result<std::vector<DirEntry>> ListDir(const std::string& path) override {
    return target_->ListDir(path);
  }
  Result<std::string> ReadFile(const std::string& path) override { return target_->ReadFile(path); }
  Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenRandomAccess(
      const std::string& path) override {
    return target_->OpenRandomAccess(path);
  }
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    return target_->NewWritableFile(path);
  }
  Result<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override {
    return target_->NewAppendableFile(path);
  }
  Status Rename(const std::string& from, const std::string& to) override {
    return target_->Rename(from, to);
  }
  Status SyncDir(const std::string& path) override { return target_->SyncDir(path); }
  Status RemoveFile(const std::string& path) override { return target_->RemoveFile(path); }
  Status RemoveDir(const std::string& path) override { return target_->RemoveDir(path); }
  Status CreateDirs(const std::string& path) override { return target_->CreateDirs(path); }
  Result<std::string> CreateUniqueDir(const std::string& prefix) override {
    return target_->CreateUniqueDir(prefix);
  }
  Status SyncFile(const std::string& path) override { return target_->SyncFile(path); }
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override {
    return target_->LockFile(path);
  }
  FileSystemCapabilities Capabilities() const override { return target_->Capabilities(); }

 private:
  FileSystem* target_;
};

// The process-wide POSIX file system. Never null; not owned by the caller.
FileSystem* DefaultFileSystem();

// Removes `path` and, for a directory, everything under it (rm -rf), through `fs`'s
// ListDir / RemoveFile / RemoveDir. A symbolic link inside the tree is removed, never
// followed (`path` itself must not be a link to a directory). A missing `path` is OK.
// Stops at the first error and returns it (what was removed stays removed). *removed
// (when given) is set to whether `path` existed and is gone.
Status RemoveAll(FileSystem* fs, const std::string& path, bool* removed = nullptr);

// Removes every scratch directory this process holds now (export staging beside the
// output, pack and upload work directories, the import server's staging; also pack's zip
// temp beside its output) and returns how many went. For an interrupted process (the
// CLI's SIGINT/SIGTERM thread) just before it ends: the jobs owning them fail if they go
// on. Not async-signal-safe (call it from a thread that sigwait()ed, not from a signal
// handler).
int RemoveOpenScratchDirs();

// Commit recipe for one file (LevelDB's): write a unique dotfile beside `path`,
// fsync it, rename it over `path`, fsync the directory. A failure before the
// rename removes the temp file and leaves `path` as it was; a failure of the
// final directory fsync returns an error with `path` already holding the new
// contents (the rename happened but may not be durable). Either way `path` is
// a whole file, old or new, never a torn one. On a file system without atomic rename
// (Capabilities(): an object store, whose object appears whole when written) it is
// written in place, which is whole there.
Status WriteFileAtomic(FileSystem* fs, const std::string& path, std::string_view contents);

// Creates (or truncates) `path` with `contents` and fsyncs it; no rename. The first
// half of WriteFileAtomic, for callers that publish the file themselves.
Status WriteFileSynced(FileSystem* fs, const std::string& path, std::string_view contents);

// "a/b" + "c" -> "a/b/c"; an empty side is dropped.
std::string JoinPath(const std::string& a, const std::string& b);
// Final path component ("a/b.parquet" -> "b.parquet").
std::string BaseName(const std::string& path);
// The name a task directory goes by: the last part of a local path ("path/to/task/" and
// "." too, resolved against the working directory) or of a URI ("s3://b/p/task/" ->
// "task"). The default task_name of a new task and the stem of a default slice name.
std::string TaskDirName(const std::string& path_or_uri);
// Everything before the final component ("a/b.parquet" -> "a"; "b" -> ".").
std::string DirName(const std::string& path);

}  // namespace reel
