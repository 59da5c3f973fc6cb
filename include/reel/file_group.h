// An episode's file group: whole, deleted (its episodes row alone) or partial.
//
// Every file of N shares its (chunk, file) (contract §2); deleting N removes its whole
// file group, the data parquet and each slot's video, and keeps the episodes row,
// stats.json and total_episodes (§9, §7.5). A partial group is a torn delete or lost
// files. EpisodeFileGroup is the one definition: `reel check` (episode.file_group),
// `reel ls`, Python's Task.episodes() / episodes_arrow() and DeleteEpisode use it.
#pragma once

#include <string>
#include <vector>

#include "reel/metadata.h"
#include "reel/task.h"

namespace reel {

enum class FileGroupState {
  kWhole,    // the data parquet and every video slot its episodes row declares
  kDeleted,  // neither data nor video: deleted (after upload) or empty; a row alone is legal
  kPartial,  // videos without the data parquet, or the data parquet without a video slot
             // its episodes row declares
};
const char* FileGroupStateName(FileGroupState state);  // "whole", "deleted", "partial"

struct FileGroup {
  FileGroupState state = FileGroupState::kDeleted;
  // Relative paths: the data parquet first, then the videos by slot. `present` is what
  // deleting N removes.
  std::vector<std::string> present;
  std::vector<std::string> missing;  // what a partial group lacks
};

// The video slots an episodes row declares for its own episode. The contract keeps no
// per-episode slot list, and slots may change between episodes (contract §8: readers
// enumerate an episode's own files, never a task-wide set), so info.json's
// video_extensions says nothing about one episode. What the row declares is in
// video_codec: each key of its "depth" object (a depth stream, reference video_codec)
// and each depth entry's "master_slot" (the RGB slot that stream follows frame by frame,
// written by reel's recorder). Sorted, unique; empty when video_codec is not such a JSON
// object. An RGB slot without a depth stream is declared nowhere, so an episode may lack it.
std::vector<std::string> DeclaredVideoSlots(const EpisodeRow& row);

// Episode e's file group: partial when it has videos but no data parquet, or a data
// parquet without a slot DeclaredVideoSlots(*row) names. `row`: e's episodes row when it
// was read (null: unknown, and only the first case is seen). Reads no file; a missing
// video's path has video_extensions' type ("*" for a slot it lacks).
FileGroup EpisodeFileGroup(const Task& task, const EpisodeEntry& e, const EpisodeRow* row = nullptr);

// One present file of an episode with its content digest: what the import server answers
// for (project, N) (GET /api/v1/projects/<p>/episodes/<N>, docs/serve.md) and what an
// uploader compares with its own files before it deletes any (issue 28: proof before
// deletion). Compared by role, not path: a server task may place N under another chunk.
struct FileDigest {
  std::string role;    // "data", "episodes_row" (N's own row file) or "video/<image_key>"
  std::string path;    // relative to the task
  uint64_t size = 0;
  std::string sha256;  // lower-case hex
};

// The digests of e's present files: its data parquet, its own episodes row file (not a
// legacy shard, which holds other episodes' rows too) and each video, in that order, each
// read through the task's FileSystem.
Result<std::vector<FileDigest>> DigestFileGroup(const Task& task, const EpisodeEntry& e);

// The digest of one file, root/rel, read through `fs` in 1 MiB pieces; `role` is copied.
Result<FileDigest> DigestFile(FileSystem* fs, const std::string& root, const std::string& rel,
                              const std::string& role = "");

}  // namespace reel
