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

struct FileInfo {
  FileType type = FileType::kNotFound;
  uint64_t size = 0;
};

struct DirEntry {
  std::string name;
  FileType type = FileType::kOther;  // of what the entry points to, for a symbolic link
  bool symlink = false;              // the entry itself is a symbolic link
};

// A file being written. Close() without a prior Sync() gives no durability.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual Status Append(std::string_view data) = 0;
  virtual Status Sync() = 0;  // fsync: data and size are durable on return
  virtual Status Close() = 0;
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
  // Whole file contents.
  virtual Result<std::string> ReadFile(const std::string& path) = 0;
  // A random-access handle for Arrow/Parquet readers.
  virtual Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenRandomAccess(
      const std::string& path) = 0;

  // Creates or truncates `path`.
  virtual Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) = 0;
  // Atomically replaces `to` with `from` (POSIX rename).
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  // fsync of a directory, making renames and creations inside it durable.
  virtual Status SyncDir(const std::string& path) = 0;
  virtual Status RemoveFile(const std::string& path) = 0;
  // mkdir -p.
  virtual Status CreateDirs(const std::string& path) = 0;
  // fsync of a file written outside this interface (FFmpeg's muxers write video
  // files themselves, since mp4 needs seeks). The default returns NotSupported.
  virtual Status SyncFile(const std::string& path);
  // Blocks until an exclusive lock on `path` (created empty if missing) is held.
  // The default implementation returns NotSupported.
  virtual Result<std::unique_ptr<FileLock>> LockFile(const std::string& path);
};

// The process-wide POSIX file system. Never null; not owned by the caller.
FileSystem* DefaultFileSystem();

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
// a whole file, old or new, never a torn one.
Status WriteFileAtomic(FileSystem* fs, const std::string& path, std::string_view contents);

// Creates (or truncates) `path` with `contents` and fsyncs it; no rename. The first
// half of WriteFileAtomic, for callers that publish the file themselves.
Status WriteFileSynced(FileSystem* fs, const std::string& path, std::string_view contents);

// "a/b" + "c" -> "a/b/c"; an empty side is dropped.
std::string JoinPath(const std::string& a, const std::string& b);
// Final path component ("a/b.parquet" -> "b.parquet").
std::string BaseName(const std::string& path);
// Everything before the final component ("a/b.parquet" -> "a"; "b" -> ".").
std::string DirName(const std::string& path);

}  // namespace reel
