// Shared helpers of the libFuzzer harnesses (fuzz/fuzz_<name>.cc; docs/reliability.md).
//
// - MemFs: a read-only in-memory FileSystem, so that a fuzzed "task directory" costs no
//   disk I/O. Everything reel reads through FileSystem (JSON, parquet) goes through it.
// - Parts: several files packed in one fuzz input, separated by kPartSeparator. The
//   seed generator (fuzz/make_seeds.py) writes the same format.
// - TempDir: one per-process scratch directory (under /dev/shm when it exists), for
//   entry points that take a path (FFmpeg, libzip, the serve config). Removed at exit.
// - UnpackTreeToDisk / Snapshot: a packed tree written under a real directory (entry
//   points that rename, lock and fsync: commit journals, migrate), and a directory's
//   files read back, to show that nothing outside the task was touched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>


#include "reel/fs.h"

namespace reel::fuzz {

// Splits `data` at every kPartSeparator into exactly `n` parts (missing parts are
// empty; extra separators stay in the last part).
inline constexpr std::string_view kPartSeparator = "\n#%REEL-FILE%#\n";
std::vector<std::string_view> SplitParts(const uint8_t* data, size_t size, size_t n);

class MemFs final : public FileSystem {
 public:
  // `path` absolute ("/mem/task/meta/info.json"); its parent directories exist implicitly.
  void Put(const std::string& path, std::string_view bytes);
  void Clear() { files_.clear(); }
  // Every file and directory reports this modification time (0: none, the default). A
  // non-zero time more than two seconds in the past makes reel's episode index treat
  // what it stats as settled, so that it is remembered and its listings are used.
  void set_mtime_ns(int64_t mtime_ns) { mtime_ns_ = mtime_ns; }
  // Writable: files written are Put() on Close, Rename moves a file, RemoveFile and
  // RemoveDir erase; directories still exist only through their files. Default: read-only
  // (every write is PermissionDenied).
  void set_writable(bool writable) { writable_ = writable; }
  // The bytes of `path`, or null.
  const std::string* Get(const std::string& path) const;

  Result<FileInfo> Stat(const std::string& path) override;
  Result<std::vector<DirEntry>> ListDir(const std::string& path) override;
  Result<std::string> ReadFile(const std::string& path) override;
  Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenRandomAccess(const std::string& path) override;
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status SyncDir(const std::string& path) override;
  Status RemoveFile(const std::string& path) override;
  Status RemoveDir(const std::string& path) override;
  Status CreateDirs(const std::string& path) override;

 private:
  static std::string Norm(const std::string& path);
  std::map<std::string, std::string> files_;
  int64_t mtime_ns_ = 0;
  bool writable_ = false;
};

// Fills `fs` with the files of a packed directory (fuzz/make_seeds.py "tree" format):
// parts separated by kPartSeparator, each "<relative path>\n<bytes>". Paths with ".."
// or a leading '/' are dropped; at most 32 files. Returns the number of files put.
int UnpackTree(const uint8_t* data, size_t size, const std::string& root, MemFs& fs);

// The same format written to disk under `root` (created): the same path rules, and a part
// whose path cannot be created (a file where a directory is needed) is skipped. Returns
// the number of files written.
int UnpackTreeToDisk(const uint8_t* data, size_t size, const std::string& root);

// Every entry under `dir` (relative path -> bytes; directories map to "/", symbolic links
// to "@" + target), for before/after comparisons. Empty when `dir` is missing.
std::map<std::string, std::string> Snapshot(const std::string& dir);

class TempDir {
 public:
  // The process's scratch directory, created on first use.
  static TempDir& Get();
  const std::string& path() const { return path_; }
  // Writes `bytes` to <dir>/<name> (truncating) and returns the full path.
  std::string Write(const std::string& name, std::string_view bytes);
  // Removes everything inside the directory (it stays).
  void Clean();
  ~TempDir();

 private:
  TempDir();
  std::string path_;
};

// A small valid pooled task written into `fs` under `root` with reel's own writers:
// meta/info.json, and for N = 1..episodes a data parquet (episode_index, frame_index 0..
// frames-1, timestamp, task_index) and an episodes row file. Deterministic (the same
// bytes every run), so that a seed can name the files' sizes. `fs` must be writable.
void PutSmallTask(MemFs& fs, const std::string& root, int episodes, int frames);

// True when REEL_FUZZ_DEBUG is set: harnesses then print what reel answered, to check
// that the seeds reach the paths they are meant to (not used while fuzzing).
bool Debug();

// Removes a directory tree (no error when absent).
void RemoveTree(const std::string& path);

}  // namespace reel::fuzz
