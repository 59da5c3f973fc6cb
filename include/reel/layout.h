// Layout of a task directory: format detection, episode numbering and the
// info.json path templates.
//
// Numbering (contract §2, reference-behaviour.md "Numbering"): the global
// episode number N starts at 1; n = max(N-1, 0); chunk = n / chunks_size,
// file = n % chunks_size. chunks_size is always read from info.json.
//
// Thread safety: all functions are pure or read-only; PathTemplate is immutable.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reel/fs.h"
#include "reel/status.h"

namespace reel {

enum class DatasetFormat {
  kPooledEpisodesV1,  // meta/info.json "format": "pooled_episodes_v1"
  kLegacyV1_0,        // no "format", per-session <task>_NNNNNN folders
  kLeRobotV2,         // codebase_version v2.x (v2.0, v2.1)
  kLeRobotV3,         // codebase_version v3.x
  kBundle,            // manifest.json + ep_<id>/episode.json, schema_version 1
};

const char* DatasetFormatName(DatasetFormat format);

struct DetectedFormat {
  DatasetFormat format = DatasetFormat::kPooledEpisodesV1;
  std::string version;   // "pooled_episodes_v1", "v2.1", "v3.0", "1", "v1.0"
  std::string evidence;  // the file that decided, relative to the root
};

// Decides the format of the dataset at `root` from meta/info.json (or
// manifest.json). Errors: NotFound when `root` or its metadata is missing;
// Invalid when `root` is a file or info.json is not a JSON object;
// NotSupported when `format`, `codebase_version` or `schema_version` holds a
// value reel does not know. Each message names the file and the value found.
Result<DetectedFormat> DetectFormat(FileSystem* fs, const std::string& root);

// Where episode N lives.
struct EpisodeLocation {
  int64_t chunk = 0;
  int64_t file = 0;
};
EpisodeLocation LocateEpisode(int64_t episode_index, int64_t chunks_size);
// Inverse of LocateEpisode for N >= 1: chunk * chunks_size + file + 1.
int64_t EpisodeIndexOf(EpisodeLocation location, int64_t chunks_size);
// The display/upload suffix (N-1) % chunks_size ("_ep{suffix:06d}", upload form field).
int64_t EpisodeFileSuffix(int64_t episode_index, int64_t chunks_size);

// Values substituted into a path template. Placeholder names accepted:
// c / chunk / episode_chunk / chunk_index, f / file / file_index,
// episode_index, image_key / video_key, ext.
struct PathVars {
  std::optional<int64_t> chunk;
  std::optional<int64_t> file;
  std::optional<int64_t> episode_index;
  std::optional<std::string> image_key;
  std::optional<std::string> ext;
};

// A compiled info.json path template such as
// "videos/chunk-{c:03d}/{image_key}/episode-{f:03d}.{ext}".
class PathTemplate {
 public:
  // Errors: Invalid for an unbalanced brace, an unknown placeholder name, an
  // unsupported format spec (only "" and "0Nd"), or an absolute path or "..".
  // Templates come from outside, so they are bounded: at most 512 bytes, widths
  // of at most 18, at most two string placeholders ({image_key}, {ext}) in one
  // path component (matching tries every split of the component).
  static Result<PathTemplate> Parse(const std::string& text);

  // Renders the template; Invalid when a placeholder it uses has no value.
  Result<std::string> Render(const PathVars& vars) const;
  // Matches a relative path (one component per template component); on success
  // returns the values of the placeholders it contains.
  std::optional<PathVars> Match(const std::string& relative_path) const;
  // Finds every existing file under `root` that matches, in path order.
  // Placeholders with a value in `fixed` must equal it; a component whose
  // placeholders are all fixed is probed directly instead of listed. Dotfiles
  // are never matched; directories that do not exist yield nothing. `list`, when
  // given, lists a directory (by its path relative to `root`) in place of
  // fs->ListDir, e.g. from a cache of listings (it must answer what ListDir would:
  // entries sorted by name, NotFound for a missing directory).
  using DirLister =
      std::function<Result<std::shared_ptr<const std::vector<DirEntry>>>(const std::string& relative)>;
  Result<std::vector<std::pair<std::string, PathVars>>> Glob(FileSystem* fs, const std::string& root,
                                                             const PathVars& fixed = {},
                                                             const DirLister& list = nullptr) const;
  // Glob, handing each match to `found` as it is found, in path order, instead of
  // collecting them (a task of 100,000 episodes then holds no list of its 100,000 files).
  // Stops at, and returns, the first error `found` returns.
  using Found = std::function<Status(std::string relative_path, PathVars vars)>;
  Status GlobEach(FileSystem* fs, const std::string& root, const PathVars& fixed, const DirLister& list,
                  const Found& found) const;

