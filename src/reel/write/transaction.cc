#include "write/transaction.h"

#include <optional>
#include <set>

#include "io/durable_dirs.h"
#include "layout/confined.h"
#include "util/json_util.h"
#include "util/time_util.h"
#include "reel/merge.h"
#include "reel/task.h"
#include "write/task_files.h"

namespace reel::internal {

namespace {

// Highest N among data/video file groups and episodes rows (0 when none).
Result<int64_t> HighestEpisode(FileSystem* fs, const std::string& root) {
  REEL_ASSIGN_OR_RETURN(FileInfo st, fs->Stat(JoinPath(root, kInfoPath)));
  if (st.type == FileType::kNotFound) return int64_t{0};
  REEL_ASSIGN_OR_RETURN(auto task, Task::Open(root, {fs, 0}));
  REEL_ASSIGN_OR_RETURN(auto episodes, task->ListEpisodes());
  return episodes.empty() ? int64_t{0} : episodes.back().episode_index;
}

// The number a recycled marker offers when nothing holds it, else 0 (and the marker
// goes: taken in a shared directory, a leftover, or unreadable).
Result<int64_t> FreeRecycledNumber(FileSystem* fs, const std::string& root, const std::set<int64_t>& reserved) {
  const std::string marker = JoinPath(root, kRecycledPath);
  REEL_ASSIGN_OR_RETURN(FileInfo st, fs->Stat(marker));
  if (st.type != FileType::kFile) return int64_t{0};
  int64_t recycled = 0;
  if (auto text = fs->ReadFile(marker); text.ok()) {
    auto doc = ParseJson(*text, marker);
    if (doc.ok() && doc->is_object()) (void)GetInt(*doc, "episode_index", marker, recycled);
  }
  if (recycled > 0 && !reserved.count(recycled)) {
    REEL_ASSIGN_OR_RETURN(FileInfo info_st, fs->Stat(JoinPath(root, kInfoPath)));
    bool taken = false;
    if (info_st.type == FileType::kFile) {
      REEL_ASSIGN_OR_RETURN(auto task, Task::Open(root, {fs, 0}));
      taken = task->FindEpisode(recycled).ok();
    }
    if (!taken) return recycled;
  }
  (void)fs->RemoveFile(marker);
  return int64_t{0};
}

// Chooses N (contract §2, §7.5; contract-decisions.md "number reuse"): a free recycled
// number first (even when the watermark ran ahead of it), else past the highest N on
// disk, the live reservations and `watermark`. The caller holds the task lock.
// `lock`, when given, remembers the highest N between calls (TaskLock::highest).
Result<int64_t> ChooseEpisodeIndex(FileSystem* fs, const std::string& root, int64_t watermark,
                                   TaskLock* lock = nullptr) {
  int64_t highest = 0;
  if (lock && lock->highest()) {
    highest = *lock->highest();
  } else {
    REEL_ASSIGN_OR_RETURN(highest, HighestEpisode(fs, root));
    if (lock) lock->NoteHighest(highest);
  }
  REEL_ASSIGN_OR_RETURN(const std::set<int64_t> reserved, LiveReservations(fs, root));
  REEL_ASSIGN_OR_RETURN(int64_t recycled, FreeRecycledNumber(fs, root, reserved));
  if (recycled > 0) return recycled;
  int64_t next = std::max(highest + 1, watermark);
  for (int64_t r : reserved) next = std::max(next, r + 1);
  return std::max<int64_t>(next, 1);
}

// "meta/episodes/.reserved-<N>.n.reel-<host>-<pid>-<k>.tmp": a live writer's claim on N.
Result<std::string> WriteReservation(FileSystem* fs, const std::string& root, int64_t n) {
  std::string path = TempPathFor(JoinPath(root, "meta/episodes/.reserved-" + std::to_string(n)), "n");
  // TempPathFor yields "<dir>/..reserved-N.n.reel-<host>-<pid>-<k>.tmp"; keep one leading dot.
  path = JoinPath(DirName(path), BaseName(path).substr(1));
  if (Status st = WriteTempFile(fs, path, std::to_string(n)); !st.ok()) {
    (void)fs->RemoveFile(path);  // a half-written reservation must not hold N
    return st;
  }
  return path;
}

}  // namespace

// Numbers of live reservations (meta/episodes/.reserved-<N>.n.reel-<host>-<pid>-<k>.tmp;
// another host's counts as live until it is a day old, io/temp_name.h). No meta/episodes/
// holds none; any other listing or stat error is returned: read as "none", it would hand
// a reserved N to a second writer.
Result<std::set<int64_t>> LiveReservations(FileSystem* fs, const std::string& root) {
  std::set<int64_t> out;
  const std::string dir = JoinPath(root, "meta/episodes");
  auto entries = fs->ListDir(dir);
  if (!entries.ok()) {
    if (entries.status().code() == StatusCode::kNotFound) return out;
    return entries.status();
  }
  for (const DirEntry& e : *entries) {
    if (!e.name.starts_with(".reserved-")) continue;
    REEL_ASSIGN_OR_RETURN(bool stale, IsStaleTemp(fs, dir, e.name));
    if (stale) continue;
    const size_t dot = e.name.find('.', 10);
    if (dot != std::string::npos) out.insert(std::atoll(e.name.substr(10, dot - 10).c_str()));
  }
  return out;
}


// ---- TaskLock ---------------------------------------------------------------------------

Result<TaskLock> TaskLock::Acquire(FileSystem* fs, const std::string& root) {
  // Durable: the commit journals live in meta/ (a new task's root is new too).
  REEL_RETURN_IF_ERROR(CreateDirsDurable(fs, JoinPath(root, "meta/episodes")));
  REEL_ASSIGN_OR_RETURN(auto lock, fs->LockFile(JoinPath(root, kLockPath)));
  // Commits happen under this lock, so a journal seen now is from a writer that died:
  // finish it first, or its N would look free and its files half there. An episode's
  // journal may name only that episode's files, by the task's templates (info.json read
  // only when such a journal is there: a v1.0 folder has none of its own). A task without
  // info.json yet (its first commit was cut) has no episode a journal could take from, and
  // its templates are in that commit's own info.json temp: only confinement applies.
  std::optional<InfoJson> info;
  bool new_task = false;
  const EpisodeFiles episode_files = [&](int64_t n, const std::string& rel) -> Result<bool> {
    if (!info && !new_task) {
      REEL_ASSIGN_OR_RETURN(FileInfo st, fs->Stat(JoinPath(root, kInfoPath)));
      new_task = st.type == FileType::kNotFound;
      if (new_task) return true;
      auto loaded = LoadInfo(fs, root);
      if (!loaded.ok()) return loaded.status().WithContext("checking an interrupted commit's files");
      info = std::move(*loaded);
    }
    if (new_task) return true;
    return TemplateNamesEpisode(info->data_path, rel, n, info->chunks_size) ||
           TemplateNamesEpisode(info->video_path, rel, n, info->chunks_size) ||
           TemplateNamesEpisode(info->episodes_path, rel, n, info->chunks_size);
  };
  REEL_RETURN_IF_ERROR(RecoverCommits(fs, root, episode_files));
  return TaskLock(fs, root, std::move(lock));
}

Status TaskLock::RemoveStaleTemps() const {
  // A directory that does not exist holds no temp; any other listing error is returned.
  const auto list = [&](const std::string& rel) -> Result<std::vector<DirEntry>> {
    auto entries = fs_->ListDir(JoinPath(root_, rel));
    if (!entries.ok() && entries.status().code() == StatusCode::kNotFound) return std::vector<DirEntry>{};
    return entries;
  };
  std::vector<std::string> dirs = {"meta", "meta/episodes", "data"};
  const auto chunks = [&](const std::string& parent, std::vector<std::string>* out) -> Status {
    REEL_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, list(parent));
    for (const DirEntry& e : entries)
      if (e.type == FileType::kDirectory && e.name.starts_with("chunk-")) out->push_back(parent + "/" + e.name);
    return Status::OK();
  };
  REEL_RETURN_IF_ERROR(chunks("data", &dirs));
  REEL_RETURN_IF_ERROR(chunks("meta/episodes", &dirs));
  std::vector<std::string> video_chunks;
  REEL_RETURN_IF_ERROR(chunks("videos", &video_chunks));
  for (const std::string& chunk : video_chunks) {  // videos/chunk-c/<slot>/
    REEL_ASSIGN_OR_RETURN(std::vector<DirEntry> slots, list(chunk));
    for (const DirEntry& e : slots)
      if (e.type == FileType::kDirectory) dirs.push_back(chunk + "/" + e.name);
  }
  for (const std::string& d : dirs) REEL_RETURN_IF_ERROR(RemoveStaleTempsIn(fs_, JoinPath(root_, d)));
  return Status::OK();
}

