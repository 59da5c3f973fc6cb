// Task: open a pooled_episodes_v1 task, enumerate its episodes, read its files.
#include "reel/task.h"

#include <arrow/api.h>
#include <parquet/arrow/reader.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <thread>
#include <unordered_map>

#include "io/parquet_io.h"
#include "util/parallel.h"
#include "layout/journal.h"
#include "read/episode_index.h"
#include "io/json_file.h"

namespace reel {

const char* RowSourceName(RowSource source) {
  switch (source) {
    case RowSource::kEpisodeFile: return "episode_file";
    case RowSource::kLegacyShard: return "legacy_shard";
    case RowSource::kMissing: return "missing";
  }
  return "missing";
}


namespace {

// The placeholder of a slot a parallel read fills in: an error, since a Result is a value or
// an error (status.h), and one no slot keeps unless the read skipped it.
Status NotReadYet() { return Status::IOError("internal: not read (the parallel read skipped this slot)"); }

// Legacy v1.1.0 shards: one multi-row episodes file per chunk (contract §2, §6.1).
constexpr const char* kLegacyShardTemplate = "meta/episodes/chunk-{c:03d}/file-{f:03d}.parquet";

std::optional<int64_t> EpisodeIndexOfVars(const PathVars& vars, int64_t chunks_size) {
  if (vars.episode_index) return *vars.episode_index;
  if (vars.chunk && vars.file) return EpisodeIndexOf({*vars.chunk, *vars.file}, chunks_size);
  return std::nullopt;
}

Result<std::vector<int64_t>> ReadShardEpisodeIndexes(FileSystem* fs, const std::string& path) {
  REEL_ASSIGN_OR_RETURN(auto table,
                        internal::ReadParquetTable(fs, path, {"episode_index"}, false));
  REEL_ASSIGN_OR_RETURN(auto rows, EpisodeRowsFromTable(*table, path));
  std::vector<int64_t> out;
  for (const EpisodeRow& r : rows) out.push_back(r.episode_index);
  return out;
}

// `list` (null: the file system's own listing) remembering what it listed for as long as
// the lister lives: the rows' directories hold the legacy shards too, and a second walk of
// them costs a request per directory on an object store.
PathTemplate::DirLister ListingEach(FileSystem* fs, const std::string& root, PathTemplate::DirLister list) {
  using Entries = std::shared_ptr<const std::vector<DirEntry>>;
  struct Seen {
    std::mutex mu;
    std::map<std::string, Entries> listed;
  };
  auto seen = std::make_shared<Seen>();
  return [fs, root, list = std::move(list), seen](const std::string& relative) -> Result<Entries> {
    {
      std::lock_guard<std::mutex> lock(seen->mu);
      if (auto it = seen->listed.find(relative); it != seen->listed.end()) return it->second;
    }
    Entries entries;
    if (list) {
      REEL_ASSIGN_OR_RETURN(entries, list(relative));
    } else {
      REEL_ASSIGN_OR_RETURN(std::vector<DirEntry> listed, fs->ListDir(JoinPath(root, relative)));
      entries = std::make_shared<const std::vector<DirEntry>>(std::move(listed));
    }
    std::lock_guard<std::mutex> lock(seen->mu);
    seen->listed.emplace(relative, entries);
    return entries;
  };
}

// Forwards batches while keeping the parquet FileReader alive.
class OwningBatchReader final : public arrow::RecordBatchReader {
 public:
  OwningBatchReader(std::shared_ptr<parquet::arrow::FileReader> owner,
                    std::unique_ptr<arrow::RecordBatchReader> inner)
      : owner_(std::move(owner)), inner_(std::move(inner)) {}
  std::shared_ptr<arrow::Schema> schema() const override { return inner_->schema(); }
  arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* batch) override {
    return inner_->ReadNext(batch);
  }

