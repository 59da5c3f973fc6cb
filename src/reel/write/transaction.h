// Internal: the write layer's one way to change a task.
//
// Every writer that adds an episode to a task (the recorder, the import server, dataset
// import, and the maintenance tools) goes through the two classes below, so the commit
// sequence exists once:
//
//   TaskLock            meta/episodes/.lock held, interrupted commits rolled forward
//   EpisodeTransaction  N chosen or adopted; files written as tracked dotfile temps;
//                       Commit merges info.json/stats.json/tasks.jsonl and publishes
//                       everything through the commit journal (commit.h); Abort or the
//                       destructor removes whatever was not published.
//
// Readers see all of N or none of it (they hide an episode with a journal present), and
// a crash at any moment leaves either the old task or the new one once the next writer
// has opened the task (it rolls the journal forward).
//
// Two ways to hold the lock:
//   - Reserve(): the lock is taken only to choose N, which a reservation dotfile then
//     holds while the episode is being written (a recording takes minutes; other writers
//     go on meanwhile). Commit takes the lock again. Abort offers N to the next
//     recording (meta/recycled_episode.json). This is the recorder's way.
//   - Begin(lock, n): the caller holds a TaskLock for the whole transaction (and possibly
//     for many of them); N is given or chosen under it. No reservation, no recycling: an
//     aborted N is free again as soon as the lock is released.
//
// The maintenance tools change what a task already holds the same way: Begin(lock, N) of
// an existing N (a rewritten row or data file, published over the old one, N hidden only
// for the renames), or BeginTaskChange(lock) for a change to the task as a whole (rebuilt
// stats.json, split legacy shards, a migration): temps published over the old files,
// Remove() for files that go, CommitFiles() to commit exactly those without merging the
// task files (the tool writes whole task files itself when it changes them).
#pragma once

#include <cstdint>
#include <memory>
#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "reel/fs.h"
#include "reel/metadata.h"
#include "reel/status.h"
#include "layout/journal.h"

namespace reel::internal {

// The task's write lock, with interrupted commits rolled forward. Creates meta/episodes/
// (where the lock file lives) when missing. Movable; released on destruction.
// Numbers of live reservations (meta/episodes/.reserved-<N>.n.reel-<host>-<pid>-<k>.tmp;
// another host's counts as live until it is a day old, io/temp_name.h): the episodes being
// recorded now. No meta/episodes/ holds none; any other listing or stat error is returned.
Result<std::set<int64_t>> LiveReservations(FileSystem* fs, const std::string& root);

class TaskLock {
 public:
  static Result<TaskLock> Acquire(FileSystem* fs, const std::string& root);

  // Removes temp files left by writers that died (never a live writer's; another host's
  // only once a day old, io/temp_name.h): a directory walk of meta/, data/ and videos/, so
  // for opening a task, not for every episode. A missing directory is skipped; any other
  // error listing, stat-ing or removing is returned.
  Status RemoveStaleTemps() const;

  FileSystem* fs() const { return fs_; }
  const std::string& root() const { return root_; }

  // The highest N on disk as found under this lock, raised by each episode committed under
  // it (nullopt until a Begin() looked). While the lock is held no other writer reserves
  // or commits a number (both take the lock), so a run of Begin()s under one lock (an
  // import) lists the task once, not once per episode. A number deleted under the lock
  // leaves it high: the next number skips one, never reuses one.
  std::optional<int64_t> highest() const { return highest_; }
  void NoteHighest(int64_t n) { highest_ = std::max(highest_.value_or(0), n); }