// ---- EpisodeTransaction -------------------------------------------------------------------

Result<std::unique_ptr<EpisodeTransaction>> EpisodeTransaction::Reserve(FileSystem* fs, const std::string& root,
                                                                        int64_t watermark) {
  REEL_ASSIGN_OR_RETURN(TaskLock lock, TaskLock::Acquire(fs, root));
  REEL_ASSIGN_OR_RETURN(int64_t n, ChooseEpisodeIndex(fs, root, watermark));
  std::unique_ptr<EpisodeTransaction> txn(new EpisodeTransaction(fs, root, n, nullptr));
  REEL_ASSIGN_OR_RETURN(txn->reservation_, WriteReservation(fs, root, n));
  return txn;
}

Result<std::unique_ptr<EpisodeTransaction>> EpisodeTransaction::ReserveNumber(FileSystem* fs, const std::string& root,
                                                                              int64_t n, bool replace) {
  const std::string name = root + ": episode " + std::to_string(n);
  if (n < 1) return Status::Invalid(name + ": an episode_index is >= 1");
  REEL_ASSIGN_OR_RETURN(TaskLock lock, TaskLock::Acquire(fs, root));
  REEL_ASSIGN_OR_RETURN(FileInfo info_st, fs->Stat(JoinPath(root, kInfoPath)));
  if (info_st.type != FileType::kFile)
    return Status::Invalid(name + " was never recorded (the task has no meta/info.json); new numbers come from BeginEpisode()");
  REEL_ASSIGN_OR_RETURN(auto task, Task::Open(root, {fs, 0}));
  REEL_ASSIGN_OR_RETURN(int64_t highest, HighestEpisode(fs, root));
  const int64_t recorded = std::max(highest, task->info().total_episodes);
  if (n > recorded)
    return Status::Invalid(name + " was never recorded (the highest recorded is " + std::to_string(recorded) +
                           "); new numbers come from BeginEpisode(), which never skips one");
  REEL_ASSIGN_OR_RETURN(const std::set<int64_t> reserved, LiveReservations(fs, root));
  if (reserved.count(n))
    return Status::AlreadyExists(name + " is being recorded by another writer (a live reservation holds it)");
  // Only "no such episode" means not live: any other lookup error (an unreadable row, an
  // I/O error) decides nothing, so it is returned rather than taken as free.
  auto live = task->FindEpisode(n);
  if (!live.ok() && live.status().code() != StatusCode::kNotFound) return live.status();
  if (live.ok() && (!live->data_path.empty() || !live->videos.empty()) && !replace)
    return Status::AlreadyExists(name + " is live (its data or video files exist); re-recording it replaces them: "
                                 "pass replace (reel simulate --replace)");
  std::unique_ptr<EpisodeTransaction> txn(new EpisodeTransaction(fs, root, n, nullptr));
  txn->recycle_ = false;
  REEL_ASSIGN_OR_RETURN(txn->reservation_, WriteReservation(fs, root, n));
  return txn;
}

