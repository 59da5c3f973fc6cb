// The upload zip slice (contract §9, reference-behaviour.md "Upload"): packing one
// episode on the collection machine, and inspecting/extracting an untrusted slice on
// the server.
//
// A slice is a zip of ZIP_STORED entries whose names are paths relative to the task
// root, exactly as in the task directory, in this order: the episode's videos (sorted
// by image_key), its data parquet, its episodes file (a single-row slice when the row
// lives in a legacy shard; the arcname is the new per-episode name either way), then
// meta/info.json, meta/stats.json, meta/tasks.jsonl. Dotfiles, the lock anchor and the
// recycled marker never go in.
//
// Errors about an untrusted slice are Status::Invalid (or NotSupported for an unknown
// format) whose message starts with a stable rule id followed by ": " (for example
// "zip.traversal: entry '../x' leaves the task directory"). The rule ids are listed in
// SliceRules() and docs/serve.md; the import server returns them in its JSON errors.
//
// Thread safety: free functions; concurrent calls on different outputs are safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "reel/fs.h"
#include "reel/progress.h"
#include "reel/status.h"

namespace reel {

// ---- packing (client side) ----------------------------------------------------

struct PackOptions {
  // Where the task is read: its files, and the videos `precompress` decodes. Only read
  // (Stat, ListDir, ReadFile, OpenRandomAccess), so any FileSystem will do: a local disk
  // or an object store (OpenLocation, reel/object_store.h). Not owned; null =
  // DefaultFileSystem().
  FileSystem* task_fs = nullptr;
  // Where the zip is written: zip_path's directory is checked, the zip is written as a
  // dotfile temp beside zip_path and renamed over it, so it needs Rename (a local disk).
  // Pack's scratch files (a legacy row's single-row slice, the re-encoded videos) are
  // written to a scratch directory in $TMPDIR through it and read back from it into the
  // zip. Not owned; null = DefaultFileSystem().
  FileSystem* output_fs = nullptr;
  // Re-encode RGB .mp4 videos that are not already HEVC to HEVC (hvc1, yuv420p) at
  // `precompress_crf` before packing (contract §8 "上传预压缩"). Depth videos are
  // never re-encoded, nor is a video that is already HEVC.
  bool precompress = false;
  int precompress_crf = 30;
  std::string precompress_preset = "fast";
  int precompress_threads = 0;  // 0 = let the encoder choose
  // With `precompress`: "videos precompressed" after each video (a kept one counts too).
  ProgressFn progress;
  // Replace an existing zip at the output path (the CLI's --force). Without it an existing
  // file is refused; with it, only a regular file that is a zip is replaced.
  bool replace_existing = false;
};

struct PackedEntry {
  std::string arcname;  // relative to the task root, '/'-separated
  uint64_t size = 0;    // bytes stored
  bool recompressed = false;  // an RGB video re-encoded by `precompress`
};

struct PackResult {
  std::string zip_path;
  int64_t episode_index = 0;        // N
  int64_t upload_episode_index = 0;  // (N-1) % 1000: the form field and file number
  std::vector<PackedEntry> entries;  // in zip order
  uint64_t zip_bytes = 0;
};

// The form field value of §9: the episode's file number (N-1) % 1000 (N=0 gives 0).
int64_t UploadEpisodeIndex(int64_t episode_index);

// "<task>_ep{(N-1)%1000:06d}.zip", the reference's display name for the slice.
std::string DefaultSliceName(const std::string& task_name, int64_t episode_index);

// Writes the slice of episode N of the pooled task at `task_root` (on options.task_fs)
// to `zip_path` (on options.output_fs), atomically (a dotfile temp beside it, fsynced,
// renamed). Errors: NotFound when N has no data parquet or no episodes row (e.g.
// deleted after upload), or a task file is missing; the task is never modified.
Result<PackResult> PackEpisode(const std::string& task_root, int64_t episode_index,
                               const std::string& zip_path, const PackOptions& options = {});

// ---- inspecting an untrusted slice (server side) --------------------------------

// Limits enforced against both the zip's headers and the bytes actually extracted.
struct SliceLimits {
  int64_t max_entries = 64;                      // zip.entry_count
  uint64_t max_entry_bytes = 8ull << 30;         // zip.entry_size, uncompressed
  uint64_t max_total_bytes = 32ull << 30;        // zip.total_size, uncompressed
  double max_ratio = 100.0;                      // zip.ratio: uncompressed / compressed
  uint64_t max_meta_bytes = 16ull << 20;         // zip.entry_size for meta/*.json(l)
};

struct SliceEntry {
  std::string arcname;
  uint64_t size = 0;             // uncompressed, from the central directory
  uint64_t compressed_size = 0;
};

struct SliceManifest {
  std::vector<SliceEntry> entries;  // in zip order
  int64_t chunk = 0;                // the (chunk, file) every episode entry names
  int64_t file = 0;
};

// Reads the central directory and checks every entry against the slice rules: a
// relative '/'-separated name without "..", "." or empty components, no backslash or
// NUL, not absolute; no symlink or other non-regular entry; no duplicate name (after
// case folding); no encryption; a name that is one of the allowed slice paths (the
// three meta files, or an episode file under data/, meta/episodes/ or videos/ whose
// chunk and file are the same for every entry); the limits above; exactly one data
// parquet, one episodes file and meta/info.json. It also reads meta/info.json (its
// bytes counted against max_meta_bytes, its CRC checked) and refuses a slice whose
// "format" is not "pooled_episodes_v1" (zip.format; NotSupported for another format).
// Entry names are the raw bytes of the zip: a name is never re-encoded from CP437.
Result<SliceManifest> InspectSlice(const std::string& zip_path, const SliceLimits& limits = {});

// Inspects, then extracts every entry under `dir` (created; must not exist yet),
// counting the bytes actually written against the limits (a lying header cannot get
// more out), and fsyncs each file. On error `dir` may hold a partial extraction; the
// caller owns and removes it.
Result<SliceManifest> ExtractSlice(const std::string& zip_path, const std::string& dir,
                                   const SliceLimits& limits = {}, FileSystem* fs = nullptr);

// The rule ids used in slice errors, with one-line summaries, in documentation order.
struct SliceRule {
  const char* id;
  const char* summary;
};
const std::vector<SliceRule>& SliceRules();

// The rule id `status` carries (Status::rule(): "zip.traversal"), or "" if none. Never
// parsed from the message, so a WithContext() prefix keeps it.
std::string RuleOf(const Status& status);

}  // namespace reel
