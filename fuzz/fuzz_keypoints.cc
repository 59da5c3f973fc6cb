// The keypoints mirror (src/reel/read/keypoints.cc, contract §10): the hand tracker's
// parquet files, read beside a task (`reel show`, Task.keypoints, backfill-hand-pose).
// Input: byte 0 picks the file (0 hand_pose/chunk-000.parquet, 1 hand_pose_3d/
// chunk-000.parquet, 2 auto_labels/auto_labels.parquet), the rest are its bytes. The task
// is fixed (PutSmallTask: one episode of 6 frames, frame_index 0..5 with timestamps); the
// file is episode 1's in the mirror. Per input: ListKeypointsFiles, ReadKeypointsFile, and
// ReadEpisodeKeypoints (validated against the schema, aligned to the data by frame_index).
// Checked: an aligned part has one data_row per keypoint row, each null or a data row.
#include <arrow/api.h>

#include <cstdio>
#include <cstdlib>

#include "harness_util.h"
#include "reel/keypoints.h"
#include "reel/task.h"

namespace {

using namespace reel;

constexpr const char* kRoot = "/mem/recordings/task";
constexpr const char* kMirror = "/mem/keypoints_output/task";
constexpr int kFrames = 6;

const fuzz::MemFs& BaseTask() {
  static const fuzz::MemFs* base = [] {
    auto* fs = new fuzz::MemFs;
    fs->set_writable(true);
    fuzz::PutSmallTask(*fs, kRoot, 1, kFrames);
    fs->set_writable(false);
    return fs;
  }();
  return *base;
}

void CheckAligned(const AlignedKeypoints& part) {
  auto rows = part.table ? part.table->GetColumnByName("data_row") : nullptr;
  if (!rows || rows->length() != part.rows || part.table->num_rows() != part.rows) {
    fprintf(stderr, "keypoints: %s: data_row does not cover the %lld rows\n", part.path.c_str(),
            static_cast<long long>(part.rows));
    std::abort();
  }
  for (const auto& chunk : rows->chunks()) {
    const auto& a = static_cast<const arrow::Int64Array&>(*chunk);
    for (int64_t i = 0; i < a.length(); ++i)
      if (a.IsValid(i) && (a.Value(i) < 0 || a.Value(i) >= kFrames)) {
        fprintf(stderr, "keypoints: %s: data_row %lld is not a data row\n", part.path.c_str(),
                static_cast<long long>(a.Value(i)));
        std::abort();
      }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const KeypointsPart part = kKeypointsParts[data[0] % 3];
  static fuzz::MemFs fs;
  fs = BaseTask();
  const std::string path = KeypointsEpisodeDir(kMirror, 1) + "/" + KeypointsPartFile(part);
  fs.Put(path, std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));

  (void)ListKeypointsFiles(&fs, kMirror, 1);
  KeypointsLimits limits;
  auto table = ReadKeypointsFile(&fs, path, part, limits);
  TaskOptions options;
  options.fs = &fs;
  options.io_threads = 1;
  auto task = Task::Open(kRoot, options);
  if (!task.ok()) {
    fprintf(stderr, "keypoints: the fixed task does not open: %s\n", task.status().ToString().c_str());
    std::abort();
  }
  KeypointsOptions ko;
  ko.keypoints_dir = kMirror;
  auto read = ReadEpisodeKeypoints(**task, 1, ko);
  if (fuzz::Debug())
    fprintf(stderr, "keypoints: %s: file %s; episode %s\n", KeypointsPartName(part), table.status().ToString().c_str(),
            read.status().ToString().c_str());
  if (read.ok())
    for (const AlignedKeypoints& p : read->parts) CheckAligned(p);
  // The default mirror (keypoints_output/<task> beside the task's parents) finds it too.
  (void)FindKeypointsMirror(&fs, kRoot);
  return 0;
}
