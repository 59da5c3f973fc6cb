// EpisodeData: sparse columns, row-group streaming and the segment rewrite.
#include "write/episode_data.h"

#include <arrow/api.h>
#include <algorithm>
#include <gtest/gtest.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <stdlib.h>

#include "reel/task.h"
#include "testing/status_matchers.h"

namespace reel::internal {
namespace {

class EpisodeDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "reel_episode_data_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  EpisodeData Make(int64_t row_group_rows) {
    EpisodeData::Options o;
    o.fs = DefaultFileSystem();
    o.final_path = dir_ + "/data/chunk-000/episode-000.parquet";
    o.episode_index = 1;
    o.row_group_rows = row_group_rows;
    return EpisodeData(std::move(o));
  }
  static FrameRow Row(int64_t i, bool glove) {
    FrameRow r;
    r.timestamp = 0.1 * static_cast<double>(i);
    r.wall_time = 1.79e9 + r.timestamp;
    r.hardware_ns = 1000 + i;
    if (glove) r.SetFixed("observation.left_glove", std::vector<float>(256, static_cast<float>(i)));
    return r;
  }
  std::string dir_;
};

TEST_F(EpisodeDataTest, ColumnAppearingAfterFlushedGroupsIsBackfilledByTheRewrite) {
  EpisodeData data = Make(2);
  for (int64_t i = 0; i < 5; ++i) ASSERT_TRUE(data.Append(Row(i, false)).ok());
  for (int64_t i = 5; i < 7; ++i) ASSERT_TRUE(data.Append(Row(i, true)).ok());
  auto path = data.Finish();
  ASSERT_OK(path);
  ASSERT_FALSE(path->empty());
  auto table = ReadParquetFile(DefaultFileSystem(), *path);
  ASSERT_OK(table);
  ASSERT_EQ((*table)->num_rows(), 7);
  auto glove = (*table)->GetColumnByName("observation.left_glove");
  ASSERT_NE(glove, nullptr);
  EXPECT_TRUE(HasFamilyType(ColumnFamily::kGlove, 256, *glove->type())) << glove->type()->ToString();
  EXPECT_EQ(glove->null_count(), 0);
  for (int64_t i = 0; i < 7; ++i) {
    auto cell = std::static_pointer_cast<arrow::FixedSizeListScalar>(*glove->GetScalar(i));
    auto first = std::static_pointer_cast<arrow::FloatScalar>(*cell->value->GetScalar(255));
    EXPECT_EQ(first->value, i < 5 ? 0.0f : static_cast<float>(i)) << "row " << i;
  }
  // frame_index stays 0..6 across the segments.
  auto frames = (*table)->GetColumnByName("frame_index");
  for (int64_t i = 0; i < 7; ++i)
    EXPECT_EQ(std::static_pointer_cast<arrow::Int64Scalar>(*frames->GetScalar(i))->value, i);
  // Zero-filled rows count in the glove stats (contract §4): 7 rows, mean (5+6)/7.
  auto stats = data.Stats();
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(*stats[0].second.count, 7);
  EXPECT_DOUBLE_EQ(stats[0].second.mean[0], 11.0 / 7.0);
  EXPECT_DOUBLE_EQ(stats[0].second.min[0], 0.0);
  // Only the final file is left: the segments were removed.
  auto entries = DefaultFileSystem()->ListDir(dir_ + "/data/chunk-000");
  ASSERT_OK(entries);
  EXPECT_EQ(entries->size(), 1u);
}

