// Internal: the episode index, a cache of what reading a task's episodes rows and data
// footers found, so that opening a task of 100,000 episodes reads one file, not 200,000.
//
// It is a cache and never the truth: meta/.episode_index.parquet (a dotfile: readers, the
// checker and the upload slice ignore it, contract §7.4) remembers, per episode, the path,
// size and modification time of its row file and data file when they were read, with the
// row and the data schema read from them. A lookup gives the remembered value only when
// the file at that path still has that size and modification time (one stat); otherwise
// the caller reads the file and puts the new value. So an index deleted, damaged, older
// than the task, or left behind by a writer that knows nothing of it (pyarrow appending an
// episode, a file rewritten in place) costs reads, never a wrong answer.
//
// Legacy shards (one file, many rows) are not indexed: they are read as before.
//
// Thread safety: every method may be called from many threads at once.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "reel/fs.h"
#include "reel/metadata.h"

namespace arrow {
class Schema;
}

namespace reel::internal {

inline constexpr const char* kEpisodeIndexPath = "meta/.episode_index.parquet";

// A file as it was when read: equal size and modification time mean unchanged.
struct FileStamp {
  std::string path;  // relative to the task root
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};

class EpisodeIndex {
 public:
  // Loads the index of the task at `root`. A missing, unreadable or damaged index (or one
  // of another version) loads empty: it is rebuilt by use. Never an error.
  static std::unique_ptr<EpisodeIndex> Load(FileSystem* fs, const std::string& root);

  // The remembered row / data schema of N, when `now` is the file it was read from.
  std::optional<EpisodeRow> Row(int64_t n, const FileStamp& now) const;
  std::shared_ptr<arrow::Schema> DataSchema(int64_t n, const FileStamp& now) const;
  // Remembers what was read from the file `read` (stamped before reading it).
  void PutRow(int64_t n, const FileStamp& read, EpisodeRow row);
  void PutDataSchema(int64_t n, const FileStamp& read, std::shared_ptr<arrow::Schema> schema);

  // Writes the index back when something was put since it was loaded or saved: a temp
  // beside it renamed over it. Best effort: a task on read-only storage or an object
  // store (no rename: found by a rename of a path that does not exist, before anything is
  // written) keeps no index; the error is returned for tests, callers ignore it.
  Status SaveIfChanged(FileSystem* fs, const std::string& root);

  size_t size() const;

  // One episode's remembered files and what was read from them.
  struct Entry {
    std::optional<FileStamp> row_file;
    std::optional<EpisodeRow> row;
    std::optional<FileStamp> data_file;
    std::shared_ptr<arrow::Schema> data_schema;
  };

 private:
  mutable std::mutex mu_;
  std::map<int64_t, Entry> entries_;
  bool changed_ = false;
};

// The stamp of `relative` under `root` now; nullopt when it is not a file.
std::optional<FileStamp> StampOf(FileSystem* fs, const std::string& root, const std::string& relative);

}  // namespace reel::internal