 private:
  std::shared_ptr<parquet::arrow::FileReader> owner_;
  std::unique_ptr<arrow::RecordBatchReader> inner_;
};


// The stamps of `relatives` for the episode index. Without the listing cache (reel check)
// every file is stat-ed: that is what catches a file rewritten in place (EpisodeIndex::Stamp).
std::vector<std::optional<internal::FileStamp>> StampFiles(internal::EpisodeIndex* index, FileSystem* fs,
                                                           const std::string& root,
                                                           const std::vector<std::string>& relatives, int threads,
                                                           bool listing_cache) {
  return index->Stamp(fs, root, relatives, threads, /*trust_listings=*/listing_cache);
}

}  // namespace

Result<std::unique_ptr<Task>> Task::Open(const std::string& root, const TaskOptions& options) {
  FileSystem* fs = options.fs ? options.fs : DefaultFileSystem();
  REEL_ASSIGN_OR_RETURN(DetectedFormat format, DetectFormat(fs, root));
  if (format.format != DatasetFormat::kPooledEpisodesV1)
    return Status::NotSupported(root + ": is a " + DatasetFormatName(format.format) + " dataset (" +
                                format.version + "); this reader opens pooled_episodes_v1 tasks" +
                                (format.format == DatasetFormat::kLegacyV1_0
                                     ? " (convert it with `reel migrate " + root + "`)"
                                     : ""));
  const std::string info_path = JoinPath(root, "meta/info.json");
  REEL_ASSIGN_OR_RETURN(std::string text, internal::ReadFileBounded(fs, info_path, internal::kJsonFileBytes));
  REEL_ASSIGN_OR_RETURN(InfoJson info, ParseInfoJson(text, info_path));

  std::unique_ptr<Task> task(new Task());
  task->root_ = root;
  task->fs_ = fs;
  task->index_mode_ = options.episode_index;
  task->listing_cache_ = options.listing_cache;
  task->io_threads_ = options.io_threads > 0
                          ? options.io_threads
                          : std::max(2, static_cast<int>(std::thread::hardware_concurrency()));
  task->info_ = std::move(info);
  auto compile = [&](const std::string& text, const char* key,
                     std::unique_ptr<PathTemplate>& out) -> Status {
    auto t = PathTemplate::Parse(text);
    if (!t.ok()) return t.status().WithContext(info_path + ": " + key);
    out = std::make_unique<PathTemplate>(std::move(*t));
    return Status::OK();
  };
  REEL_RETURN_IF_ERROR(compile(task->info_.data_path, "data_path", task->data_template_));
  REEL_RETURN_IF_ERROR(compile(task->info_.video_path, "video_path", task->video_template_));
  REEL_RETURN_IF_ERROR(compile(task->info_.episodes_path, "episodes_path", task->episodes_template_));
  return task;
}

Result<std::string> Task::DataPathOf(int64_t n) const {
  EpisodeLocation loc = LocateEpisode(n, chunks_size());
  return data_template_->Render({loc.chunk, loc.file, n, std::nullopt, std::nullopt});
}

Result<std::string> Task::EpisodesPathOf(int64_t n) const {
  EpisodeLocation loc = LocateEpisode(n, chunks_size());
  return episodes_template_->Render({loc.chunk, loc.file, n, std::nullopt, std::nullopt});
}

Result<std::string> Task::VideoPathOf(int64_t n, const std::string& image_key) const {
  const std::string* ext = Lookup(info_.video_extensions, image_key);
  if (!ext)
    return Status::NotFound(JoinPath(root_, "meta/info.json") + ": video_extensions has no slot \"" +
                            image_key + "\"");
  EpisodeLocation loc = LocateEpisode(n, chunks_size());
  REEL_ASSIGN_OR_RETURN(std::string declared,
                        video_template_->Render({loc.chunk, loc.file, n, image_key, *ext}));
  // One video_extensions entry per slot, but a slot whose depth codec changed between
  // episodes holds both types (contract-decisions): the declared file first, then the
  // other allowed one.
  const char* other = *ext == "mp4" ? "mkv" : *ext == "mkv" ? "mp4" : nullptr;
  if (!other) return declared;
  REEL_ASSIGN_OR_RETURN(FileInfo found, fs_->Stat(Path(declared)));
  if (found.type != FileType::kNotFound) return declared;
  REEL_ASSIGN_OR_RETURN(std::string fallback,
                        video_template_->Render({loc.chunk, loc.file, n, image_key, std::string(other)}));
  REEL_ASSIGN_OR_RETURN(found, fs_->Stat(Path(fallback)));
  return found.type == FileType::kNotFound ? declared : fallback;
}

