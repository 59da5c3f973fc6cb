// Reading datasets reel does not write: LeRobot v2.0/v2.1 and v3.x, and bundles
// (manifest.json + episodes/<id>/, schema_version 1). Read-only.
//
// Two stages, like Daft's LeRobot reader: ReadEpisodes() builds the episode
// index from metadata alone (plus a stat per referenced file), then
// ReadFrames() / VideoTargets() / ReadVideoRgb() touch one episode's data.
//
// Names follow the formats' own words: episode_index, length, tasks,
// dataset_from_index/dataset_to_index, from_timestamp/to_timestamp, video key.
// The rules each stage enforces are listed in docs/foreign-read.md.
//
// Errors: every failure is a Status whose message names the file, the episode
// and the value that was wrong. NotSupported for a codebase_version or
// schema_version reel does not know; Invalid for metadata that contradicts
// itself or the data; NotFound for a missing file; Corruption for a file that
// cannot be decoded.
//
// Thread safety: a ForeignDataset is immutable after Open(); its const methods
// may be called from any number of threads at once (each call opens its own
// files).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "reel/findings.h"
#include "reel/fs.h"
#include "reel/layout.h"
#include "reel/status.h"
#include "reel/video.h"

namespace arrow {
class Table;
}

namespace reel {

// One feature as declared in meta/info.json (LeRobot) or manifest.json (bundle).
struct ForeignFeature {
  std::string dtype;           // "float32", "int64", "video", "image", "string", ...
  std::vector<int64_t> shape;  // as declared
};

// Where one episode's frames of one camera lie.
struct VideoSpan {
  std::string key;   // the video feature key, e.g. "observation.images.top"
  std::string path;  // relative to the dataset root
  // Seconds in `path` where the episode starts / ends. v3: the episodes row's
  // videos/<key>/from_timestamp and to_timestamp; v2.x: 0 and length / fps
  // (one file per episode); bundle: 0 and length / fps (addressed by index).
  double from_timestamp = 0;
  double to_timestamp = 0;
};

// One episode as the metadata describes it.
struct ForeignEpisode {
  // LeRobot: episode_index (0-based). Bundle: position in manifest.json's
  // "episodes" list (0-based), the bundle id is `bundle_id`.
  int64_t episode_index = 0;
  int64_t length = 0;              // frames (= data rows) of the episode
  std::vector<std::string> tasks;  // LeRobot: the episode's tasks; bundle: {task}
  std::string data_path;           // relative to the root
  // The episode's rows within `data_path`: [from_row, to_row). v3 files hold many
  // episodes; v2.x and bundles hold one (0..length).
  int64_t from_row = 0;
  int64_t to_row = 0;
  // Global frame index range [from, to): v3 dataset_from_index/dataset_to_index;
  // v2.x and bundles: the running sum of lengths.
  int64_t dataset_from_index = 0;
  int64_t dataset_to_index = 0;
  std::vector<VideoSpan> videos;  // in video key order
  // Bundle only.
  std::string bundle_id;         // "ep_<32hex>" (the directory under episodes/)
  std::string task_description;  // manifest's task_description
};

// The dataset-level metadata reel uses.
struct ForeignInfo {
  DatasetFormat format = DatasetFormat::kLeRobotV3;
  std::string version;  // "v2.0", "v2.1", "v3.0", or "1" for bundles
  double fps = 0;
  std::string robot_type;          // LeRobot only
  std::string name;                // bundle manifest "name"
  int64_t total_episodes = 0;      // as declared (info.json / manifest episode_count)
  int64_t total_frames = -1;       // LeRobot info.json total_frames; -1 when absent
  int64_t chunks_size = 0;         // LeRobot only
  std::string data_path;           // LeRobot path templates as declared
  std::string video_path;
  std::map<std::string, ForeignFeature> features;
  std::vector<std::string> video_keys;  // features of dtype "video" (bundle: mp4 keys), sorted
  std::vector<std::string> tasks;       // by task_index (LeRobot); bundle: distinct, in order
};

// How one episode's frames of one camera are addressed in its video file.
struct VideoTargets {
  std::string path;  // the video file, joined with the dataset root
  // LeRobot: frames are found by time; time_s[i] = from_timestamp + the data
  // row's timestamp for row i of the episode. Bundles: row i = frame i
  // (by_index = true, frame[i] = i, time_s empty).
  bool by_index = false;
  std::vector<double> time_s;
  std::vector<int64_t> frame;
  double tolerance_s = 0;  // half a frame period at the dataset's fps
};

// Annotations added after an episode was committed (seed 004: "later annotations (dense
// progress labels, language spans) attach as overlay files, never by rewriting a bundle").
// A bundle dataset's overlay <name> is one parquet file per episode,
// overlays/<name>/<bundle id>.parquet, of one of two kinds told apart by its key columns:
//   dense: `step` int64, one row per step 0..length-1 in order (a progress label per frame);
//   spans: `start_step`, `end_step` int64, 0 <= start_step < end_step <= length, the steps
//          [start_step, end_step) (a language instruction over a stretch of the episode).
// Every other column is a value column (any Arrow type; at least one). All files of one
// overlay have the same kind and value columns. docs/interop.md "Overlays".
enum class OverlayKind { kDense, kSpans };
const char* OverlayKindName(OverlayKind kind);  // "dense", "spans"

struct OverlayInfo {
  std::string name;                   // the directory under overlays/
  OverlayKind kind = OverlayKind::kDense;
  std::vector<std::string> columns;   // value columns, in file order (from one file's footer)
  std::vector<std::string> episodes;  // bundle ids with a file, sorted
};

struct ForeignOpenOptions {
  FileSystem* fs = nullptr;  // null = DefaultFileSystem()
};

// A LeRobot v2.x / v3.x or bundle dataset, opened read-only.
class ForeignDataset {
 public:
  // Reads meta/info.json (or manifest.json) and, for LeRobot, the tasks.
  // Errors: NotSupported for a pooled or v1.0 task (use Task), for a
  // codebase_version other than v2.0, v2.1, v3.<n>, or a schema_version other
  // than 1; Invalid for malformed metadata or tasks whose task_index is not
  // 0..n-1 in row order.
  static Result<std::unique_ptr<ForeignDataset>> Open(const std::string& root,
                                                      const ForeignOpenOptions& options = {});

