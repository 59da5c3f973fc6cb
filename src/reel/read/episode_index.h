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
  // `columns` as for Task::ReadEpisodeRows: empty for all (a remembered row may carry more).
  std::optional<EpisodeRow> Row(int64_t n, const FileStamp& now, const std::vector<std::string>& columns = {}) const;
  std::shared_ptr<arrow::Schema> DataSchema(int64_t n, const FileStamp& now) const;
  // Remembers what was read from the file `read` (stamped before reading it), when the
  // stamp is settled.
  void PutRow(int64_t n, const FileStamp& read, EpisodeRow row);
  void PutDataSchema(int64_t n, const FileStamp& read, std::shared_ptr<arrow::Schema> schema);

  // A lister for PathTemplate::Glob over the task at `root` (which must outlive it): a
  // directory whose modification time is the remembered one is answered from memory; any
  // other is listed through `fs`, and remembered when settled. Directories holding a
  // symbolic link or an entry other than a file or directory are never remembered (a
  // link's target changes without its directory). On a store without directories (an object
  // store, FileSystemCapabilities::directories false) nothing is stat'ed: a prefix has no
  // modification time, and every directory is listed. Used by Task::ListEpisodes.
  PathTemplate::DirLister Lister(FileSystem* fs, const std::string& root);

  // Writes the index back when something was put since it was loaded or saved: a temp
  // beside it renamed over it, for each of the two files whose part changed (the listings
  // kept are those used since the load, when any was, so removed directories drop out).
  // On a store without atomic rename (an object store) each file is written in place: an
  // object appears whole. Best effort: a task on read-only storage keeps no index; the
  // error is returned for tests, callers ignore it.
  Status SaveIfChanged(FileSystem* fs, const std::string& root);

  // StampAll, but a file in a directory whose modification time is its remembered
  // listing's is answered with the size and modification time remembered for it there,
  // without a stat: opening a task of 100,000 episodes stats its few hundred directories,
  // not its 200,000 files. Files stamped here (settled ones, in such a directory) are
  // remembered with the listing, so the next opening needs no stat for them.
  //
  // Sound for every writer that keeps the contract's write protocol (a temp file renamed
  // into place, contract-decisions "durability"; reel, the reference collector and pyarrow
  // appending new episodes all do): a rename, creation or removal in a directory moves its
  // modification time, so the remembered stamps stop being used. A file rewritten in place
  // (opened and overwritten, which no contract writer does) leaves its directory's time as
  // it was: listings serve what was remembered until a Task opened with listing_cache off
  // (reel check is one) stamps every file with `trust_listings` false, which stats each
  // file and remembers the fresh stamps, so the listings after it read the file again;
  // CorrectedInPlace() then says a remembered stamp was found wrong in such a directory.
  //
  // On a store whose directories have no modification time (an object store), the stamps
  // are the size and time the latest listing of the directory by this index's Lister gave
  // with each object (a listing page carries them; no request per object), as fresh as
  // the listing the caller's episodes came from.
  std::vector<std::optional<FileStamp>> Stamp(FileSystem* fs, const std::string& root,
                                              const std::vector<std::string>& relatives, int threads,
                                              bool trust_listings = true);

  // Whether a Stamp() without `trust_listings` found a file whose size or mtime differs
  // from the stamp remembered for it in a directory still at its remembered time: a file
  // rewritten in place, which the listing cache would go on serving until saved.
  bool CorrectedInPlace() const;

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
  // One directory's entries as listed, with its modification time then. Kept compact (the
  // names end to end, not a DirEntry each: 300,000 remembered names cost about 8 MB, not
  // 26), and handed out as DirEntry vectors one directory at a time.
  struct Listing {
    int64_t mtime_ns = 0;
    std::string names;           // the entries' names, sorted, end to end
    std::vector<uint32_t> ends;  // where each name ends in `names`
    std::string kinds;           // per entry: 'f' a file, 'd' a directory
    bool used = false;           // served or listed since the index was loaded
    // Per entry (empty, or as many as entries): the size and modification time of the file,
    // stamped after the directory was seen at mtime_ns; a modification time of 0 where none
    // was.
    std::vector<std::pair<uint64_t, int64_t>> stamps;

    // The listing of `entries` at `mtime_ns`, or nullopt when one of them cannot be
    // remembered (a symbolic link, neither file nor directory, or as for Append).
    static std::optional<Listing> Of(int64_t mtime_ns, const std::vector<DirEntry>& entries);
    // Adds the entry `name` of kind 'f' or 'd' after the others; false (and nothing added)
    // when the name cannot be remembered (empty, "." or "..", holding '/' or NUL, or not
    // after the last one: a remembered listing is read back from a file that may be damaged).
    bool Append(std::string_view name, char kind);
    size_t size() const { return ends.size(); }
    std::string_view Name(size_t k) const;
    // The entries as a listing gives them.
    std::shared_ptr<const std::vector<DirEntry>> Entries() const;
    // The position of the file `name` among the entries.
    std::optional<size_t> At(std::string_view name) const;
  };

 private:
  // Every entry, loaded_'s with what was put since laid over them. Called with mu_ held.
  std::map<int64_t, Entry> MergedLocked() const;
  // The data schema of loaded_'s row i, deserialised once per distinct value. mu_ held.
  std::shared_ptr<arrow::Schema> LoadedSchemaLocked(int64_t i) const;
  // The listing of `relative_dir` when it was remembered at `mtime_ns`, its stamps sized
  // to its entries; null otherwise. mu_ held.
  Listing* ListingAtLocked(const std::string& relative_dir, int64_t mtime_ns);
  // Stamps members (of `dir`) from fresh_'s listing of it into `out` (files the listing
  // gave no time for stay unstamped, as a missing file does); false when it has none.
  bool FromFreshListing(const std::string& relative_dir, std::string_view dir, const std::vector<size_t>& members,
                        const std::vector<std::string>& relatives, int64_t settled_before,
                        std::vector<std::optional<FileStamp>>& out) const;
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
  // Directories without a modification time (an object store's prefixes) as this index's
  // lister last listed them: never remembered across processes, but their entries carry
  // each object's size and time, the stamps Stamp() gives for them.
  std::map<std::string, std::shared_ptr<const std::vector<DirEntry>>> fresh_;
  bool listings_changed_ = false;
  bool corrected_in_place_ = false;
};

// The stamps of `relatives` (paths under `root`; an empty one stamps nothing) now, in
// order; nullopt where there is no file. Grouped by directory (FileSystem::StatMany), on
// `threads` threads.
std::vector<std::optional<FileStamp>> StampAll(FileSystem* fs, const std::string& root,
                                               const std::vector<std::string>& relatives, int threads);

}  // namespace reel::internal