bool Task::RowAppeared(const EpisodeEntry& e) const {
  auto rel = episodes_template_->Render({e.location.chunk, e.location.file, e.episode_index, std::nullopt, std::nullopt});
  if (!rel.ok()) return false;
  auto found = fs_->Stat(Path(*rel));
  return found.ok() && found->type == FileType::kFile;
}

Result<std::vector<EpisodeEntry>> Task::ListEpisodes() const {
  // Entries in the order first seen, found by N through `slot`; sorted by N at the end.
  std::vector<EpisodeEntry> episodes;
  std::unordered_map<int64_t, size_t> slot;
  // Sized for what info.json says the task holds (bounded: it is the task's own input), so
  // that a large task's entries are not moved and held twice while the vector grows.
  const size_t expected = static_cast<size_t>(std::clamp<int64_t>(info_.total_episodes, 0, int64_t{1} << 20));
  episodes.reserve(expected);
  slot.reserve(expected);
  auto entry = [&](int64_t n) -> EpisodeEntry& {
    auto [it, added] = slot.try_emplace(n, episodes.size());
    if (added) {
      EpisodeEntry& e = episodes.emplace_back();
      e.episode_index = n;
      e.location = LocateEpisode(n, chunks_size());
    }
    return episodes[it->second];
  };
  // Listed in the reverse of the order a commit or a push publishes an episode (videos,
  // data, episodes row; docs/storage.md), so that whatever is seen implies that what was
  // published before it is seen too: a row seen means its episode is whole.
  // Unchanged directories are answered by the episode index's listings (unless told not to).
  // Each match is taken as the glob finds it: no list of the task's files is held.
  internal::EpisodeIndex* index = Index();
  const PathTemplate::DirLister list = index && listing_cache_ ? index->Lister(fs_, root_) : nullptr;
  {
    // Rows, then the legacy shards beside them through one walk of their directories, whose
    // listings are dropped before the rest is listed.
    const PathTemplate::DirLister rows_list = ListingEach(fs_, root_, list);
    REEL_RETURN_IF_ERROR(episodes_template_->GlobEach(fs_, root_, {}, rows_list, [&](std::string path, PathVars vars) {
      if (auto n = EpisodeIndexOfVars(vars, chunks_size())) {
        EpisodeEntry& e = entry(*n);
        e.row_source = RowSource::kEpisodeFile;
        e.row_path = std::move(path);
      }
      return Status::OK();
    }));
    REEL_ASSIGN_OR_RETURN(auto shards, ScanLegacyShards(rows_list));
    for (auto& [n, path] : shards) {
      EpisodeEntry& e = entry(n);
      if (e.row_source == RowSource::kMissing) {
        e.row_source = RowSource::kLegacyShard;
        e.row_path = path;
      }
    }
  }
  REEL_RETURN_IF_ERROR(data_template_->GlobEach(fs_, root_, {}, list, [&](std::string path, PathVars vars) {
    if (auto n = EpisodeIndexOfVars(vars, chunks_size())) entry(*n).data_path = std::move(path);
    return Status::OK();
  }));
  REEL_RETURN_IF_ERROR(video_template_->GlobEach(fs_, root_, {}, list, [&](std::string path, PathVars vars) {
    if (auto n = EpisodeIndexOfVars(vars, chunks_size()); n && vars.image_key)
      entry(*n).videos.emplace_back(std::move(*vars.image_key), std::move(path));
    return Status::OK();
  }));
  // An episode whose commit journal is still present is not there yet (all or nothing).
  REEL_ASSIGN_OR_RETURN(const std::vector<int64_t> pending, internal::PendingCommits(fs_, root_));
  const std::set<int64_t> not_yet(pending.begin(), pending.end());
  // One that had no row when the rows were listed but has one now was published while
  // this listing ran (journal created and removed in between): its other files may have
  // been listed half-way, so it is left for the next listing.
  std::erase_if(episodes, [&](const EpisodeEntry& e) {
    return not_yet.count(e.episode_index) || (e.row_source == RowSource::kMissing && RowAppeared(e));
  });
  std::sort(episodes.begin(), episodes.end(),
            [](const EpisodeEntry& a, const EpisodeEntry& b) { return a.episode_index < b.episode_index; });
  for (EpisodeEntry& e : episodes) std::sort(e.videos.begin(), e.videos.end());
  return episodes;
}