  const std::string& root() const { return root_; }
  const ForeignInfo& info() const { return info_; }

  // Every episode, in episode_index order, from metadata alone plus a stat per
  // file it names. Fails on the first violation of the metadata rules
  // (docs/foreign-read.md): episode i not at row i or a gap, non-contiguous
  // dataset_from/to_index, a video span that disagrees with length / fps by more
  // than half a frame, a missing data or video file, a bundle whose directory or
  // episode.json is missing or whose lengths disagree.
  Result<std::vector<ForeignEpisode>> ReadEpisodes() const;

  // The episode's rows of its data file (only the row groups that overlap
  // them are read), columns in file order; `columns` empty = all. Checks that
  // the rows are the episode's: the file holds enough rows, its episode_index
  // / index columns (when present) match, a bundle's step is 0..n-1.
  Result<std::shared_ptr<arrow::Table>> ReadFrames(const ForeignEpisode& episode,
                                                   const std::vector<std::string>& columns = {}) const;

  // How to find each of the episode's frames of camera `key` in its video.
  // NotFound when the episode has no video `key`.
  Result<VideoTargets> FindVideoTargets(const ForeignEpisode& episode, const std::string& key) const;

  // Decodes rows `rows` (0-based within the episode) of camera `key` as RGB24
  // into `out` (rows.size() * height * width * 3 bytes; `info` gets the
  // stream's description first, so a caller may pass an empty `out` to learn
  // the size: then only `info` is filled). LeRobot: nearest frame within half a
  // frame period of from_timestamp + timestamp; bundle: frame index = row.
  Status ReadVideoRgb(const ForeignEpisode& episode, const std::string& key,
                      std::span<const int64_t> rows, VideoInfo* info, std::vector<uint8_t>* out) const;

  // Every rule of docs/foreign-read.md over the whole dataset, collected rather
  // than stopping at the first: the metadata rules of ReadEpisodes, then per
  // episode the data rules of ReadFrames, then each video's frame count (by
  // its packet index). Never fails; an unreadable file is a finding. Rule ids
  // start with "foreign." and are listed by Rules() (reel/check.h).
  TaskReport Validate() const;

  // Bundles only (NotSupported otherwise). Every overlay under overlays/, by name, from
  // one listing per overlay and one footer (files are not read: check validates them).
  // Empty when the dataset has none.
  Result<std::vector<OverlayInfo>> ListOverlays() const;
  // Overlay `name` of `episode`, checked against the overlay rules above and the episode's
  // length. NotFound when the episode has none; Invalid for a file that breaks a rule, a
  // name that is not one plain component, a symbolic link on the way, or a file over 256 MiB.
  Result<std::shared_ptr<arrow::Table>> ReadOverlay(const ForeignEpisode& episode, const std::string& name) const;

 private:
  ForeignDataset() = default;

  FileSystem* fs_ = nullptr;
  std::string root_;
  ForeignInfo info_;
};

// The bundle episode `episode` names among `episodes` (ReadEpisodes'): a bundle id, else a
// manifest position in decimal. NotFound naming `root` and the range.
Result<const ForeignEpisode*> FindBundleEpisode(const std::vector<ForeignEpisode>& episodes,
                                                const std::string& episode, const std::string& root);

// The episode whose episode_index is `n` among `episodes` (ReadEpisodes'; LeRobot
// episode_index, bundle manifest position). NotFound naming `root` and the range.
Result<const ForeignEpisode*> FindForeignEpisode(const std::vector<ForeignEpisode>& episodes, int64_t n,
                                                 const std::string& root);

// True for the formats ForeignDataset reads (LeRobot v2/v3, bundle).
bool IsForeignFormat(DatasetFormat format);

}  // namespace reel
