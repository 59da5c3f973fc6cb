// The keypoints mirror (contract §10): hand-keypoint post-processing output kept outside
// the task, keypoints_output/<task>/episode_{N:06d}/{hand_pose, hand_pose_3d, auto_labels},
// read, validated and aligned to the episode's data by frame_index (docs/maintenance.md
// "keypoints"). Where the mirror is: FindKeypointsMirror (reel/layout.h).
//
// The files come from another program (the reference collector's hand tracker), so every
// one is validated before use: bounded size and row count, the reference writer's schema
// (a missing column or a wrong type is an error naming the file, the column, the expected
// and the found type), the fixed list lengths (hand_data 92, track_ids 2, landmarks 63)
// and unique frame_index values. A variable list<T> whose rows all have the fixed length
// is accepted and returned as fixed_size_list<T>[n]; null rows stay null.
//
// Thread safety: pure functions over the FileSystem.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "reel/fs.h"
#include "reel/status.h"

namespace arrow {
class Table;
}

namespace reel {

class Task;

enum class KeypointsPart { kHandPose, kHandPose3d, kAutoLabels };
inline constexpr std::array<KeypointsPart, 3> kKeypointsParts = {
    KeypointsPart::kHandPose, KeypointsPart::kHandPose3d, KeypointsPart::kAutoLabels};
// "hand_pose", "hand_pose_3d", "auto_labels"
const char* KeypointsPartName(KeypointsPart part);
// The file inside episode_{N:06d}/ (kKeypointsHandPose, ... of reel/layout.h).
const char* KeypointsPartFile(KeypointsPart part);

// Bounds on a file from outside (hostile input): a file beyond them is refused, not read.
struct KeypointsLimits {
  int64_t max_file_bytes = int64_t{1} << 30;  // 1 GiB
  int64_t max_rows = 10'000'000;              // ~92 h at 30 fps
};

// One part's file of one episode (what exists, from a stat only).
struct KeypointsFile {
  KeypointsPart part = KeypointsPart::kHandPose;
  std::string path;     // absolute
  bool exists = false;  // a regular file is there
  int64_t bytes = 0;
};

// The three files of episode N in the mirror folder `mirror`, in kKeypointsParts order.
Result<std::vector<KeypointsFile>> ListKeypointsFiles(FileSystem* fs, const std::string& mirror,
                                                      int64_t episode_index);

// Reads and validates one part's file. Errors: NotFound for a missing file; Invalid naming
// the file and the rule (size, rows, column, type, list length, duplicate or negative
// frame_index); Corruption for a file that is not parquet.
Result<std::shared_ptr<arrow::Table>> ReadKeypointsFile(FileSystem* fs, const std::string& path,
                                                        KeypointsPart part,
                                                        const KeypointsLimits& limits = {});

// One part of an episode aligned to its data: the file's rows in file order with two
// columns appended, data_row (int64: the row of the data file with the same frame_index)
// and timestamp (the data row's timestamp), both null for a keypoint row without a data
// row. Such rows are reported, never dropped.
struct AlignedKeypoints {
  KeypointsPart part = KeypointsPart::kHandPose;
  std::string path;
  std::shared_ptr<arrow::Table> table;
  int64_t rows = 0;
  int64_t matched = 0;                     // rows with a data row
  std::vector<int64_t> unmatched_frames;   // frame_index of the others, ascending
};

struct EpisodeKeypoints {
  int64_t episode_index = 0;
  std::string mirror;  // the mirror folder used
  std::string dir;     // <mirror>/episode_{N:06d}
  int64_t data_rows = 0;  // rows of the episode's data file (0 when it has none)
  std::vector<KeypointsFile> files;     // all three, present or not
  std::vector<AlignedKeypoints> parts;  // the present ones, in kKeypointsParts order
  const AlignedKeypoints* Find(KeypointsPart part) const;
};

struct KeypointsOptions {
  std::string keypoints_dir;  // the mirror folder; empty = FindKeypointsMirror's default
  KeypointsLimits limits;
};

// Episode N's keypoint files of `task`, validated and aligned to its data by frame_index.
// Errors: those of FindKeypointsMirror (no mirror), Task::FindEpisode, ReadKeypointsFile;
// Invalid when the data's frame_index repeats. An episode without a folder in the mirror
// gives no parts; an episode without data gives every keypoint row unmatched.
Result<EpisodeKeypoints> ReadEpisodeKeypoints(const Task& task, int64_t episode_index,
                                              const KeypointsOptions& options = {});

}  // namespace reel