Result<std::vector<std::pair<int64_t, std::string>>> Task::ScanLegacyShards(
    const PathTemplate::DirLister& list) const {
  static const PathTemplate shard_template = *PathTemplate::Parse(kLegacyShardTemplate);
  REEL_ASSIGN_OR_RETURN(auto shards, shard_template.Glob(fs_, root_, {}, list));
  std::vector<Result<std::vector<int64_t>>> indexes(shards.size(), NotReadYet());
  internal::ParallelFor(static_cast<int64_t>(shards.size()), io_threads_, [&](int64_t i) {
    indexes[i] = ReadShardEpisodeIndexes(fs_, Path(shards[i].first));
  });
  std::vector<std::pair<int64_t, std::string>> out;
  for (size_t i = 0; i < shards.size(); ++i) {
    if (!indexes[i].ok()) return indexes[i].status();
    for (int64_t n : *indexes[i]) out.emplace_back(n, shards[i].first);
  }
  return out;
}

Result<EpisodeEntry> Task::FindEpisode(int64_t n) const {
  if (n < 1) return Status::Invalid("episode index must be >= 1, got " + std::to_string(n));
  EpisodeEntry e;
  e.episode_index = n;
  e.location = LocateEpisode(n, chunks_size());
  PathVars fixed{e.location.chunk, e.location.file, n, std::nullopt, std::nullopt};
  // Rows, data, videos: the reverse of the publishing order (see ListEpisodes).
  REEL_ASSIGN_OR_RETURN(auto rows, episodes_template_->Glob(fs_, root_, fixed));
  REEL_ASSIGN_OR_RETURN(auto data, data_template_->Glob(fs_, root_, fixed));
  if (!data.empty()) e.data_path = data.front().first;
  REEL_ASSIGN_OR_RETURN(auto videos, video_template_->Glob(fs_, root_, fixed));
  for (auto& [path, vars] : videos)
    if (vars.image_key) e.videos.emplace_back(*vars.image_key, path);
  std::sort(e.videos.begin(), e.videos.end());
  if (!rows.empty()) {
    e.row_source = RowSource::kEpisodeFile;
    e.row_path = rows.front().first;
  } else {
    static const PathTemplate shard_template = *PathTemplate::Parse(kLegacyShardTemplate);
    PathVars chunk_only;
    chunk_only.chunk = e.location.chunk;
    REEL_ASSIGN_OR_RETURN(auto shards, shard_template.Glob(fs_, root_, chunk_only));
    for (auto& [path, vars] : shards) {
      REEL_ASSIGN_OR_RETURN(auto indexes, ReadShardEpisodeIndexes(fs_, Path(path)));
      if (std::find(indexes.begin(), indexes.end(), n) != indexes.end()) {
        e.row_source = RowSource::kLegacyShard;
        e.row_path = path;
        break;
      }
    }
  }
  REEL_ASSIGN_OR_RETURN(const std::vector<int64_t> pending, internal::PendingCommits(fs_, root_));
  const bool committing = std::find(pending.begin(), pending.end(), n) != pending.end() ||
                          (e.row_source == RowSource::kMissing && RowAppeared(e));
  if (committing || (e.data_path.empty() && e.videos.empty() && e.row_source == RowSource::kMissing))
    return Status::NotFound(root_ + ": no episode " + std::to_string(n) + " (no data, video or " +
                            "episodes row at chunk " + std::to_string(e.location.chunk) + ", file " +
                            std::to_string(e.location.file) + ")");
  return e;
}