TEST_F(EpisodeDataTest, RejectedRowLeavesNoTraceAndImuRowsAreEmptyNotNull) {
  EpisodeData data = Make(100);
  FrameRow bad = Row(0, false);
  bad.SetFixed("observation.gripper_state", {1.0f, 2.0f});  // needs 3 values
  EXPECT_EQ(data.Append(bad).code(), StatusCode::kInvalid);
  FrameRow retired = Row(0, false);
  retired.SetFixed("observation.gripper_1_gripper_state", {1, 2, 3});
  EXPECT_EQ(data.Append(retired).code(), StatusCode::kInvalid);
  FrameRow third = Row(0, false);
  third.SetFixed("observation.third_glove", std::vector<float>(256, 1.0f));
  EXPECT_EQ(data.Append(third).code(), StatusCode::kInvalid);
  EXPECT_EQ(data.rows(), 0);
  FrameRow with_imu = Row(0, false);
  with_imu.AddImuSample(5, {1, 2, 3, 4, 5, 6});
  with_imu.AddImuSample(6, {1, 2, 3, 4, 5, 6});
  ASSERT_OK(data.Append(with_imu));
  ASSERT_OK(data.Append(Row(1, false)));
  auto path = data.Finish();
  ASSERT_OK(path);
  auto table = ReadParquetFile(DefaultFileSystem(), *path);
  ASSERT_OK(table);
  auto imu = (*table)->GetColumnByName("observation.imu");
  auto ts = (*table)->GetColumnByName("imu_ts_ns");
  ASSERT_NE(imu, nullptr);
  ASSERT_NE(ts, nullptr);
  EXPECT_EQ(imu->null_count(), 0);
  auto list = std::static_pointer_cast<arrow::ListArray>(imu->chunk(0));
  EXPECT_EQ(list->value_length(0), 2);
  EXPECT_EQ(list->value_length(1), 0);
  EXPECT_EQ(std::static_pointer_cast<arrow::ListArray>(ts->chunk(0))->value_length(1), 0);
  EXPECT_EQ(*data.Stats()[0].second.count, 2);  // IMU counted per sample
  EXPECT_EQ((*table)->GetColumnByName("observation.gripper_state"), nullptr);  // never supplied
}

TEST_F(EpisodeDataTest, NoRowsNoFile) {
  EpisodeData data = Make(4);
  auto path = data.Finish();
  ASSERT_OK(path);
  EXPECT_TRUE(path->empty());
}

// A row group also ends once its rows hold row_group_bytes of values: 10 glove rows of
// 1 KiB each with a 3 KiB budget give groups of 3, 3, 3 and 1 rows.
TEST_F(EpisodeDataTest, RowGroupsEndAtTheByteBudget) {
  EpisodeData::Options o;
  o.fs = DefaultFileSystem();
  o.final_path = dir_ + "/data/chunk-000/episode-000.parquet";
  o.episode_index = 1;
  o.row_group_rows = 256;
  o.row_group_bytes = 3 * 1024;
  EpisodeData data(std::move(o));
  for (int64_t i = 0; i < 10; ++i) ASSERT_TRUE(data.Append(Row(i, true)).ok());
  auto path = data.Finish();
  ASSERT_OK(path);
  auto file = parquet::ParquetFileReader::OpenFile(*path);
  auto meta = file->metadata();
  ASSERT_EQ(meta->num_rows(), 10);
  std::vector<int64_t> groups;
  for (int g = 0; g < meta->num_row_groups(); ++g) groups.push_back(meta->RowGroup(g)->num_rows());
  EXPECT_EQ(groups, (std::vector<int64_t>{3, 3, 3, 1}));
}

// Contract §7.2 / multi-device §4.5: a glove brings both hand-pose columns, written as
// [0]*63 placeholders that post-processing backfills.
TEST_F(EpisodeDataTest, GloveBringsZeroHandPosePlaceholders) {
  EpisodeData data = Make(2);
  for (int64_t i = 0; i < 3; ++i) ASSERT_TRUE(data.Append(Row(i, false)).ok());
  for (int64_t i = 3; i < 5; ++i) ASSERT_TRUE(data.Append(Row(i, true)).ok());
  auto path = data.Finish();
  ASSERT_OK(path);
  auto table = ReadParquetFile(DefaultFileSystem(), *path);
  ASSERT_OK(table);
  for (const char* name : {"observation.left_hand_pose", "observation.right_hand_pose"}) {
    auto column = (*table)->GetColumnByName(name);
    ASSERT_NE(column, nullptr) << name;
    EXPECT_TRUE(column->type()->Equals(arrow::fixed_size_list(arrow::float32(), 63))) << column->type()->ToString();
    for (int64_t i = 0; i < 5; ++i) {
      auto cell = std::static_pointer_cast<arrow::FixedSizeListScalar>(*column->GetScalar(i));
      ASSERT_EQ(cell->value->length(), 63);
      for (int64_t k = 0; k < 63; ++k)
        EXPECT_EQ(std::static_pointer_cast<arrow::FloatScalar>(*cell->value->GetScalar(k))->value, 0.0f);
    }
  }
  std::vector<std::string> names;
  for (const auto& [name, family] : data.Columns()) names.push_back(name);
  EXPECT_NE(std::find(names.begin(), names.end(), "observation.right_hand_pose"), names.end());
}

