// The contract's maintenance tools (docs/maintenance.md): each reads a task, decides what
// to change, and changes it only through the episode transaction (write/transaction.h:
// Begin(lock, N) for one episode's files, BeginTaskChange(lock) for the task as a whole),
// so a tool killed at any moment leaves the old task or the new one and a re-run finishes
// the job. Every tool that writes has a dry run that reports the same plan without writing.
//
// One section per tool below; options are documented structs shared by the CLI
// (tools/reel/) and Python (python/src/).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "reel/fs.h"
#include "reel/progress.h"
#include "reel/status.h"

namespace reel {

// ---- split-episodes (legacy multi-row shards -> one file per episode) -------------------

// Early v1.1.0 tasks hold the episodes rows of a chunk in one legacy shard,
// meta/episodes/chunk-CCC/file-CCC.parquet (contract §2, §6.1: rows by episode_index
// ascending, readers filter by the episode_index column). SplitEpisodes writes each of
// those rows to its own file at info.json's episodes_path (episode-NNN.parquet), the row
// unchanged (the shard's schema and values, one row), and removes the shard, one
// BeginTaskChange commit per shard: the new files are renamed into place first and the
// shard removed last. Readers prefer an episode's own file to a shard row for the same N
// (Task::ListEpisodes), so before, during and after the split they read the same rows.
// A row whose own file already exists is not rewritten (readers already read that file);
// the shard still goes. Idempotent: a task without shards is left as it is.
struct SplitEpisodesOptions {
  bool dry_run = false;  // report the plan, write nothing (and take no lock)
  ProgressFn progress;   // "episodes split", per row of every shard
  FileSystem* fs = nullptr;  // null = DefaultFileSystem()
};

struct SplitShard {
  std::string shard;              // relative to the task root
  std::vector<int64_t> split;     // rows written to their own file
  std::vector<int64_t> kept;      // rows whose own file already existed (left as it is)
  std::vector<std::string> files;  // the files of `split`, relative to the task root
};

struct SplitEpisodesReport {
  bool dry_run = false;
  std::vector<SplitShard> shards;  // in path order; empty when the task has none
  int64_t episodes_split = 0;
  int64_t episodes_kept = 0;
};

// Errors (nothing changed): those of Task::Open; Invalid naming the shard when it holds
// two rows with one episode_index, or when episodes_path renders an episode at the
// shard's own path (the task's template predates v1.1.2's episode- prefix); the reader's
// and the writer's. A failure after some shards were split leaves those split and the
// rest as they were (each shard is its own commit).
Result<SplitEpisodesReport> SplitEpisodes(const std::string& root, const SplitEpisodesOptions& options = {});

// ---- stats --rebuild / --verify -----------------------------------------------------------

// ---- repair-scale (int16 force-matrix scale, contract §7.2.1) -----------------------------

// ---- migrate (v1.0 session folders -> pooled_episodes_v1) ---------------------------------

}  // namespace reel
