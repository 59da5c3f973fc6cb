// IMU samples (§7.2), SLAM trajectories (multi-device §4.6/§5.3) and _ns pairing (§8.2.4).
#include <arrow/api.h>
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "reel/decode.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

arrow::MemoryPool* Pool() { return arrow::default_memory_pool(); }

template <typename Builder, typename T>
std::shared_ptr<arrow::Array> Lists(const std::vector<std::vector<T>>& rows) {
  auto values = std::make_shared<Builder>();
  arrow::ListBuilder list(Pool(), values);
  for (const auto& row : rows) {
    EXPECT_OK(list.Append());
    EXPECT_OK(values->AppendValues(row));
  }
  std::shared_ptr<arrow::Array> out;
  EXPECT_OK(list.Finish(&out));
  return out;
}

using I64Rows = std::vector<std::vector<int64_t>>;
using F64Rows = std::vector<std::vector<double>>;

// list<fixed_size_list<float32>[width]>; rows[r] is the number of samples of row r,
// sample s (counted over the whole array from `first`) holds s*10 + 0..width-1.
std::shared_ptr<arrow::Array> ImuArray(const std::vector<int>& rows, int first = 0, int width = 6) {
  auto floats = std::make_shared<arrow::FloatBuilder>();
  auto samples = std::make_shared<arrow::FixedSizeListBuilder>(Pool(), floats, width);
  arrow::ListBuilder list(Pool(), samples);
  int s = first;
  for (int n : rows) {
    EXPECT_OK(list.Append());
    for (int k = 0; k < n; ++k, ++s) {
      EXPECT_OK(samples->Append());
      for (int c = 0; c < width; ++c) EXPECT_TRUE(floats->Append(static_cast<float>(s * 10 + c)).ok());
    }
  }
  std::shared_ptr<arrow::Array> out;
  EXPECT_OK(list.Finish(&out));
  return out;
}

TEST(DecodeImu, RowsOfZeroOneAndThreeSamples) {
  // Two chunks for the samples, one for the stamps: rows are addressed globally.
  arrow::ChunkedArray imu({ImuArray({0, 1}), ImuArray({3}, /*first=*/1)});
  arrow::ChunkedArray ts(Lists<arrow::Int64Builder>(I64Rows{{}, {100}, {200, 201, 202}}));
  auto r = DecodeImu(imu, &ts);
  ASSERT_OK(r);
  EXPECT_EQ(r->row_offsets, (std::vector<int64_t>{0, 0, 1, 4}));
  EXPECT_EQ(r->ts_ns, (std::vector<int64_t>{100, 200, 201, 202}));
  ASSERT_EQ(r->values.size(), 4u);
  EXPECT_EQ(r->values[0], (std::array<float, 6>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(r->values[1], (std::array<float, 6>{10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(r->values[3], (std::array<float, 6>{30, 31, 32, 33, 34, 35}));
}

TEST(DecodeImu, WithoutStampColumn) {
  arrow::ChunkedArray imu(ImuArray({2, 0, 1}));
  auto r = DecodeImu(imu, nullptr);
  ASSERT_OK(r);
  EXPECT_EQ(r->row_offsets, (std::vector<int64_t>{0, 2, 2, 3}));
  EXPECT_TRUE(r->ts_ns.empty());
  ASSERT_EQ(r->values.size(), 3u);
  EXPECT_EQ(r->values[2][5], 25.0f);
}

TEST(DecodeImu, StampCountMismatchIsInvalid) {
  arrow::ChunkedArray imu(ImuArray({0, 1, 3}));
  arrow::ChunkedArray two_stamps(Lists<arrow::Int64Builder>(I64Rows{{}, {100}, {200, 201}}));
  auto a = DecodeImu(imu, &two_stamps);
  EXPECT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kInvalid);
  EXPECT_THAT(a.status().message(), ::testing::HasSubstr("row 2")) << a.status().message();

  arrow::ChunkedArray fewer_rows(Lists<arrow::Int64Builder>(I64Rows{{}, {100}}));
  auto b = DecodeImu(imu, &fewer_rows);
  EXPECT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalid);
}

TEST(DecodeImu, WrongInnerWidthIsInvalid) {
  arrow::ChunkedArray imu(ImuArray({1}, 0, /*width=*/3));
  auto r = DecodeImu(imu, nullptr);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalid);
}

// ---- SLAM ---------------------------------------------------------------------

const std::vector<double> kP0 = {1.5, 0.1, 0.2, 0.3, 0.0, 0.0, 0.0, 1.0};
const std::vector<double> kP1 = {1.6, 1.1, 1.2, 1.3, 0.5, 0.5, 0.5, 0.5};
const std::vector<double> kP2 = {1.7, 2.1, 2.2, 2.3, 0.0, 1.0, 0.0, 0.0};

std::vector<double> Concat(std::vector<double> a, const std::vector<double>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(DecodeSlam, ZeroOneAndTwoPointsInLockstep) {
  arrow::ChunkedArray points({Lists<arrow::DoubleBuilder>(F64Rows{{}, kP0}),
                              Lists<arrow::DoubleBuilder>(F64Rows{Concat(kP1, kP2)})});
  arrow::ChunkedArray ns(Lists<arrow::Int64Builder>(I64Rows{{}, {5000}, {0, 7000}}));
  auto r = DecodeSlam(points, &ns);
  ASSERT_OK(r);
  ASSERT_EQ(r->size(), 3u);
  const SlamPoint& p = (*r)[0];
  EXPECT_EQ(std::vector<double>({p.t, p.x, p.y, p.z, p.qx, p.qy, p.qz, p.qw}), kP0);
  EXPECT_EQ(p.ns, 5000);
  EXPECT_EQ(p.row, 1);
  EXPECT_EQ((*r)[1].t, 1.6);
  EXPECT_EQ((*r)[1].qw, 0.5);
  EXPECT_EQ((*r)[1].ns, 0);  // a zero stamp stays 0 ("no stamp")
  EXPECT_EQ((*r)[1].row, 2);
  EXPECT_EQ((*r)[2].x, 2.1);
  EXPECT_EQ((*r)[2].qy, 1.0);
  EXPECT_EQ((*r)[2].ns, 7000);
  EXPECT_EQ((*r)[2].row, 2);
}

TEST(DecodeSlam, WithoutStampColumn) {
  arrow::ChunkedArray points(Lists<arrow::DoubleBuilder>(F64Rows{kP0, {}, kP1}));
  auto r = DecodeSlam(points, nullptr);
  ASSERT_OK(r);
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].row, 0);
  EXPECT_EQ((*r)[0].ns, 0);
  EXPECT_EQ((*r)[1].row, 2);
  EXPECT_EQ((*r)[1].z, 1.3);
}

TEST(DecodeSlam, RowNotMultipleOfEightIsInvalid) {
  std::vector<double> seven(kP0.begin(), kP0.begin() + 7);
  arrow::ChunkedArray points(Lists<arrow::DoubleBuilder>(F64Rows{kP0, seven}));
  auto r = DecodeSlam(points, nullptr);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalid);
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("row 1")) << r.status().message();
}

