#include "write/task_files.h"

#include <arrow/api.h>
#include <parquet/arrow/writer.h>

#include <chrono>
#include <set>

#include "meta/json_util.h"
#include "reel/merge.h"
#include "reel/task.h"
#include "write/episode_stats.h"
#include "write/fs_stream.h"

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

namespace {

// Numbers of live reservations (meta/episodes/.reserved-<N>.reel-<pid>-<k>.tmp).
std::set<int64_t> LiveReservations(FileSystem* fs, const std::string& root) {
  std::set<int64_t> out;
  auto entries = fs->ListDir(JoinPath(root, "meta/episodes"));
  if (!entries.ok()) return out;
  for (const DirEntry& e : *entries) {
    if (!e.name.starts_with(".reserved-") || IsStaleTemp(e.name)) continue;
    const size_t dot = e.name.find('.', 10);
    if (dot != std::string::npos) out.insert(std::atoll(e.name.substr(10, dot - 10).c_str()));
  }
  return out;
}

// Highest N among data/video file groups and episodes rows (0 when none).
Result<int64_t> HighestEpisode(FileSystem* fs, const std::string& root) {
  REEL_ASSIGN_OR_RETURN(FileInfo st, fs->Stat(JoinPath(root, kInfoPath)));
  if (st.type == FileType::kNotFound) return int64_t{0};
  REEL_ASSIGN_OR_RETURN(auto task, Task::Open(root, {fs, 0}));
  REEL_ASSIGN_OR_RETURN(auto episodes, task->ListEpisodes());
  return episodes.empty() ? int64_t{0} : episodes.back().episode_index;
}

// Chooses N (contract §2, §7.5; contract-decisions.md "number reuse"). Caller holds the lock.
}  // namespace

Result<int64_t> ChooseEpisodeIndex(FileSystem* fs, const std::string& root, int64_t watermark) {
  REEL_ASSIGN_OR_RETURN(int64_t highest, HighestEpisode(fs, root));
  const std::set<int64_t> reserved = LiveReservations(fs, root);
  const std::string marker = JoinPath(root, kRecycledPath);
  REEL_ASSIGN_OR_RETURN(FileInfo st, fs->Stat(marker));
  if (st.type == FileType::kFile) {
    int64_t recycled = 0;
    auto text = fs->ReadFile(marker);
    if (text.ok()) {
      auto doc = ParseJson(*text, marker);
      if (doc.ok() && doc->is_object()) (void)GetInt(*doc, "episode_index", marker, recycled);
    }
    if (recycled > 0) {
      REEL_ASSIGN_OR_RETURN(FileInfo info_st, fs->Stat(JoinPath(root, kInfoPath)));
      bool taken = reserved.count(recycled) > 0;
      if (!taken && info_st.type == FileType::kFile) {
        REEL_ASSIGN_OR_RETURN(auto task, Task::Open(root, {fs, 0}));
        taken = task->FindEpisode(recycled).ok();
      }
      // A free recycled number is reused even when the watermark ran ahead of it.
      if (!taken) return recycled;
    }
    (void)fs->RemoveFile(marker);  // taken (shared directory, leftovers) or unreadable: give it up
  }
  int64_t next = std::max(highest + 1, watermark);
  for (int64_t r : reserved) next = std::max(next, r + 1);
  return std::max<int64_t>(next, 1);
}


Status WriteEpisodeRow(FileSystem* fs, const std::string& path, const EpisodeRow& row) {
  auto i64 = [](int64_t v) { return arrow::MakeArrayFromScalar(arrow::Int64Scalar(v), 1).ValueOrDie(); };
  auto f64 = [](double v) { return arrow::MakeArrayFromScalar(arrow::DoubleScalar(v), 1).ValueOrDie(); };
  auto str = [](const std::string& v) {
    return arrow::MakeArrayFromScalar(arrow::StringScalar(v), 1).ValueOrDie();
  };
  auto schema = arrow::schema({
      arrow::field("episode_index", arrow::int64()), arrow::field("task_index", arrow::int64()),
      arrow::field("start_frame_index", arrow::int64()), arrow::field("end_frame_index", arrow::int64()),
      arrow::field("length", arrow::int64()), arrow::field("created_at", arrow::float64()),
      arrow::field("duration_sec", arrow::float64()), arrow::field("drop_stats", arrow::utf8()),
      arrow::field("video_codec", arrow::utf8()), arrow::field("calibration", arrow::utf8()),
      arrow::field("force_matrix_specs", arrow::utf8()), arrow::field("slam_specs", arrow::utf8())});
  auto table = arrow::Table::Make(
      schema, {i64(row.episode_index), i64(row.task_index), i64(row.start_frame_index),
               i64(row.end_frame_index), i64(row.length), f64(row.created_at),
               f64(row.duration_sec), str(row.drop_stats), str(row.video_codec),
               str(row.calibration), str(row.force_matrix_specs), str(row.slam_specs)});
  REEL_RETURN_IF_ERROR(fs->CreateDirs(DirName(path)));
  REEL_ASSIGN_OR_RETURN(auto file, fs->NewWritableFile(path));
  auto sink = std::make_shared<FsOutputStream>(std::move(file), path);
  auto props = parquet::WriterProperties::Builder().compression(parquet::Compression::ZSTD)->build();
  arrow::Status st = parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), sink, 1, props);
  if (st.ok()) st = sink->Close();
  if (!st.ok()) return Status::IOError(path + ": " + st.ToString());
  return Status::OK();
}


}  // namespace reel::internal
