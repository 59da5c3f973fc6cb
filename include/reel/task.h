// Task: read access to one pooled_episodes_v1 task directory.
//
// Open() reads meta/info.json only. Episodes are enumerated by the contract's
// rules (§2, §6.1, §8): the union of the data file groups, the video file
// groups (per episode, so slots may be renamed between episodes) and the
// meta/episodes rows, including legacy multi-row shards located by their
// episode_index column, never by file name. Gaps and chunk rollover are normal.
// Paths always come from the info.json templates and chunks_size.
//
// Reading never writes. Files are reopened on every call (the contract allows
// a writer to replace them atomically at any time).
//
// Thread safety: a Task is immutable after Open(); its const methods may be
// called from several threads at once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "reel/fs.h"
#include "reel/layout.h"
#include "reel/metadata.h"
#include "reel/status.h"

namespace arrow {
class Array;
class Schema;
class Table;
class RecordBatchReader;
}  // namespace arrow

namespace reel {

enum class EpisodeIndexMode { kUpdate, kRead, kOff };

struct TaskOptions {
  // File system to read through; null = DefaultFileSystem().
  FileSystem* fs = nullptr;
  // Threads used to read many small metadata files (episodes rows, footers);
  // 0 = hardware concurrency, at least 2.
  int io_threads = 0;
  // The episode index (meta/.episode_index.parquet, a validated cache of the episodes
  // rows and data footers; docs/architecture.md) when many episodes' rows or schemas are
  // read at once: kUpdate uses it and rewrites it when it was missing or stale (a dotfile;
  // the task's data and metadata are never written), kRead uses it without writing, kOff
  // reads every file (the index-free path, which the index must always agree with).
  EpisodeIndexMode episode_index = EpisodeIndexMode::kUpdate;
  // Whether ListEpisodes may answer an unchanged directory from the index's listings
  // (meta/.episode_index.listing.parquet, trusted by the directory's mtime). False lists
  // every directory: what the checker does, since a copied task keeps its mtimes and a
  // forged listing could hide an episode from it. Rows and footers stay cached either
  // way: with the listing cache, each is checked against the size and mtime remembered
  // with its unchanged directory; without it, against its own file's stat (which is how
  // a file rewritten in place is seen; docs/architecture.md "The episode index").
  bool listing_cache = true;
};

enum class RowSource { kEpisodeFile, kLegacyShard, kMissing };
const char* RowSourceName(RowSource source);  // "episode_file", "legacy_shard", "missing"

// Where one episode's files are. Paths are relative to the task root.
struct EpisodeEntry {
  int64_t episode_index = 0;  // N
  EpisodeLocation location;
  std::string data_path;  // empty when the episode has no data file (e.g. deleted after upload)
  OrderedMap<std::string> videos;  // image_key -> path, sorted by image_key
  RowSource row_source = RowSource::kMissing;
  std::string row_path;  // episodes file or legacy shard holding the row
};

namespace internal {
class EpisodeIndex;
}

class Task {
 public:
  ~Task();
  // Errors: those of DetectFormat, plus NotSupported when the directory holds
  // another format (LeRobot, bundle, legacy v1.0), Invalid for an info.json
  // whose keys have the wrong types or whose templates do not parse.
  static Result<std::unique_ptr<Task>> Open(const std::string& root, const TaskOptions& options = {});

  const std::string& root() const { return root_; }
  const InfoJson& info() const { return info_; }
  FileSystem* fs() const { return fs_; }
  int64_t chunks_size() const { return info_.chunks_size; }

  // Every episode, sorted by N.
  Result<std::vector<EpisodeEntry>> ListEpisodes() const;
  // One episode by N, without scanning the whole task. NotFound when none of
  // its files exists.
  Result<EpisodeEntry> FindEpisode(int64_t episode_index) const;

  // The episodes row; NotFound when the episode has none.
  Result<EpisodeRow> ReadEpisodeRow(const EpisodeEntry& episode) const;
  // Rows for many episodes, read in parallel; the i-th result is for episodes[i].
  // `columns` limits what is read (episode_index is always read); other fields
  // keep their defaults and are not reported in missing_columns. Empty = all.
  std::vector<Result<EpisodeRow>> ReadEpisodeRows(const std::vector<EpisodeEntry>& episodes,
                                                  const std::vector<std::string>& columns = {}) const;