// Contract §7.2 "恒写占位零", multi-device Appendix C "恒有": the hand-pose placeholders are
// on every episode, a glove or not (issue 30; before, only beside a glove).
TEST_F(EpisodeDataTest, HandPoseWithoutAGloveToo) {
  EpisodeData data = Make(8);
  for (int64_t i = 0; i < 3; ++i) {
    FrameRow r = Row(i, false);
    r.SetFixed("observation.gripper_state", {1, 2, 3});
    ASSERT_OK(data.Append(r));
  }
  auto path = data.Finish();
  ASSERT_OK(path);
  auto schema = ReadParquetSchema(DefaultFileSystem(), *path);
  ASSERT_OK(schema);
  for (const char* name : {"observation.left_hand_pose", "observation.right_hand_pose"}) {
    const int index = (*schema)->GetFieldIndex(name);
    ASSERT_NE(index, -1) << name;
    EXPECT_TRUE((*schema)->field(index)->type()->Equals(arrow::fixed_size_list(arrow::float32(), 63)));
  }
}

// Multi-device §8.1.3 and §8.2.4: 0 is "no stamp"; an episode none of whose stamps is set
// has no _ns column (scalar or trajectory), and one set stamp keeps the column whole.
TEST_F(EpisodeDataTest, StampColumnsWithoutAStampAreNotWritten) {
  for (int64_t group_rows : {2, 64}) {  // the rewrite of many segments, and of one
    EpisodeData data = Make(group_rows);
    for (int64_t i = 0; i < 5; ++i) {
      FrameRow r = Row(i, false);
      r.SetFixed("observation.gripper_state", {1, 2, 3});
      r.SetScalar("observation.gripper_state_ns", 0);
      r.SetScalar("observation.gripper_left_force_ns", i == 3 ? 777 : 0);
      r.AddSlamPoint("observation.slam_trajectory", {0.1 * i, 1, 2, 3, 0, 0, 0, 1}, 0);
      r.AddSlamPoint("observation.ego_slam_trajectory", {0.1 * i, 1, 2, 3, 0, 0, 0, 1}, i == 4 ? 99 : 0);
      ASSERT_OK(data.Append(r));
    }
    auto path = data.Finish();
    ASSERT_OK(path);
    auto table = ReadParquetFile(DefaultFileSystem(), *path);
    ASSERT_OK(table);
    const arrow::Table& t = **table;
    EXPECT_EQ(t.num_rows(), 5);
    EXPECT_EQ(t.GetColumnByName("observation.gripper_state_ns"), nullptr) << "group_rows " << group_rows;
    EXPECT_EQ(t.GetColumnByName("observation.slam_trajectory_ns"), nullptr) << "group_rows " << group_rows;
    ASSERT_NE(t.GetColumnByName("observation.slam_trajectory"), nullptr);
    auto force_ns = t.GetColumnByName("observation.gripper_left_force_ns");
    ASSERT_NE(force_ns, nullptr);
    EXPECT_EQ(std::static_pointer_cast<arrow::Int64Scalar>(*force_ns->GetScalar(3))->value, 777);
    EXPECT_EQ(std::static_pointer_cast<arrow::Int64Scalar>(*force_ns->GetScalar(2))->value, 0);
    auto ego_ns = t.GetColumnByName("observation.ego_slam_trajectory_ns");
    ASSERT_NE(ego_ns, nullptr);
    auto last = std::static_pointer_cast<arrow::ListScalar>(*ego_ns->GetScalar(4));
    EXPECT_EQ(std::static_pointer_cast<arrow::Int64Scalar>(*last->value->GetScalar(0))->value, 99);
    for (const auto& [name, family] : data.Columns()) EXPECT_NE(name, "observation.gripper_state_ns");
  }
}

}  // namespace
}  // namespace reel::internal