 private:
  TaskLock(FileSystem* fs, std::string root, std::unique_ptr<FileLock> lock)
      : fs_(fs), root_(std::move(root)), lock_(std::move(lock)) {}
  FileSystem* fs_;
  std::string root_;
  std::unique_ptr<FileLock> lock_;
  std::optional<int64_t> highest_;
};

// What an episode adds to the task files, besides its own files.
struct TaskFilesUpdate {
  InfoJson declaration;           // merged into info.json by MergeInfo
  OrderedMap<StatsBlock> stats;   // merged into stats.json by MergeStats
  std::string tasks_jsonl;        // written only when meta/tasks.jsonl is absent
};

class EpisodeTransaction {
 public:
  // Chooses N (recycled number first, else past the highest N, the live reservations and
  // `watermark`) under a short lock and reserves it. See the file comment.
  static Result<std::unique_ptr<EpisodeTransaction>> Reserve(FileSystem* fs, const std::string& root,
                                                              int64_t watermark);
  // Reserves the given N to record it again (contract §6.1 "同号重录", docs/recorder.md
  // "Re-recording a number"): under a short lock, N must have been recorded before (N <= the
  // highest N on disk or total_episodes), no live reservation may hold it, and it must not
  // be live (data or video files present) unless `replace`. Errors: Invalid for a number
  // never recorded, AlreadyExists naming N for a live episode without `replace` or another
  // writer's reservation. An aborted re-recording is not offered to the next recording (N
  // is not a fresh number).
  static Result<std::unique_ptr<EpisodeTransaction>> ReserveNumber(FileSystem* fs, const std::string& root,
                                                                    int64_t n, bool replace);
  // Under `lock`, which must outlive the transaction: N is `n`, or the next free number
  // when `n` is empty. Adopting a number the task already holds is the caller's decision
  // (the import server refuses or skips before it begins).
  static Result<std::unique_ptr<EpisodeTransaction>> Begin(TaskLock* lock, std::optional<int64_t> n);
  // Under `lock`: a change to the task as a whole (journal meta/.commit-task.json, which
  // hides no episode); episode_index() is kTaskChange. Commit with CommitFiles().
  static std::unique_ptr<EpisodeTransaction> BeginTaskChange(TaskLock* lock);

  ~EpisodeTransaction();  // Abort() unless committed or aborted
  EpisodeTransaction(const EpisodeTransaction&) = delete;
  EpisodeTransaction& operator=(const EpisodeTransaction&) = delete;

  int64_t episode_index() const { return n_; }
  FileSystem* fs() const { return fs_; }
  const std::string& root() const { return root_; }

  // A fresh dotfile temp path beside the task file `rel` (relative to the root), whose
  // parent directories exist. The caller writes it (fsynced); Commit publishes it at
  // `rel`, Abort removes it.
  Result<std::string> NewTemp(const std::string& rel, const std::string& tag);
  // A temp the caller already wrote (absolute path, a dotfile in rel's directory), to be
  // published at `rel` or removed like the ones from NewTemp.
  void Track(const std::string& temp, const std::string& rel);
  // Moves `from` (same file system) into a fresh temp for `rel` and tracks it.
  Status Adopt(const std::string& from, const std::string& rel);

  // Renames the task's existing file `from_rel` to `rel` at the commit, in call order with
  // the tracked temps (a migration moves session videos and backups this way, so no byte
  // is copied). Unlike a temp it stays where it is on Abort: it is the task's file until
  // the commit is decided.
  void Move(const std::string& from_rel, const std::string& rel);

  // Removes the task file `rel` (relative to the root) at the commit, after every rename.
  void Remove(const std::string& rel);

  // Publishes every tracked temp and the merged task files in one journaled commit.
  // Once decided() is true the episode appears (now or when the next writer rolls the
  // journal forward) whatever the Status says; an error then only means durability was
  // not confirmed. When not decided, Commit aborts (temps removed, N recycled for a
  // reservation).
  Status Commit(const TaskFilesUpdate& update);
  bool decided() const { return decided_; }

  // Publishes every tracked temp and performs every Remove() in one journaled commit, the
  // task files left as they are unless the caller tracked temps for them. Decided and
  // aborted as Commit.
  Status CommitFiles();

  // Removes every tracked temp and the reservation; a reserved N is offered to the next
  // recording (the marker is written first). Idempotent; a no-op after a decided commit.
  Status Abort();

 private:
  EpisodeTransaction(FileSystem* fs, std::string root, int64_t n, TaskLock* lock)
      : fs_(fs), root_(std::move(root)), n_(n), lock_(lock) {}
  // Commit's and CommitFiles' shared body: the lock (the caller's or a fresh one), then
  // `publish`, then abort or cleanup by whether the commit was decided.
  template <typename Publish>
  Status CommitWith(Publish&& publish);
  Status CommitLocked(const TaskFilesUpdate& update);
  void RemoveTemps();

  FileSystem* fs_;
  std::string root_;
  int64_t n_;
  TaskLock* lock_;           // the caller's lock (Begin), or null (Reserve)
  std::string reservation_;  // absolute path of the reservation dotfile (Reserve)
  bool recycle_ = true;      // Abort offers a reserved N to the next recording (not ReserveNumber's)
  std::vector<Rename> files_;  // tracked temps (relative to the root) -> final paths
  std::vector<std::string> removes_;  // task files removed at the commit (relative)
  std::set<std::string> moved_;       // renames of files_ that are Move()s, not temps
  bool done_ = false;
  bool decided_ = false;
};

}  // namespace reel::internal