Result<std::unique_ptr<EpisodeTransaction>> EpisodeTransaction::Begin(TaskLock* lock, std::optional<int64_t> n) {
  int64_t number = 0;
  if (n) {
    if (*n < 1) return Status::Invalid(lock->root() + ": episode_index " + std::to_string(*n) + " is not >= 1");
    number = *n;
  } else {
    REEL_ASSIGN_OR_RETURN(number, ChooseEpisodeIndex(lock->fs(), lock->root(), 0, lock));
  }
  return std::unique_ptr<EpisodeTransaction>(new EpisodeTransaction(lock->fs(), lock->root(), number, lock));
}

EpisodeTransaction::~EpisodeTransaction() { (void)Abort(); }

Result<std::string> EpisodeTransaction::NewTemp(const std::string& rel, const std::string& tag) {
  // A task's folders are its own: no byte of it is written through a symbolic link inside
  // it (layout/confined.h), and the commit checks its whole plan again before its journal.
  REEL_RETURN_IF_ERROR(CheckBeneath(fs_, root_, rel, root_ + ": writing " + rel));
  const std::string temp = TempPathFor(JoinPath(root_, rel), tag);
  REEL_RETURN_IF_ERROR(CreateDirsDurable(fs_, DirName(temp)));  // a new chunk's directory
  Track(temp, rel);
  return temp;
}

void EpisodeTransaction::Track(const std::string& temp, const std::string& rel) {
  // temp is JoinPath(root_, ...): no separator is added after a root that ends in '/'
  // ("task/" names the task too), so none is skipped then.
  files_.push_back({temp.substr(root_.size() + (root_.ends_with('/') ? 0 : 1)), rel});
}

Status EpisodeTransaction::Adopt(const std::string& from, const std::string& rel) {
  REEL_ASSIGN_OR_RETURN(std::string temp, NewTemp(rel, "import"));
  Status st = fs_->Rename(from, temp);
  if (!st.ok()) files_.pop_back();  // nothing was moved: the temp does not exist
  return st;
}