namespace {

Result<EpisodeRow> PickRow(std::vector<EpisodeRow> rows, int64_t n, const std::string& path) {
  for (EpisodeRow& r : rows)
    if (r.episode_index == n) return std::move(r);
  return Status::NotFound(path + ": no episodes row with episode_index " + std::to_string(n));
}

}  // namespace

Result<EpisodeRow> Task::ReadEpisodeRow(const EpisodeEntry& episode) const {
  return std::move(ReadEpisodeRows({episode}).front());
}

Task::~Task() = default;

internal::EpisodeIndex* Task::Index() const {
  if (index_mode_ == EpisodeIndexMode::kOff) return nullptr;
  std::call_once(index_once_, [this] { index_ = internal::EpisodeIndex::Load(fs_, root_); });
  return index_.get();
}

namespace {

// Batches smaller than this read their files: loading the index of a large task would
// cost more than it saves (one episode's row, `reel show N`).
constexpr size_t kIndexMinEpisodes = 32;

// Nor does a batch that is a small part of a large task: loading the index costs about 2 µs
// per episode the task holds (0.17 s at 100,000, warm), reading an episode's row and footer
// about 0.5 ms, so the index pays from about 1/256 of the task on (bench_growth: exporting
// 100 episodes of 100,000 loaded the whole index, 1.7x its cost at 1,000 and 100 MB more).
// `total_episodes` as info.json declares it (0 when unknown: the index is used).
bool WorthTheIndex(size_t batch, int64_t total_episodes) {
  return batch >= kIndexMinEpisodes && static_cast<int64_t>(batch) * 256 >= total_episodes;
}

// Erases from missing_columns the columns a narrowed read did not ask for.
void KeepWanted(EpisodeRow& row, const std::vector<std::string>& wanted) {
  if (wanted.empty()) return;
  std::erase_if(row.missing_columns,
                [&](const std::string& c) { return std::find(wanted.begin(), wanted.end(), c) == wanted.end(); });
}

}  // namespace

std::vector<Result<EpisodeRow>> Task::ReadEpisodeRows(
    const std::vector<EpisodeEntry>& episodes, const std::vector<std::string>& columns) const {
  internal::EpisodeIndex* index = IndexFor(episodes.size());
  std::vector<Result<EpisodeRow>> out = RowsThrough(index, episodes, columns);
  SaveIndex(index);
  return out;
}

std::vector<Result<std::shared_ptr<arrow::Schema>>> Task::ReadDataSchemas(
    const std::vector<EpisodeEntry>& episodes) const {
  internal::EpisodeIndex* index = IndexFor(episodes.size());
  std::vector<Result<std::shared_ptr<arrow::Schema>>> out = SchemasThrough(index, episodes);
  SaveIndex(index);
  return out;
}

Task::RowsAndSchemas Task::ReadRowsAndSchemas(const std::vector<EpisodeEntry>& episodes,
                                              const std::vector<std::string>& columns) const {
  internal::EpisodeIndex* index = IndexFor(episodes.size());
  RowsAndSchemas out{RowsThrough(index, episodes, columns), SchemasThrough(index, episodes)};
  SaveIndex(index);
  return out;
}

Status Task::VisitRowsAndSchemas(const std::vector<EpisodeEntry>& episodes, const std::vector<std::string>& columns,
                                 const RowsAndSchemasVisitor& each) const {
  return VisitBatches(episodes, columns, /*schemas=*/true, each);
}