  // Schema of the data parquet (footer only).
  Result<std::shared_ptr<arrow::Schema>> ReadDataSchema(const EpisodeEntry& episode) const;
  // Schemas of many episodes' data files (footers only), read in parallel.
  std::vector<Result<std::shared_ptr<arrow::Schema>>> ReadDataSchemas(
      const std::vector<EpisodeEntry>& episodes) const;
  // ReadEpisodeRows(episodes, columns) and ReadDataSchemas(episodes) in one call, with the
  // episode index written back once rather than after each (a first listing of a large task
  // would write it twice): for reads that show both (export). A listing of every episode
  // visits them a batch at a time instead (VisitRowsAndSchemas).
  struct RowsAndSchemas {
    std::vector<Result<EpisodeRow>> rows;
    std::vector<Result<std::shared_ptr<arrow::Schema>>> schemas;
  };
  RowsAndSchemas ReadRowsAndSchemas(const std::vector<EpisodeEntry>& episodes,
                                    const std::vector<std::string>& columns = {}) const;
  // The same a batch at a time: `each(first, rows, schemas)` for the batches in order, with
  // the results for episodes[first], episodes[first + 1], ...; each batch is dropped after
  // its call, so that a listing of 100,000 episodes holds one batch of rows, not all of them
  // (reel ls, Task.episodes()). Whether the episode index is used is decided for the whole
  // set, and it is written back once, after the last call. Stops at, and returns, the first
  // error `each` returns.
  using RowsAndSchemasVisitor =
      std::function<Status(size_t first, std::span<const Result<EpisodeRow>> rows,
                           std::span<const Result<std::shared_ptr<arrow::Schema>>> schemas)>;
  Status VisitRowsAndSchemas(const std::vector<EpisodeEntry>& episodes, const std::vector<std::string>& columns,
                             const RowsAndSchemasVisitor& each) const;
  // The same without the data schemas, for a summary of rows alone (reel info): no footer
  // is read or stamped.
  using RowsVisitor = std::function<Status(size_t first, std::span<const Result<EpisodeRow>> rows)>;
  Status VisitEpisodeRows(const std::vector<EpisodeEntry>& episodes, const std::vector<std::string>& columns,
                          const RowsVisitor& each) const;
  // Data parquet as a table; `columns` projects by name (empty = all). A named
  // column the episode lacks is NotFound: which columns exist is decided by the
  // episode's own schema (multi-device §6.7).
  Result<std::shared_ptr<arrow::Table>> ReadData(const EpisodeEntry& episode,
                                                 const std::vector<std::string>& columns = {}) const;
  // Rows `rows` (ascending, distinct) of the list column `column` (a force matrix, a keypoint
  // or IMU list) as one list array, reading only the pages that hold them where the file has
  // an offset index: one row of a large column costs one row.
  Result<std::shared_ptr<arrow::Array>> ReadDataRows(const EpisodeEntry& episode, const std::string& column,
                                                     const std::vector<int64_t>& rows) const;
  // The same as a stream of record batches.
  Result<std::shared_ptr<arrow::RecordBatchReader>> OpenData(
      const EpisodeEntry& episode, const std::vector<std::string>& columns = {}) const;

  Result<StatsJson> ReadStats() const;
  Result<std::vector<TaskEntry>> ReadTasks() const;

  // Absolute path of a file inside the task.
  std::string Path(const std::string& relative) const { return JoinPath(root_, relative); }
  // Relative paths of episode N's files per the templates.
  Result<std::string> DataPathOf(int64_t episode_index) const;
  Result<std::string> EpisodesPathOf(int64_t episode_index) const;
  // The video path is video_extensions[image_key]'s file, or, when only the other
  // allowed type (mp4/mkv) exists, that one: a slot may mix both (contract-decisions).
  Result<std::string> VideoPathOf(int64_t episode_index, const std::string& image_key) const;

 private:
  Task() = default;
  Result<std::vector<std::pair<int64_t, std::string>>> ScanLegacyShards(const PathTemplate::DirLister& list) const;
  // The episode index when a batch read of `count` episodes should use it, else null.
  internal::EpisodeIndex* IndexFor(size_t count) const;
  // VisitRowsAndSchemas; without `schemas`, `each` gets an empty span of them (VisitEpisodeRows).
  Status VisitBatches(const std::vector<EpisodeEntry>& episodes, const std::vector<std::string>& columns,
                      bool schemas, const RowsAndSchemasVisitor& each) const;
  // ReadEpisodeRows / ReadDataSchemas through `index` (null: every file read), not saving it.
  std::vector<Result<EpisodeRow>> RowsThrough(internal::EpisodeIndex* index, std::span<const EpisodeEntry> episodes,
                                              const std::vector<std::string>& columns) const;
  std::vector<Result<std::shared_ptr<arrow::Schema>>> SchemasThrough(internal::EpisodeIndex* index,
                                                                     std::span<const EpisodeEntry> episodes) const;
  // Writes `index` (null: none in use) back in kUpdate mode when it changed (best effort).
  void SaveIndex(internal::EpisodeIndex* index) const;
  // ReadEpisodeRows without the index: every row file read.
  std::vector<Result<EpisodeRow>> ReadRowFiles(const std::vector<EpisodeEntry>& episodes,
                                               const std::vector<std::string>& columns) const;
  // True when episode e, listed without an episodes row, has one now (it was being
  // published while it was listed).
  bool RowAppeared(const EpisodeEntry& e) const;

  std::string root_;
  FileSystem* fs_ = nullptr;
  int io_threads_ = 2;
  InfoJson info_;
  std::unique_ptr<PathTemplate> data_template_, video_template_, episodes_template_;
  // The episode index, loaded on first use by a batch read (null when off).
  internal::EpisodeIndex* Index() const;
  EpisodeIndexMode index_mode_ = EpisodeIndexMode::kUpdate;
  bool listing_cache_ = true;
  mutable std::once_flag index_once_;
  mutable std::unique_ptr<internal::EpisodeIndex> index_;
};

// Reads a whole parquet file through `fs`. Errors name the path: Corruption for
// a truncated or invalid file, NotFound for a named column that is absent.
Result<std::shared_ptr<arrow::Table>> ReadParquetFile(FileSystem* fs, const std::string& path,
                                                      const std::vector<std::string>& columns = {});
Result<std::shared_ptr<arrow::Schema>> ReadParquetSchema(FileSystem* fs, const std::string& path);

}  // namespace reel