void EpisodeTransaction::Move(const std::string& from_rel, const std::string& rel) {
  files_.push_back({from_rel, rel});
  moved_.insert(from_rel);
}

void EpisodeTransaction::RemoveTemps() {
  for (const Rename& r : files_)
    if (!moved_.count(r.from)) (void)fs_->RemoveFile(JoinPath(root_, r.from));
  files_.clear();
}

Status EpisodeTransaction::Abort() {
  if (done_) return Status::OK();
  done_ = true;
  Status st;
  if (!reservation_.empty() && recycle_) {
    // The marker first: whatever happens next, N is offered to the next recording.
    Json marker = {{"episode_index", n_}, {"freed_at", IsoUtc(UnixNow())}};
    st = WriteFileAtomic(fs_, JoinPath(root_, kRecycledPath), Dump(marker, -1));
  }
  RemoveTemps();
  if (!reservation_.empty()) (void)fs_->RemoveFile(reservation_);
  return st;
}

template <typename Publish>
Status EpisodeTransaction::CommitWith(Publish&& publish) {
  if (done_) return Status::Invalid(n_ == kTaskChange ? std::string("the task change is already committed or aborted")
                                                      : "episode " + std::to_string(n_) + " is already committed or aborted");
  std::optional<TaskLock> own;
  if (!lock_) {
    auto acquired = TaskLock::Acquire(fs_, root_);
    if (!acquired.ok()) {
      (void)Abort();
      return acquired.status();
    }
    own.emplace(std::move(*acquired));
  }
  Status st = publish();
  if (!decided_) {
    (void)Abort();  // nothing visible: temps go, a reserved N is recycled
    return st;
  }
  done_ = true;
  if (lock_ && n_ != kTaskChange && lock_->highest()) lock_->NoteHighest(n_);
  if (!reservation_.empty()) {
    // A completed recording clears the recycled marker (reference behaviour).
    const std::string marker = JoinPath(root_, kRecycledPath);
    if (auto ms = fs_->Stat(marker); ms.ok() && ms->type == FileType::kFile) (void)fs_->RemoveFile(marker);
    (void)fs_->RemoveFile(reservation_);
  }
  return st;
}

Status EpisodeTransaction::Commit(const TaskFilesUpdate& update) {
  if (n_ == kTaskChange) return Status::Invalid("a task change commits with CommitFiles(), not Commit()");
  return CommitWith([&] { return CommitLocked(update); });
}

Status EpisodeTransaction::CommitFiles() {
  return CommitWith([&] { return CommitWithJournal(fs_, root_, n_, {files_, removes_}, &decided_); });
}

void EpisodeTransaction::Remove(const std::string& rel) { removes_.push_back(rel); }

std::unique_ptr<EpisodeTransaction> EpisodeTransaction::BeginTaskChange(TaskLock* lock) {
  return std::unique_ptr<EpisodeTransaction>(new EpisodeTransaction(lock->fs(), lock->root(), kTaskChange, lock));
}

// Merges info.json and stats.json, writes their temps (and tasks.jsonl's), then renames
// everything in one journaled commit. The task lock is held.
Status EpisodeTransaction::CommitLocked(const TaskFilesUpdate& update) {
  REEL_ASSIGN_OR_RETURN(InfoJson info, LoadInfo(fs_, root_));
  const InfoJson merged = MergeInfo(info, update.declaration, n_);
  REEL_ASSIGN_OR_RETURN(StatsJson stats, LoadStats(fs_, root_));
  REEL_ASSIGN_OR_RETURN(StatsJson merged_stats, MergeStats(stats, update.stats));
  REEL_ASSIGN_OR_RETURN(std::string info_text, SerializeInfoJson(merged));
  std::vector<std::pair<const char*, std::string>> task_files = {{kInfoPath, std::move(info_text)},
                                                                 {kStatsPath, SerializeStatsJson(merged_stats)}};
  REEL_ASSIGN_OR_RETURN(FileInfo tasks_st, fs_->Stat(JoinPath(root_, kTasksPath)));
  if (tasks_st.type == FileType::kNotFound) task_files.emplace_back(kTasksPath, update.tasks_jsonl);
  for (const auto& [rel, contents] : task_files) {
    REEL_ASSIGN_OR_RETURN(std::string temp, NewTemp(rel, "commit"));
    REEL_RETURN_IF_ERROR(WriteFileSynced(fs_, temp, contents));
  }
  return CommitWithJournal(fs_, root_, n_, {files_, removes_}, &decided_);
}

}  // namespace reel::internal