Status Task::VisitEpisodeRows(const std::vector<EpisodeEntry>& episodes, const std::vector<std::string>& columns,
                              const RowsVisitor& each) const {
  return VisitBatches(episodes, columns, /*schemas=*/false,
                      [&](size_t first, std::span<const Result<EpisodeRow>> rows,
                          std::span<const Result<std::shared_ptr<arrow::Schema>>>) { return each(first, rows); });
}

Status Task::VisitBatches(const std::vector<EpisodeEntry>& episodes, const std::vector<std::string>& columns,
                          bool schemas, const RowsAndSchemasVisitor& each) const {
  // 4,096 episodes' rows are about 2 MB, and a batch keeps every I/O thread busy.
  constexpr size_t kBatch = 4096;
  internal::EpisodeIndex* index = IndexFor(episodes.size());
  Status st;
  for (size_t start = 0; start < episodes.size() && st.ok(); start += kBatch) {
    const std::span<const EpisodeEntry> batch(episodes.data() + start, std::min(kBatch, episodes.size() - start));
    const std::vector<Result<EpisodeRow>> rows = RowsThrough(index, batch, columns);
    const std::vector<Result<std::shared_ptr<arrow::Schema>>> footers =
        schemas ? SchemasThrough(index, batch) : std::vector<Result<std::shared_ptr<arrow::Schema>>>{};
    st = each(start, rows, footers);
  }
  SaveIndex(index);
  return st;
}

internal::EpisodeIndex* Task::IndexFor(size_t count) const {
  return WorthTheIndex(count, info_.total_episodes) ? Index() : nullptr;
}

// Without the listing cache (reel check, which must leave the task as it found it) the
// index is written only to correct a stamp the listing cache would serve wrong.
void Task::SaveIndex(internal::EpisodeIndex* index) const {
  if (!index || index_mode_ != EpisodeIndexMode::kUpdate) return;
  if (!listing_cache_ && !index->CorrectedInPlace()) return;
  (void)index->SaveIfChanged(fs_, root_);
}

std::vector<Result<EpisodeRow>> Task::RowsThrough(internal::EpisodeIndex* index,
                                                  std::span<const EpisodeEntry> episodes,
                                                  const std::vector<std::string>& columns) const {
  std::vector<std::optional<internal::FileStamp>> stamps(episodes.size());
  std::vector<std::optional<EpisodeRow>> cached(episodes.size());
  if (index) {
    std::vector<std::string> row_files(episodes.size());
    for (size_t i = 0; i < episodes.size(); ++i)
      if (episodes[i].row_source == RowSource::kEpisodeFile) row_files[i] = episodes[i].row_path;
    stamps = StampFiles(index, fs_, root_, row_files, io_threads_, listing_cache_);
    internal::ParallelFor(static_cast<int64_t>(episodes.size()), io_threads_, [&](int64_t i) {
      if (stamps[i]) cached[i] = index->Row(episodes[i].episode_index, *stamps[i], columns);
    });
  }
  std::vector<EpisodeEntry> misses;
  for (size_t i = 0; i < episodes.size(); ++i)
    if (!cached[i]) misses.push_back(episodes[i]);
  // A miss is read whole when the index is on, so that it can be remembered.
  std::vector<Result<EpisodeRow>> read = ReadRowFiles(misses, index ? std::vector<std::string>{} : columns);
  std::vector<Result<EpisodeRow>> out;
  out.reserve(episodes.size());
  std::vector<std::string> wanted = columns;
  if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), "episode_index") == wanted.end())
    wanted.push_back("episode_index");
  for (size_t i = 0, m = 0; i < episodes.size(); ++i) {
    if (!cached[i]) {
      Result<EpisodeRow>& r = read[m++];
      if (r.ok() && stamps[i]) index->PutRow(episodes[i].episode_index, *stamps[i], *r);
      out.push_back(std::move(r));
    } else {
      out.emplace_back(std::move(*cached[i]));
    }
    if (out.back().ok()) KeepWanted(*out.back(), wanted);
  }
  return out;
}