  const std::string& text() const { return text_; }

  // A compiled piece of one path component: a literal or a placeholder.
  enum class Var { kChunk, kFile, kEpisodeIndex, kImageKey, kExt };
  struct Piece {
    bool is_var = false;
    std::string literal;
    Var var = Var::kChunk;
    int width = 0;  // zero-padded minimum width of a numeric placeholder
  };

 private:
  std::string text_;
  std::vector<std::vector<Piece>> components_;
};

// Video slot names (multi-device §2.4, §4.3). A slot name is the reference collector's
// slot_base() of the name a user gave the device: runs of characters other than ASCII
// letters and digits, '_' and the CJK ideographs U+4E00-U+9FFF become one '_', then '_' is
// trimmed from both ends; case is kept ("D405_head", "桌面相机", "my cam!" -> "my_cam").
// `fallback` when nothing is left. Bytes that are not UTF-8 count as other characters.
// Slot names are not column names: only column segments are held to [a-z0-9_]+ (§2.4).
std::string SlotBase(std::string_view name, std::string_view fallback);
// A name slot_base leaves as it is (non-empty): what the recorder, `check` and the server accept.
bool IsSlotName(std::string_view slot);
// The RGB and depth slots of a new RealSense device (the reference's allocate_slot_names):
// the prefix is SlotBase(user_name, the model's "D4xx" lower-cased, else "realsense");
// RGB "<prefix>_rgb", depth "<prefix>_depth" (the prefix itself when it already ends in
// "_depth"); the n-th device of a prefix (n >= 2, counting the occupied RGB slots that begin
// with "<prefix>_rgb") gets "_n" after both.
struct AllocatedSlots {
  std::string rgb, depth;
};
AllocatedSlots AllocateSlotNames(std::string_view user_name, std::string_view model_name,
                                 const std::vector<std::string>& occupied_rgb_slots);

// Auxiliary streams (contract 000 §8: "RGB 的 _aux 类辅助流归主 key 同一目录，非主键可忽略"): a
// helper stream of an episode's video lives in the same slot directory as that video,
// named after it: "<stem>_aux.<ext>" or "<stem>_aux_<name>.<ext>" beside "<stem>.<ext'>"
// (ext, ext' mp4 or mkv; <name> ASCII letters, digits and '_'). Returns the main video's
// stem ("episode-000" for "episode-000_aux.mp4"), or nullopt when `file_name` is not such a
// name. Readers ignore these files; `check` accepts one whose main video exists.
std::optional<std::string> AuxStreamMainStem(std::string_view file_name);

// Files that are not data (contract §11): readers ignore them and the checker
// never parses them. True for dotfiles (".lock", ".x.tmp"), recycled_episode.json,
// _trash, _migrate_backup_*, _episodes_*.parquet.
bool IsNonDataName(const std::string& name);

// "<task>_NNNNNN": a v1.0 per-session folder (contract §1).
bool IsLegacySessionFolderName(const std::string& name);

// The keypoints mirror (contract §10): hand-keypoint post-processing output, kept outside
// the task and keyed like it:
//   keypoints_output/<task>/episode_{N:06d}/hand_pose/chunk-000.parquet     2D (MediaPipe)
//                                          /hand_pose_3d/chunk-000.parquet  3D world landmarks
//                                          /auto_labels/auto_labels.parquet
// Files inside carry no episode number; rows align with the data by frame_index.
inline constexpr const char* kKeypointsHandPose = "hand_pose/chunk-000.parquet";
inline constexpr const char* kKeypointsHandPose3d = "hand_pose_3d/chunk-000.parquet";
inline constexpr const char* kKeypointsAutoLabels = "auto_labels/auto_labels.parquet";

// The mirror folder of the task at `root` (the folder holding its episode_{N:06d}/
// folders). `explicit_dir`, when not empty, is taken as it is (it must exist). Otherwise the
// first existing <ancestor>/keypoints_output/<task name>, for ancestor = the task's parent,
// grandparent and great-grandparent: the reference collector keeps a task at
// BASE/data/recordings/<task> and its mirror at BASE/keypoints_output/<task>.
// Errors: NotFound naming every place looked at.
Result<std::string> FindKeypointsMirror(FileSystem* fs, const std::string& root,
                                        const std::string& explicit_dir = "");
// <mirror>/episode_{N:06d}
std::string KeypointsEpisodeDir(const std::string& mirror, int64_t episode_index);

}  // namespace reel
