#include "write/task_files.h"

#include <arrow/api.h>

#include <chrono>

#include "reel/merge.h"
#include "reel/task.h"
#include "write/episode_stats.h"

namespace reel::internal {

namespace {

// Blocks without count (v1.1.0) are rebuilt from data/ once (contract §4).
Result<StatsJson> RebuildCountlessBlocks(FileSystem* fs, const std::string& root, StatsJson stats) {
  std::vector<std::string> names;
  for (const auto& [name, b] : stats.blocks)
    if (b.needs_rebuild() && name != "action") names.push_back(name);
  if (names.empty()) return stats;
  REEL_ASSIGN_OR_RETURN(auto task, Task::Open(root, {fs, 0}));
  REEL_ASSIGN_OR_RETURN(auto episodes, task->ListEpisodes());
  for (const std::string& name : names) {
    StatsBlock total;
    total.count = 0;
    bool first = true;
    for (const EpisodeEntry& e : episodes) {
      if (e.data_path.empty()) continue;
      auto table = task->ReadData(e, {name});
      if (!table.ok()) continue;  // this episode never had the column
      REEL_ASSIGN_OR_RETURN(auto part, internal::BlockFromColumn(*(*table)->column(0)));
      if (!part) continue;
      if (first) {
        total = std::move(*part);
        first = false;
      } else {
        REEL_ASSIGN_OR_RETURN(total, MergeBlocks(total, *part));
      }
    }
    for (auto& [n, b] : stats.blocks)
      if (n == name) b = first ? EmptyBlock(static_cast<int64_t>(b.mean.size())) : total;
  }
  return stats;
}

}  // namespace

double NowUnixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The task's info.json, or a fresh one (contract §3 fixed keys) when the task is new.
Result<InfoJson> LoadInfo(FileSystem* fs, const std::string& root) {
  const std::string path = JoinPath(root, kInfoPath);
  REEL_ASSIGN_OR_RETURN(FileInfo st, fs->Stat(path));
  if (st.type == FileType::kNotFound) {
    InfoJson info;
    info.format = "pooled_episodes_v1";
    info.codebase_version = "v3.0";
    info.created_at = NowUnixSeconds();
    return info;
  }
  REEL_ASSIGN_OR_RETURN(std::string text, fs->ReadFile(path));
  return ParseInfoJson(text, path);
}

Result<StatsJson> LoadStats(FileSystem* fs, const std::string& root) {
  const std::string path = JoinPath(root, kStatsPath);
  REEL_ASSIGN_OR_RETURN(FileInfo st, fs->Stat(path));
  if (st.type == FileType::kNotFound) return StatsJson{};
  REEL_ASSIGN_OR_RETURN(std::string text, fs->ReadFile(path));
  REEL_ASSIGN_OR_RETURN(StatsJson parsed, ParseStatsJson(text, path));
  return RebuildCountlessBlocks(fs, root, std::move(parsed));
}

// Removes temp files left by writers that died (never a live writer's).
void RemoveStaleTemps(FileSystem* fs, const std::string& root) {
  std::vector<std::string> dirs = {"meta", "meta/episodes", "data"};
  auto subdirs = [&](const std::string& parent) {
    std::vector<std::string> out;
    auto entries = fs->ListDir(JoinPath(root, parent));
    if (!entries.ok()) return out;
    for (const DirEntry& e : *entries)
      if (e.type == FileType::kDirectory) out.push_back(parent + "/" + e.name);
    return out;
  };
  for (const char* parent : {"data", "meta/episodes", "videos"})
    for (const std::string& chunk : subdirs(parent)) {
      if (!BaseName(chunk).starts_with("chunk-")) continue;
      if (std::string(parent) != "videos") {
        dirs.push_back(chunk);
        continue;
      }
      for (const std::string& slot : subdirs(chunk)) dirs.push_back(slot);  // videos/chunk-c/<slot>/
    }
  for (const std::string& d : dirs) {
    auto entries = fs->ListDir(JoinPath(root, d));
    if (!entries.ok()) continue;
    for (const DirEntry& e : *entries)
      if (e.type == FileType::kFile && internal::IsStaleTemp(e.name))
        (void)fs->RemoveFile(JoinPath(root, d + "/" + e.name));
  }
}

Status WriteTempFile(FileSystem* fs, const std::string& path, std::string_view contents) {
  REEL_RETURN_IF_ERROR(fs->CreateDirs(DirName(path)));
  return WriteFileSynced(fs, path, contents);
}

Status CommitEpisode(FileSystem* fs, const std::string& root, const EpisodeCommit& commit,
                     bool* decided) {
  *decided = false;
  REEL_ASSIGN_OR_RETURN(InfoJson info, LoadInfo(fs, root));
  const InfoJson merged = MergeInfo(info, commit.declaration, commit.episode_index);
  REEL_ASSIGN_OR_RETURN(StatsJson stats, LoadStats(fs, root));
  REEL_ASSIGN_OR_RETURN(StatsJson merged_stats, MergeStats(stats, commit.stats));
  REEL_ASSIGN_OR_RETURN(std::string info_text, SerializeInfoJson(merged));
  struct TaskFile {
    const char* path;
    std::string contents;
  };
  std::vector<TaskFile> task_files = {{kInfoPath, std::move(info_text)},
                                      {kStatsPath, SerializeStatsJson(merged_stats)}};
  REEL_ASSIGN_OR_RETURN(FileInfo tasks_st, fs->Stat(JoinPath(root, kTasksPath)));
  if (tasks_st.type == FileType::kNotFound) task_files.push_back({kTasksPath, commit.tasks_jsonl});

  std::vector<Rename> renames = commit.episode_files;
  std::vector<std::string> written;
  Status st;
  for (const TaskFile& f : task_files) {
    const std::string tmp = TempPathFor(JoinPath(root, f.path), "commit");
    written.push_back(tmp);
    st = WriteTempFile(fs, tmp, f.contents);
    if (!st.ok()) break;
    renames.push_back({tmp.substr(root.size() + 1), f.path});
  }
  if (st.ok()) st = CommitWithJournal(fs, root, commit.episode_index, renames, decided);
  if (!st.ok() && !*decided)
    for (const std::string& t : written) (void)fs->RemoveFile(t);
  return st;
}

}  // namespace reel::internal