std::vector<Result<EpisodeRow>> Task::ReadRowFiles(
    const std::vector<EpisodeEntry>& episodes, const std::vector<std::string>& columns) const {
  std::vector<std::string> wanted = columns;
  if (!wanted.empty() &&
      std::find(wanted.begin(), wanted.end(), "episode_index") == wanted.end())
    wanted.push_back("episode_index");
  // Each distinct file is read once, so a legacy shard serves all its episodes.
  std::vector<std::string> files;
  std::map<std::string, size_t> file_slot;
  for (const EpisodeEntry& e : episodes)
    if (e.row_source != RowSource::kMissing && file_slot.emplace(e.row_path, files.size()).second)
      files.push_back(e.row_path);
  std::vector<Result<std::vector<EpisodeRow>>> tables(files.size(), NotReadYet());
  internal::ParallelFor(static_cast<int64_t>(files.size()), io_threads_, [&](int64_t i) {
    const std::string path = Path(files[i]);
    auto table = wanted.empty() ? internal::ReadParquetTable(fs_, path, {}, false)
                                : internal::ReadParquetColumnsPresent(fs_, path, wanted);
    tables[i] = table.ok() ? EpisodeRowsFromTable(**table, path)
                           : Result<std::vector<EpisodeRow>>(table.status());
    if (tables[i].ok() && !wanted.empty())
      for (EpisodeRow& row : *tables[i])
        std::erase_if(row.missing_columns, [&](const std::string& c) {
          return std::find(wanted.begin(), wanted.end(), c) == wanted.end();
        });
  });
  std::vector<Result<EpisodeRow>> out;
  out.reserve(episodes.size());
  for (const EpisodeEntry& e : episodes) {
    if (e.row_source == RowSource::kMissing) {
      out.emplace_back(Status::NotFound(root_ + ": episode " + std::to_string(e.episode_index) +
                                        " has no meta/episodes row"));
      continue;
    }
    const auto& rows = tables[file_slot[e.row_path]];
    if (!rows.ok()) {
      out.emplace_back(rows.status());
      continue;
    }
    // A per-episode file has one row; tolerate a stray N mismatch only via the checker.
    if (e.row_source == RowSource::kEpisodeFile && rows->size() == 1) {
      out.emplace_back(rows->front());
    } else {
      out.emplace_back(PickRow(*rows, e.episode_index, Path(e.row_path)));
    }
  }
  return out;
}

Result<std::shared_ptr<arrow::Schema>> Task::ReadDataSchema(const EpisodeEntry& episode) const {
  if (episode.data_path.empty())
    return Status::NotFound(root_ + ": episode " + std::to_string(episode.episode_index) +
                            " has no data parquet");
  return ReadParquetSchema(fs_, Path(episode.data_path));
}

std::vector<Result<std::shared_ptr<arrow::Schema>>> Task::SchemasThrough(
    internal::EpisodeIndex* index, std::span<const EpisodeEntry> episodes) const {
  std::vector<Result<std::shared_ptr<arrow::Schema>>> out(episodes.size(), NotReadYet());
  std::vector<std::optional<internal::FileStamp>> stamps(episodes.size());
  if (index) {
    std::vector<std::string> data_files(episodes.size());
    for (size_t i = 0; i < episodes.size(); ++i) data_files[i] = episodes[i].data_path;
    stamps = StampFiles(index, fs_, root_, data_files, io_threads_, listing_cache_);
  }
  internal::ParallelFor(static_cast<int64_t>(episodes.size()), io_threads_, [&](int64_t i) {
    const EpisodeEntry& e = episodes[i];
    const std::optional<internal::FileStamp>& stamp = stamps[i];
    if (stamp) {
      if (auto schema = index->DataSchema(e.episode_index, *stamp)) {
        out[i] = std::move(schema);
        return;
      }
    }
    out[i] = ReadDataSchema(e);
    if (stamp && out[i].ok()) index->PutDataSchema(e.episode_index, *stamp, *out[i]);
  });
  return out;
}

