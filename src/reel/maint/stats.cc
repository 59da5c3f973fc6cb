// reel stats --rebuild / --verify (include/reel/maintenance.h): meta/stats.json recomputed
// from data/ with the recorder's own accumulator (write/episode_stats.h) and merge
// (reel/merge.h), written through a task change of the episode transaction.
#include <arrow/api.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "reel/columns.h"
#include "reel/json_limits.h"
#include "reel/maintenance.h"
#include "reel/merge.h"
#include "reel/task.h"
#include "util/json_util.h"
#include "write/episode_stats.h"
#include "write/task_files.h"
#include "write/transaction.h"

namespace reel {

namespace {

// The columns the contract counts (§4): glove observation.<sensor> and observation.imu.
bool IsCountedColumn(const std::string& name, const std::vector<std::string>& sensors) {
  return name == "observation.imu" || ClassifyColumn(name, sensors) == ColumnFamily::kGlove;
}

struct Recomputed {
  StatsJson stats;
  int64_t episodes = 0;
};

// Every episode's counted columns, merged in N order onto `base` (whose counted blocks
// were reset). `data_columns` collects every column name any data file has.
Result<Recomputed> MergeEpisodes(const Task& task, StatsJson base, std::set<std::string>& data_columns,
                                 const ProgressFn& progress) {
  REEL_ASSIGN_OR_RETURN(auto episodes, task.ListEpisodes());
  const std::vector<std::string>& sensors = task.info().sensors;
  Recomputed out{std::move(base), 0};
  int64_t done = 0;
  for (const EpisodeEntry& e : episodes) {
    ++done;
    if (e.data_path.empty()) continue;  // deleted after upload: nothing to count
    REEL_ASSIGN_OR_RETURN(auto schema, task.ReadDataSchema(e));
    std::vector<std::string> columns;
    for (const auto& f : schema->fields()) {
      data_columns.insert(f->name());
      if (IsCountedColumn(f->name(), sensors)) columns.push_back(f->name());
    }
    ++out.episodes;
    if (!columns.empty()) {
      REEL_ASSIGN_OR_RETURN(auto table, task.ReadData(e, columns));
      auto blocks = internal::EpisodeStatsFromTable(*table, sensors);
      if (!blocks.ok()) return blocks.status().WithContext(task.Path(e.data_path));
      auto merged = MergeStats(out.stats, *blocks);
      if (!merged.ok()) return merged.status().WithContext(task.Path(e.data_path));
      out.stats = std::move(merged).value();
    }
    if (progress) progress({"episodes read", done, static_cast<int64_t>(episodes.size()),
                            "episode " + std::to_string(e.episode_index)});
  }
  return out;
}

bool Close(double a, double b) {
  return std::abs(a - b) <= 1e-6 * std::max({1.0, std::abs(a), std::abs(b)});
}

std::string Num(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

// The first element where two vectors disagree, and how many do.
void CompareVector(const std::string& block, const char* what, const std::vector<double>& stored,
                   const std::vector<double>& rebuilt, std::vector<StatsBlockDiff>& out) {
  int64_t differing = 0;
  size_t first = 0;
  for (size_t i = 0; i < stored.size() && i < rebuilt.size(); ++i)
    if (!Close(stored[i], rebuilt[i]) && differing++ == 0) first = i;
  if (differing == 0) return;
  out.push_back({block, what,
                 std::to_string(differing) + " of " + std::to_string(stored.size()) + " differ, first [" +
                     std::to_string(first) + "] stored " + Num(stored[first]) + ", recomputed " +
                     Num(rebuilt[first])});
}

void CompareBlock(const std::string& name, const StatsBlock& s, const StatsBlock& r,
                  std::vector<StatsBlockDiff>& out) {
  if (!s.count) {
    out.push_back({name, "count", "stored block has no count (v1.1.0), recomputed " + std::to_string(*r.count)});
  } else if (*s.count != r.count.value_or(-1)) {
    out.push_back({name, "count", "stored " + std::to_string(*s.count) + ", recomputed " +
                                      std::to_string(r.count.value_or(-1))});
  }
  if (s.mean.size() != r.mean.size() || s.std.size() != r.mean.size() || s.min.size() != r.mean.size() ||
      s.max.size() != r.mean.size()) {
    out.push_back({name, "dim", "stored " + std::to_string(s.mean.size()) + ", recomputed " +
                                    std::to_string(r.mean.size())});
    return;
  }
  CompareVector(name, "mean", s.mean, r.mean, out);
  CompareVector(name, "std", s.std, r.std, out);
  CompareVector(name, "min", s.min, r.min, out);
  CompareVector(name, "max", s.max, r.max, out);
}

std::vector<StatsBlockDiff> Compare(const StatsJson& stored, const StatsJson& rebuilt) {
  std::vector<StatsBlockDiff> out;
  auto find = [](const StatsJson& j, const std::string& name) -> const StatsBlock* {
    for (const auto& [n, b] : j.blocks)
      if (n == name) return &b;
    return nullptr;
  };
  for (const auto& [name, r] : rebuilt.blocks) {
    const StatsBlock* s = find(stored, name);
    if (!s) {
      out.push_back({name, "missing in stored", "recomputed count " + std::to_string(r.count.value_or(0))});
    } else {
      CompareBlock(name, *s, r, out);
    }
  }
  for (const auto& [name, s] : stored.blocks)
    if (!find(rebuilt, name))
      out.push_back({name, "removed", "a data column the contract does not count (§4)"});
  return out;
}

// `stored` with every counted block reset to an empty one (to be recounted) and action
// the placeholder; other blocks as they are.
StatsJson Base(const StatsJson& stored, const std::vector<std::string>& sensors) {
  StatsJson base = stored;
  for (auto& [name, b] : base.blocks) {
    if (name == "action") {
      b = ActionPlaceholderBlock();
    } else if (IsCountedColumn(name, sensors)) {
      b = EmptyBlock(static_cast<int64_t>(b.mean.size()));
    }
  }
  return base;
}

// Drops the blocks of data columns the contract does not count (hand pose placeholders,
// gripper, force matrix, glove IMU), from the blocks and from the kept source text.
Status DropUncounted(StatsJson& stats, const std::set<std::string>& data_columns,
                     const std::vector<std::string>& sensors) {
  std::vector<std::string> drop;
  for (const auto& [name, b] : stats.blocks)
    if (name != "action" && data_columns.count(name) && !IsCountedColumn(name, sensors)) drop.push_back(name);
  if (drop.empty()) return Status::OK();
  std::erase_if(stats.blocks, [&](const auto& kv) {
    return std::find(drop.begin(), drop.end(), kv.first) != drop.end();
  });
  if (stats.source_json.empty()) return Status::OK();
  REEL_ASSIGN_OR_RETURN(auto doc, internal::ParseJson(stats.source_json, "meta/stats.json"));
  for (const std::string& name : drop) doc.erase(name);
  stats.source_json = internal::Dump(doc, -1);
  return Status::OK();
}

}  // namespace

Result<RebuildStatsReport> RebuildStats(const std::string& root, const RebuildStatsOptions& options,
                                        FileSystem* fs) {
  if (fs == nullptr) fs = DefaultFileSystem();
  // Under the lock for the whole run: a recording that commits meanwhile would merge into
  // the old file and be lost when the rebuilt one replaces it.
  REEL_ASSIGN_OR_RETURN(internal::TaskLock lock, internal::TaskLock::Acquire(fs, root));
  REEL_ASSIGN_OR_RETURN(auto task, Task::Open(root, {fs, 0, EpisodeIndexMode::kRead}));
  RebuildStatsReport report;
  report.dry_run = options.dry_run;
  const std::string path = JoinPath(root, internal::kStatsPath);
  REEL_ASSIGN_OR_RETURN(FileInfo st, fs->Stat(path));
  StatsJson stored;
  if (st.type != FileType::kNotFound) {
    // Bounded before it is read: its bytes come from the store (JsonLimits).
    if (st.size > static_cast<uint64_t>(JsonLimits{}.max_bytes))
      return Status::Invalid(path + ": json.size: " + std::to_string(st.size) + " bytes, above the " +
                             std::to_string(JsonLimits{}.max_bytes) + "-byte limit");
    REEL_ASSIGN_OR_RETURN(report.stored_json, fs->ReadFile(path));
    REEL_ASSIGN_OR_RETURN(stored, ParseStatsJson(report.stored_json, path));
  }
  std::set<std::string> data_columns;
  const std::vector<std::string>& sensors = task->info().sensors;
  REEL_ASSIGN_OR_RETURN(Recomputed first, MergeEpisodes(*task, Base(stored, sensors), data_columns,
                                                        options.progress));
  StatsJson rebuilt = std::move(first.stats);
  REEL_RETURN_IF_ERROR(DropUncounted(rebuilt, data_columns, sensors));
  if (std::none_of(rebuilt.blocks.begin(), rebuilt.blocks.end(), [](const auto& kv) { return kv.first == "action"; }))
    rebuilt.blocks.emplace_back("action", ActionPlaceholderBlock());  // §4: always declared
  report.episodes = first.episodes;
  report.rebuilt_json = SerializeStatsJson(rebuilt);
  report.diffs = Compare(stored, rebuilt);
  if (options.dry_run || report.rebuilt_json == report.stored_json) return report;

  auto txn = internal::EpisodeTransaction::BeginTaskChange(&lock);
  REEL_ASSIGN_OR_RETURN(std::string temp, txn->NewTemp(internal::kStatsPath, "stats"));
  REEL_RETURN_IF_ERROR(internal::WriteTempFile(fs, temp, report.rebuilt_json));
  REEL_RETURN_IF_ERROR(txn->CommitFiles());
  report.written = true;
  return report;
}

}  // namespace reel
