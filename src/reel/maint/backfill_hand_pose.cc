// reel backfill-hand-pose (include/reel/maintenance.h): the keypoints mirror's hand_pose_3d
// world landmarks written into the data's hand-pose placeholder columns, through the
// episode transaction (maint/rewrite_data.h).
#include <arrow/api.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "io/arrow_take.h"
#include "maint/rewrite_data.h"
#include "reel/keypoints.h"
#include "reel/layout.h"
#include "reel/maintenance.h"
#include "reel/task.h"

namespace reel {

namespace {

constexpr int32_t kLandmarks = 63;  // 21 MediaPipe world landmarks x (x, y, z)
constexpr const char* kSideColumns[2] = {"observation.left_hand_pose", "observation.right_hand_pose"};
constexpr const char* kSideLabels[2] = {"Left", "Right"};

// The landmarks of one hand_pose_3d row for each side: which hand (0/1) fills it, -1 none.
struct RowHands {
  int hand[2] = {-1, -1};
  bool ambiguous = false;
  int64_t unlabelled = 0;
};

struct Hand3d {
  const arrow::BooleanArray* present;
  const arrow::StringArray* label;
  const arrow::FixedSizeListArray* landmarks;
};

RowHands SidesOf(const Hand3d (&hands)[2], int64_t r) {
  RowHands out;
  int count[2] = {0, 0};
  for (int h = 0; h < 2; ++h) {
    const Hand3d& hand = hands[h];
    if (hand.present->IsNull(r) || !hand.present->Value(r)) continue;
    const std::string_view label = hand.label->IsNull(r) ? std::string_view() : hand.label->GetView(r);
    int side = label == kSideLabels[0] ? 0 : label == kSideLabels[1] ? 1 : -1;
    if (side < 0 || hand.landmarks->IsNull(r)) {
      ++out.unlabelled;
      continue;
    }
    ++count[side];
    out.hand[side] = h;
  }
  for (int side = 0; side < 2; ++side)
    if (count[side] > 1) {  // both hands claim this side: write neither
      out.hand[side] = -1;
      out.ambiguous = true;
    }
  return out;
}

// The file's columns as single arrays (ReadKeypointsFile validated their types).
Result<Hand3d> HandColumns(const arrow::Table& table, int h, std::vector<std::shared_ptr<arrow::Array>>& keep) {
  Hand3d out{};
  const std::string prefix = "hand_" + std::to_string(h) + "_";
  const char* names[3] = {"present", "label", "landmarks_3d"};
  for (int i = 0; i < 3; ++i) {
    REEL_ASSIGN_OR_RETURN(auto joined, internal::CombineChunks(*table.GetColumnByName(prefix + names[i])));
    keep.push_back(std::move(joined));
  }
  const size_t n = keep.size();
  out.present = static_cast<const arrow::BooleanArray*>(keep[n - 3].get());
  out.label = static_cast<const arrow::StringArray*>(keep[n - 2].get());
  out.landmarks = static_cast<const arrow::FixedSizeListArray*>(keep[n - 1].get());
  return out;
}

// Fills the two side buffers from the keypoints table; counts into `report`.
// A landmark that is NaN or infinite is refused naming the file, the frame and the hand, as
// add-columns refuses one (`reel check`'s data.finite): a hand without a pose holds zeros.
Status FillSides(const arrow::Table& keypoints, const std::unordered_map<int64_t, int64_t>& data_rows,
                 const std::string& source, std::vector<float> (&sides)[2], HandPoseBackfill& report) {
  std::vector<std::shared_ptr<arrow::Array>> keep;
  Hand3d hands[2];
  for (int h = 0; h < 2; ++h) {
    REEL_ASSIGN_OR_RETURN(hands[h], HandColumns(keypoints, h, keep));
  }
  REEL_ASSIGN_OR_RETURN(auto frames, internal::FrameIndexValues(*keypoints.GetColumnByName("frame_index"), ""));
  for (int64_t r = 0; r < static_cast<int64_t>(frames.size()); ++r) {
    auto it = data_rows.find(frames[r]);
    if (it == data_rows.end()) {
      ++report.unmatched_rows;
      continue;
    }
    const RowHands row = SidesOf(hands, r);
    report.unlabelled_hands += row.unlabelled;
    report.ambiguous_rows += row.ambiguous ? 1 : 0;
    for (int side = 0; side < 2; ++side) {
      if (row.hand[side] < 0) continue;
      const auto& lm = *hands[row.hand[side]].landmarks;
      const float* src = static_cast<const arrow::FloatArray&>(*lm.values()).raw_values() + lm.value_offset(r);
      if (!std::all_of(src, src + kLandmarks, [](float v) { return std::isfinite(v); }))
        return Status::Invalid(source + ": frame_index " + std::to_string(frames[r]) + ": hand_" +
                               std::to_string(row.hand[side]) + "_landmarks_3d holds a NaN or an infinity; "
                               "backfill-hand-pose writes finite poses (check: data.finite), nothing was changed");
      std::copy(src, src + kLandmarks, sides[side].begin() + it->second * kLandmarks);
      ++(side == 0 ? report.left_rows : report.right_rows);
    }
  }
  return Status::OK();
}

// The transform: both side columns recomputed from the keypoints (zeros where no hand).
Result<std::shared_ptr<arrow::Table>> Backfill(const std::shared_ptr<arrow::Table>& data,
                                               const arrow::Table& keypoints, const std::string& source,
                                               const std::string& data_path, HandPoseBackfill& report) {
  int index[2];
  for (int side = 0; side < 2; ++side) {
    index[side] = data->schema()->GetFieldIndex(kSideColumns[side]);
    if (index[side] < 0) continue;
    const auto& type = *data->schema()->field(index[side])->type();
    if (type.id() != arrow::Type::FIXED_SIZE_LIST ||
        static_cast<const arrow::FixedSizeListType&>(type).list_size() != kLandmarks ||
        static_cast<const arrow::FixedSizeListType&>(type).value_type()->id() != arrow::Type::FLOAT)
      return Status::Invalid(data_path + ": column " + kSideColumns[side] + " is " + type.ToString() +
                             ", expected fixed_size_list<float>[63] (contract §7.2)");
  }
  if (index[0] < 0 && index[1] < 0)
    return Status::Invalid(data_path + ": no observation.left_hand_pose / observation.right_hand_pose column; "
                           "backfill-hand-pose fills the recorder's placeholders and never adds a column");
  auto frames = data->GetColumnByName("frame_index");
  if (!frames || (frames->type()->id() != arrow::Type::INT64 && frames->type()->id() != arrow::Type::INT32))
    return Status::Invalid(data_path + ": no integer frame_index column");
  REEL_ASSIGN_OR_RETURN(auto frame_values, internal::FrameIndexValues(*frames, data_path));
  std::unordered_map<int64_t, int64_t> rows;
  for (size_t r = 0; r < frame_values.size(); ++r) rows.emplace(frame_values[r], static_cast<int64_t>(r));
  report.data_rows = data->num_rows();
  report.keypoint_rows = keypoints.num_rows();
  std::vector<float> sides[2] = {std::vector<float>(data->num_rows() * kLandmarks, 0.0f),
                                 std::vector<float>(data->num_rows() * kLandmarks, 0.0f)};
  REEL_RETURN_IF_ERROR(FillSides(keypoints, rows, source, sides, report));
  auto table = data;
  for (int side = 0; side < 2; ++side) {
    if (index[side] < 0) continue;  // a hand of that side has nowhere to go
    const auto field = data->schema()->field(index[side]);
    const auto count = static_cast<int64_t>(sides[side].size());  // before the move below
    auto values = std::make_shared<arrow::FloatArray>(count, arrow::Buffer::FromVector(std::move(sides[side])));
    auto array = arrow::FixedSizeListArray::FromArrays(values, field->type());
    if (!array.ok()) return Status::Invalid(data_path + ": " + array.status().ToString());
    auto replaced = table->SetColumn(index[side], field, std::make_shared<arrow::ChunkedArray>(*array));
    if (!replaced.ok()) return Status::Invalid(data_path + ": " + replaced.status().ToString());
    table = *replaced;
  }
  return table;
}

Status BackfillEpisode(internal::TaskLock& lock, const Task& task, const EpisodeEntry& e, const std::string& mirror,
                       const BackfillHandPoseOptions& options, HandPoseBackfill& report) {
  if (e.data_path.empty()) {
    report.skipped = "no data file";
    return Status::OK();
  }
  const std::string source = JoinPath(KeypointsEpisodeDir(mirror, e.episode_index), kKeypointsHandPose3d);
  REEL_ASSIGN_OR_RETURN(FileInfo info, task.fs()->Stat(source));
  if (info.type != FileType::kFile) {
    report.skipped = "no hand_pose_3d file";
    return Status::OK();
  }
  report.source = source;
  REEL_ASSIGN_OR_RETURN(auto keypoints, ReadKeypointsFile(task.fs(), source, KeypointsPart::kHandPose3d));
  const std::string data_path = task.Path(e.data_path);
  internal::DataTransform transform = [&](const std::shared_ptr<arrow::Table>& data) {
    return Backfill(data, *keypoints, source, data_path, report);
  };
  REEL_ASSIGN_OR_RETURN(report.changed,
                        internal::RewriteEpisodeData(lock, task, e, transform, {.dry_run = options.dry_run}));
  report.written = report.changed && !options.dry_run;
  return Status::OK();
}

}  // namespace

Result<BackfillHandPoseReport> BackfillHandPose(const std::string& root, const BackfillHandPoseOptions& options) {
  FileSystem* fs = options.fs ? options.fs : DefaultFileSystem();
  BackfillHandPoseReport report;
  report.dry_run = options.dry_run;
  REEL_ASSIGN_OR_RETURN(report.mirror, FindKeypointsMirror(fs, root, options.keypoints_dir));
  REEL_ASSIGN_OR_RETURN(internal::TaskLock lock, internal::TaskLock::Acquire(fs, root));
  if (!options.dry_run) REEL_RETURN_IF_ERROR(lock.RemoveStaleTemps());  // temps of a run killed before its journal
  REEL_ASSIGN_OR_RETURN(auto task, Task::Open(root, {fs, 0, EpisodeIndexMode::kRead}));
  std::vector<EpisodeEntry> episodes;
  if (options.episodes.empty()) {
    REEL_ASSIGN_OR_RETURN(episodes, task->ListEpisodes());
  } else {
    for (int64_t n : options.episodes) {
      REEL_ASSIGN_OR_RETURN(EpisodeEntry e, task->FindEpisode(n));
      episodes.push_back(std::move(e));
    }
  }
  int64_t done = 0;
  for (const EpisodeEntry& e : episodes) {
    HandPoseBackfill r;
    r.episode_index = e.episode_index;
    Status st = BackfillEpisode(lock, *task, e, report.mirror, options, r);
    if (!st.ok()) return st.WithContext("backfill-hand-pose of episode " + std::to_string(e.episode_index));
    report.episodes_written += r.written ? 1 : 0;
    report.episodes.push_back(std::move(r));
    if (options.progress)
      options.progress({"episodes examined", ++done, static_cast<int64_t>(episodes.size()),
                        "episode " + std::to_string(e.episode_index)});
  }
  return report;
}

}  // namespace reel
