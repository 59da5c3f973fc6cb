// Internal: the episode index, a cache of what listing a task's directories and reading its
// episodes rows and data footers found, so that opening a task of 100,000 episodes reads two
// files, not 300,000 directory entries and 200,000 footers.
//
// It is a cache and never the truth: meta/.episode_index.parquet (a dotfile: readers, the
// checker and the upload slice ignore it, contract §7.4) remembers, per episode, the path,
// size and modification time of its row file and data file when they were read, with the
// row and the data schema read from them. A lookup gives the remembered value only when
// the file at that path still has that size and modification time (one stat); otherwise
// the caller reads the file and puts the new value. meta/.episode_index.listing.parquet
// remembers each directory's entries with the directory's modification time, which any
// creation, removal or rename inside it changes: an unchanged directory is not re-read.
// So an index deleted, damaged, older than the task, or left behind by a writer that
// knows nothing of it (pyarrow appending an episode, a file rewritten in place) costs
// reads, never a wrong answer.
//
// Settled only: a file or directory is remembered only when it was last modified more
// than kSettleNs before it was stamped. A change that lands in the same timestamp tick
// as the one remembered (file systems keep mtimes at 1 ns to 2 s granularity, Linux at
// the kernel's coarse clock) would otherwise leave the stamp equal and the cache wrong;
// after the settle time any change moves the mtime past the remembered one.
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
#include <string_view>
#include <vector>

#include "reel/fs.h"
#include "reel/layout.h"
#include "reel/metadata.h"

namespace arrow {
class Schema;
}

namespace reel::internal {

inline constexpr const char* kEpisodeIndexPath = "meta/.episode_index.parquet";
inline constexpr const char* kListingIndexPath = "meta/.episode_index.listing.parquet";
inline constexpr int64_t kSettleNs = int64_t{2} * 1000000000;

// A file as it was when read: equal size and modification time mean unchanged.
struct FileStamp {
  std::string path;  // relative to the task root
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  // Last modified more than kSettleNs before it was stamped; only such stamps are
  // remembered. Not part of the comparison.
  bool settled = false;
  bool operator==(const FileStamp& o) const {
    return path == o.path && size == o.size && mtime_ns == o.mtime_ns;
  }
};

class EpisodeIndex {
 public:
  EpisodeIndex();
  ~EpisodeIndex();
  // Loads the index of the task at `root`. A missing, unreadable or damaged index (or one
  // of another version) loads empty: it is rebuilt by use. Never an error.
  static std::unique_ptr<EpisodeIndex> Load(FileSystem* fs, const std::string& root);

  // The remembered row / data schema of N, when `now` is the file it was read from.
  std::optional<EpisodeRow> Row(int64_t n, const FileStamp& now) const;
  std::shared_ptr<arrow::Schema> DataSchema(int64_t n, const FileStamp& now) const;
  // Remembers what was read from the file `read` (stamped before reading it), when the
  // stamp is settled.
  void PutRow(int64_t n, const FileStamp& read, EpisodeRow row);
  void PutDataSchema(int64_t n, const FileStamp& read, std::shared_ptr<arrow::Schema> schema);

  // A lister for PathTemplate::Glob over the task at `root` (which must outlive it): a
  // directory whose modification time is the remembered one is answered from memory; any
  // other is listed through `fs`, and remembered when settled. Directories holding a
  // symbolic link or an entry other than a file or directory are never remembered (a
  // link's target changes without its directory). Used by Task::ListEpisodes.
  PathTemplate::DirLister Lister(FileSystem* fs, const std::string& root);

  // Writes the index back when something was put since it was loaded or saved: a temp
  // beside it renamed over it, for each of the two files whose part changed (the listings
  // kept are those used since the load, when any was, so removed directories drop out).
  // Best effort: a task on read-only storage or an object store (no rename: found by a
  // rename of a path that does not exist, before anything is written) keeps no index; the
  // error is returned for tests, callers ignore it.
  Status SaveIfChanged(FileSystem* fs, const std::string& root);

  size_t size() const;
  size_t listings() const;

  // One episode's remembered files and what was read from them.
  struct Entry {
    std::optional<FileStamp> row_file;
    std::optional<EpisodeRow> row;
    std::optional<FileStamp> data_file;
    std::shared_ptr<arrow::Schema> data_schema;
  };

 private:
  // One directory's entries as listed, with its modification time then.
  struct Listing {
    int64_t mtime_ns = 0;
    std::shared_ptr<const std::vector<DirEntry>> entries;
    bool used = false;  // served or listed since the index was loaded
  };

 private:
  // Every entry, loaded_'s with what was put since laid over them. Called with mu_ held.
  std::map<int64_t, Entry> MergedLocked() const;
  // The data schema of loaded_'s row i, deserialised once per distinct value. mu_ held.
  std::shared_ptr<arrow::Schema> LoadedSchemaLocked(int64_t i) const;
  void LoadListings(FileSystem* fs, const std::string& root);
  Status SaveListings(FileSystem* fs, const std::string& root);

  // The index file as loaded, read on demand: an episode's row is built when asked for,
  // so that loading 100,000 entries costs one parquet read, not 100,000 rows.
  struct Loaded;
  std::unique_ptr<Loaded> loaded_;  // immutable once loaded; null when none was

  mutable std::mutex mu_;
  std::map<int64_t, Entry> entries_;  // put since the load; each part put overrides loaded_
  mutable std::map<int64_t, std::shared_ptr<arrow::Schema>> schemas_;  // loaded_'s, by dictionary slot
  bool changed_ = false;
  std::map<std::string, Listing> listings_;  // by path relative to the task root
  bool listings_changed_ = false;
};

// The stamps of `relatives` (paths under `root`; an empty one stamps nothing) now, in
// order; nullopt where there is no file. Grouped by directory (FileSystem::StatMany), on
// `threads` threads.
std::vector<std::optional<FileStamp>> StampAll(FileSystem* fs, const std::string& root,
                                               const std::vector<std::string>& relatives, int threads);

}  // namespace reel::internal