Result<std::shared_ptr<arrow::Table>> Task::ReadData(const EpisodeEntry& episode,
                                                     const std::vector<std::string>& columns) const {
  if (episode.data_path.empty())
    return Status::NotFound(root_ + ": episode " + std::to_string(episode.episode_index) +
                            " has no data parquet");
  return internal::ReadParquetTable(fs_, Path(episode.data_path), columns, true);
}

Result<std::shared_ptr<arrow::Array>> Task::ReadDataRows(const EpisodeEntry& episode, const std::string& column,
                                                         const std::vector<int64_t>& rows) const {
  if (episode.data_path.empty())
    return Status::NotFound(root_ + ": episode " + std::to_string(episode.episode_index) + " has no data parquet");
  const std::string path = Path(episode.data_path);
  internal::ParquetSource source;
  REEL_ASSIGN_OR_RETURN(auto reader, internal::OpenParquet(fs_, path, false, &source));
  return internal::ReadListRows(*reader, source, column, rows, path);
}

Result<std::shared_ptr<arrow::RecordBatchReader>> Task::OpenData(
    const EpisodeEntry& episode, const std::vector<std::string>& columns) const {
  if (episode.data_path.empty())
    return Status::NotFound(root_ + ": episode " + std::to_string(episode.episode_index) +
                            " has no data parquet");
  const std::string path = Path(episode.data_path);
  REEL_ASSIGN_OR_RETURN(auto reader, internal::OpenParquet(fs_, path, true));
  std::vector<int> row_groups(static_cast<size_t>(reader->num_row_groups()));
  for (size_t i = 0; i < row_groups.size(); ++i) row_groups[i] = static_cast<int>(i);
  std::vector<int> leaves;
  if (columns.empty()) {
    for (int i = 0; i < reader->parquet_reader()->metadata()->num_columns(); ++i) leaves.push_back(i);
  } else {
    REEL_ASSIGN_OR_RETURN(leaves, internal::LeafIndices(*reader, columns, path));
  }
  auto batches = reader->GetRecordBatchReader(row_groups, leaves);
  if (!batches.ok())
    return Status::Corruption(path + ": cannot read parquet data (" + batches.status().message() +
                              ")");
  return std::shared_ptr<arrow::RecordBatchReader>(
      std::make_shared<OwningBatchReader>(reader, std::move(*batches)));
}

Result<StatsJson> Task::ReadStats() const {
  const std::string path = Path("meta/stats.json");
  REEL_ASSIGN_OR_RETURN(std::string text, internal::ReadFileBounded(fs_, path, internal::kJsonFileBytes));
  return ParseStatsJson(text, path);
}

Result<std::vector<TaskEntry>> Task::ReadTasks() const {
  const std::string path = Path("meta/tasks.jsonl");
  REEL_ASSIGN_OR_RETURN(std::string text, internal::ReadFileBounded(fs_, path, internal::kJsonFileBytes));
  return ParseTasksJsonl(text, path);
}

// ---- parquet files ----------------------------------------------------------------------


Result<std::shared_ptr<arrow::Schema>> ReadParquetSchema(FileSystem* fs, const std::string& path) {
  REEL_ASSIGN_OR_RETURN(auto reader, internal::OpenParquet(fs, path, false));
  std::shared_ptr<arrow::Schema> schema;
  arrow::Status st = reader->GetSchema(&schema);
  if (!st.ok()) return Status::Corruption(path + ": unreadable parquet schema (" + st.message() + ")");
  return schema;
}

Result<std::shared_ptr<arrow::Table>> ReadParquetFile(FileSystem* fs, const std::string& path,
                                                      const std::vector<std::string>& columns) {
  return internal::ReadParquetTable(fs, path, columns, /*use_threads=*/true);
}

}  // namespace reel
