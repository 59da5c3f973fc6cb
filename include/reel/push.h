// Push: mirror a local pooled task to another storage (an object store, a second disk).
//
// The destination is any FileSystem; object stores (S3, GCS, ...) have no rename and no
// lock, so a push publishes each episode with the protocol of docs/storage.md:
//
//   1. the push lock meta/.push-lock.json (one writer per task; a second push is refused
//      while the lease of the first is live)
//   2. per episode missing or incomplete at the destination: the journal object
//      meta/.push-<N>.json first, then the videos, the data file, the episodes row, and
//      the journal deleted last. Readers (Task::ListEpisodes) hide an episode while its
//      journal exists, and list rows before data before videos, so a reader sees all of N
//      or none of it, even while a push runs or after one was killed.
//   3. files that serve several episodes (legacy shards), then meta/tasks.jsonl,
//      meta/info.json and meta/stats.json, each replaced whole (one object each).
//   4. the lock deleted.
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

}  // namespace reel
