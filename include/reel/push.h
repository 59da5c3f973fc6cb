// Push: mirror a local pooled task to another storage (an object store, a second disk).
//
// The destination is any FileSystem; object stores (S3, GCS, ...) have no rename and no
// lock, so a push publishes each episode with the protocol of docs/storage.md:
//
//   1. the push lock meta/.push-lock.json (one writer per task; a second push is refused
//      while the lease of the first is live)
//   2. meta/tasks.jsonl, meta/info.json and meta/stats.json, each replaced whole (one
//      object each; a synced temp renamed over it on a disk): first, so that
//      total_episodes never falls behind the episodes a reader sees.
//   3. per episode missing or incomplete at the destination: the journal object
//      meta/.push-<N>.json first, then the videos, the data file, the episodes row, and
//      the journal deleted last. Readers (Task::ListEpisodes) hide an episode while its
//      journal exists, and list rows before data before videos, so a reader sees all of N
//      or none of it, even while a push runs or after one was killed.
//   4. files that serve several episodes (legacy shards), each replaced whole.
//   5. the lock deleted.
//
// A re-run sends only what is missing (files absent or of another size; byte for byte
// with `verify`) and completes an episode whose push was interrupted. Deletions are not
// mirrored: an episode deleted locally (its row kept, contract §9) keeps its files at the
// destination.
//
// Thread safety: one PushTask per destination task at a time (the lock enforces it where
// the store lets it, see docs/storage.md "One writer").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "reel/fs.h"
#include "reel/progress.h"
#include "reel/status.h"

namespace reel {

struct PushOptions {
  FileSystem* fs = nullptr;  // the local task's file system; null = DefaultFileSystem()
  bool dry_run = false;      // report what would be sent; send nothing, take no lock
  bool verify = false;       // compare files present at the destination byte for byte, not by size
  // The push lock's lease: a lock older than this (its writer died without releasing it)
  // is taken over. The lease is renewed while the push runs.
  double lock_lease_s = 600;
  // Push only these episodes (NotFound for one the task lacks); empty = every episode.
  // The task files (tasks.jsonl, info.json, stats.json) are pushed either way.
  std::vector<int64_t> episodes;
  ProgressFn progress;  // "episodes pushed" per episode looked at
};

struct PushReport {
  int64_t episodes = 0;           // local episodes looked at
  std::vector<int64_t> sent;      // episodes whose files (some or all) were sent
  std::vector<int64_t> resumed;   // of those, episodes an interrupted push had left hidden
  int64_t present = 0;            // episodes already whole at the destination
  int64_t files_sent = 0;
  int64_t bytes_sent = 0;
  std::vector<std::string> task_files_sent;  // meta/info.json, ... (relative paths)
  bool dry_run = false;
};

// Pushes the task at `task_root` (local, options.fs) to `dest_root` on `dest`. Errors:
// those of opening the local task; AlreadyExists when another push holds the lock; the
// destination's I/O errors (the push can be re-run: nothing torn is ever visible).
Result<PushReport> PushTask(const std::string& task_root, FileSystem* dest, const std::string& dest_root,
                            const PushOptions& options = {});

// Changes a task kept on a store without rename or lock (an object store), the way a local
// task is changed: under the push lock of `dest_root`, `change(fs, root)` runs the episode
// transaction (any writer: ImportDataset with ImportOptions::fs = fs, ...) against a local
// staging directory `root` that reads through to the stored task (`fs` reads every file
// the staging directory lacks from the store, and writes to the staging directory only),
// and then every episode whose row the change committed is pushed with the protocol
// above, followed by the task files it changed. The store's task is the same for the
// whole change: the lock is held (and renewed) from before the staging directory exists
// until the push ends, and the staging directory is removed after.
//
// A change that fails after committing some episodes still has those pushed (as a local
// writer keeps its committed episodes); its error is returned after the push.
// `options.fs` is unused (the staging file system is local) and `options.episodes` is
// ignored (the change decides); a dry run is refused (Invalid).
// Errors: AlreadyExists while another push holds the lock; NotSupported while an
// interrupted push left an episode hidden at the store (re-run that push first: its
// files are in the task it came from); the change's errors; the store's I/O errors (the
// push can be completed by running the change again: nothing torn is ever visible).
using StagedChangeFn = std::function<Status(FileSystem* fs, const std::string& root)>;
Result<PushReport> ChangeStoredTask(FileSystem* dest, const std::string& dest_root, const StagedChangeFn& change,
                                    const PushOptions& options = {});

}  // namespace reel
