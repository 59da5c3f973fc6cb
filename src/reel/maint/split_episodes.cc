// split-episodes: legacy multi-row shards into one episodes file per episode
// (include/reel/maintenance.h, docs/maintenance.md).
//
// Why it is safe at every moment: readers take an episode's own file before a shard row
// for the same N (Task::ListEpisodes, FindEpisode), and each new file holds the shard's
// row unchanged, so a reader sees the same row whether it finds the file, the shard, or
// both. Each shard is one BeginTaskChange commit (meta/.commit-task.json, which hides no
// episode): the new files are renamed into place first, the shard is removed last; a
// kill before the journal is durable leaves dotfile temps (removed by the next writer's
// RemoveStaleTemps), a kill after it is rolled forward by the next TaskLock::Acquire.
#include <arrow/api.h>

#include <algorithm>
#include <set>

#include "reel/layout.h"
#include "reel/maintenance.h"
#include "reel/metadata.h"
#include "reel/task.h"
#include "io/parquet_io.h"
#include "write/transaction.h"

namespace reel {
namespace {

// Legacy v1.1.0 shard: named by its chunk (chunk-000/file-000.parquet), contract §2.
constexpr const char* kLegacyShardTemplate = "meta/episodes/chunk-{c:03d}/file-{f:03d}.parquet";

// One shard read whole: its table and, per table row, the episode_index.
struct ShardRows {
  std::string rel;
  std::shared_ptr<arrow::Table> table;
  std::vector<int64_t> episodes;
};

Result<ShardRows> ReadShard(const Task& task, const std::string& rel) {
  ShardRows shard;
  shard.rel = rel;
  const std::string path = task.Path(rel);
  REEL_ASSIGN_OR_RETURN(shard.table, ReadParquetFile(task.fs(), path));
  // Rows are located by the episode_index column, never by position (contract §12).
  REEL_ASSIGN_OR_RETURN(auto rows, EpisodeRowsFromTable(*shard.table, path));
  std::set<int64_t> seen;
  for (const EpisodeRow& r : rows) {
    if (!seen.insert(r.episode_index).second)
      return Status::Invalid(path + ": legacy shard holds several rows with episode_index " +
                             std::to_string(r.episode_index) + "; split-episodes cannot tell which to keep");
    shard.episodes.push_back(r.episode_index);
  }
  return shard;
}

// Decides, per row, whether it is written (its own file is absent) or kept (present),
// and refuses a template that renders an episode at the shard's own path.
Result<SplitShard> PlanShard(const Task& task, const ShardRows& shard) {
  SplitShard plan;
  plan.shard = shard.rel;
  for (int64_t n : shard.episodes) {
    REEL_ASSIGN_OR_RETURN(std::string rel, task.EpisodesPathOf(n));
    if (rel == shard.rel)
      return Status::Invalid(task.Path("meta/info.json") + ": episodes_path \"" + task.info().episodes_path +
                             "\" renders episode " + std::to_string(n) + " at the legacy shard's own path " +
                             rel + " (contract §2: v1.1.2 names episode files episode-NNN); not split");
    REEL_ASSIGN_OR_RETURN(FileInfo st, task.fs()->Stat(task.Path(rel)));
    if (st.type == FileType::kNotFound) {
      plan.split.push_back(n);
      plan.files.push_back(rel);
    } else {
      plan.kept.push_back(n);
    }
  }
  return plan;
}

// Writes the planned rows as temps, then commits them with the shard's removal.
Status SplitShardCommit(internal::TaskLock* lock, const ShardRows& shard, const SplitShard& plan,
                        const ProgressFn& progress, int64_t* done, int64_t total) {
  auto txn = internal::EpisodeTransaction::BeginTaskChange(lock);
  for (size_t i = 0; i < shard.episodes.size(); ++i) {
    const int64_t n = shard.episodes[i];
    auto at = std::find(plan.split.begin(), plan.split.end(), n);
    if (at != plan.split.end()) {
      const std::string& rel = plan.files[static_cast<size_t>(at - plan.split.begin())];
      REEL_ASSIGN_OR_RETURN(std::string temp, txn->NewTemp(rel, "split"));
      // The shard's row as it is: same schema (store_schema keeps the Arrow schema and its
      // metadata), same values, one row.
      REEL_RETURN_IF_ERROR(internal::WriteParquet(lock->fs(), temp, *shard.table->Slice(static_cast<int64_t>(i), 1),
                                                  {.row_group_rows = 1}));
    }
    if (progress) progress({"episodes split", ++*done, total, shard.rel + ": episode " + std::to_string(n)});
  }
  txn->Remove(shard.rel);
  return txn->CommitFiles();
}

Result<std::vector<ShardRows>> ReadShards(const Task& task) {
  static const PathTemplate shard_template = *PathTemplate::Parse(kLegacyShardTemplate);
  REEL_ASSIGN_OR_RETURN(auto found, shard_template.Glob(task.fs(), task.root()));
  std::vector<ShardRows> shards;
  // Every file-FFF.parquet is a shard, as for the readers (Task::ScanLegacyShards).
  for (auto& [rel, vars] : found) {
    REEL_ASSIGN_OR_RETURN(ShardRows shard, ReadShard(task, rel));
    shards.push_back(std::move(shard));
  }
  return shards;
}

}  // namespace

Result<SplitEpisodesReport> SplitEpisodes(const std::string& task_root, const SplitEpisodesOptions& options) {
  // "task/" names the task too; the transaction's paths are relative to the root as given.
  std::string root = task_root;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  FileSystem* fs = options.fs ? options.fs : DefaultFileSystem();
  SplitEpisodesReport report;
  report.task = task_root;
  report.dry_run = options.dry_run;
  // The lock first (it rolls an interrupted split forward), then the task as it is now.
  std::optional<internal::TaskLock> lock;
  if (!options.dry_run) {
    REEL_ASSIGN_OR_RETURN(internal::TaskLock acquired, internal::TaskLock::Acquire(fs, root));
    lock.emplace(std::move(acquired));
    REEL_RETURN_IF_ERROR(lock->RemoveStaleTemps());  // an earlier split's temps, killed before its journal
  }
  TaskOptions topts;
  topts.fs = fs;
  REEL_ASSIGN_OR_RETURN(auto task, Task::Open(root, topts));
  REEL_ASSIGN_OR_RETURN(auto shards, ReadShards(*task));
  int64_t total = 0, done = 0;
  for (const ShardRows& s : shards) total += static_cast<int64_t>(s.episodes.size());
  // Every shard is planned before the first is split: a refusal changes nothing.
  for (const ShardRows& s : shards) {
    REEL_ASSIGN_OR_RETURN(SplitShard plan, PlanShard(*task, s));
    report.episodes_split += static_cast<int64_t>(plan.split.size());
    report.episodes_kept += static_cast<int64_t>(plan.kept.size());
    report.shards.push_back(std::move(plan));
  }
  if (options.dry_run) return report;
  for (size_t i = 0; i < shards.size(); ++i) {
    Status st = SplitShardCommit(&*lock, shards[i], report.shards[i], options.progress, &done, total);
    if (!st.ok()) return st.WithContext(task->Path(shards[i].rel) + ": split-episodes");
  }
  return report;
}

}  // namespace reel