TEST(DecodeSlam, StampLengthMismatchIsInvalid) {
  arrow::ChunkedArray points(Lists<arrow::DoubleBuilder>(F64Rows{{}, kP0, Concat(kP1, kP2)}));
  for (const I64Rows& rows : {I64Rows{{}, {5000}, {7000}}, I64Rows{{}, {}, {1, 2}},
                              I64Rows{{9}, {5000}, {1, 2}}, I64Rows{{}, {5000}}}) {
    arrow::ChunkedArray ns(Lists<arrow::Int64Builder>(rows));
    auto r = DecodeSlam(points, &ns);
    EXPECT_FALSE(r.ok()) << ns.ToString();
    EXPECT_EQ(r.status().code(), StatusCode::kInvalid) << ns.ToString();
  }
}

TEST(ResolveSlamSpec, EpisodeRowThenFeatureThenSlamFramesThenGripperFrameThenTheOldFrame) {
  InfoJson info;
  EpisodeRow row;
  row.episode_index = 3;
  const std::string col = "observation.slam_trajectory";
  auto s = ResolveSlamSpec(col, row, info);
  ASSERT_OK(s);
  EXPECT_EQ(s->frame, "right_forward_up");
  EXPECT_EQ(s->source, SlamSpecSource::kOldFrame);
  info.gripper_slam_frame = "down_left_forward";
  EXPECT_EQ(ResolveSlamSpec(col, row, info)->source, SlamSpecSource::kGripperSlamFrame);
  EXPECT_EQ(ResolveSlamSpec("observation.ego_slam_trajectory", row, info)->frame, "right_forward_up");
  info.slam_frames.emplace_back(col, "map_frame");
  EXPECT_EQ(ResolveSlamSpec(col, row, info)->frame, "map_frame");
  FeatureSpec f;
  f.frame = "feature_frame";
  f.frame_axes_json = R"({"+X":"down"})";
  info.features.emplace_back(col, f);
  s = ResolveSlamSpec(col, row, info);
  EXPECT_EQ(s->frame, "feature_frame");
  EXPECT_EQ(s->frame_axes_json, R"({"+X":"down"})");
  row.slam_specs = R"({"observation.slam_trajectory": {"frame": "ego_cam_optical", "time": {"t": "sensor_s"}}})";
  s = ResolveSlamSpec(col, row, info);
  EXPECT_EQ(s->frame, "ego_cam_optical");
  EXPECT_EQ(s->source, SlamSpecSource::kEpisodeRow);
  EXPECT_EQ(s->time_json, R"({"t":"sensor_s"})");
  EXPECT_EQ(s->frame_axes_json, "{}");
  row.slam_specs = "[1]";
  EXPECT_FALSE(ResolveSlamSpec(col, row, info).ok());
}

}  // namespace
}  // namespace reel
