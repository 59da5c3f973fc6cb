// The export plan's aligned features (ExportMapping::streams): which pooled columns become
// which features, with which shapes, and what the options change.
#include <arrow/api.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "interop/aligned_features.h"
#include "interop/feature_map.h"
#include "testing/status_matchers.h"

namespace reel::internal {
namespace {

std::shared_ptr<arrow::Schema> PooledSchema() {
  return arrow::schema({
      arrow::field("frame_index", arrow::int64()),
      arrow::field("hardware_ns", arrow::int64()),
      arrow::field("observation.left_glove", arrow::fixed_size_list(arrow::float32(), 256)),
      arrow::field("observation.gripper_left_force_matrix_ns", arrow::int64()),
      arrow::field("imu_ts_ns", arrow::list(arrow::int64())),
      arrow::field("observation.imu", arrow::list(arrow::fixed_size_list(arrow::float32(), 6))),
      arrow::field("observation.slam_trajectory", arrow::list(arrow::float64())),
      arrow::field("observation.slam_trajectory_ns", arrow::list(arrow::int64())),
      arrow::field("observation.gripper_left_force_matrix", arrow::list(arrow::int16())),
  });
}

InfoJson Info() {
  InfoJson info;
  info.sensors = {"left_glove"};
  FeatureSpec fm;
  fm.dtype = "int16";
  fm.shape = {250, 250, 3};
  fm.encoding = "row_diff_quantized";
  fm.scale = 100;
  info.features.emplace_back("observation.gripper_left_force_matrix", fm);
  FeatureSpec slam;
  slam.dtype = "float64";
  slam.shape = {8};
  info.features.emplace_back("observation.slam_trajectory", slam);
  return info;
}

const ExportFeature* Find(const FramePlan& plan, const std::string& key) {
  auto it = std::find_if(plan.features.begin(), plan.features.end(), [&](const auto& f) { return f.key == key; });
  return it == plan.features.end() ? nullptr : &*it;
}

bool Has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

TEST(ExportAligned, ThePlanPairsStreamsByTime) {
  auto plan = PlanFeatures(Info(), *PooledSchema(), {}, ExportMapping{});
  ASSERT_OK(plan);
  const ExportFeature* fm = Find(*plan, "observation.gripper_left_force_matrix");
  ASSERT_NE(fm, nullptr);
  EXPECT_EQ(fm->source, FeatureSource::kAligned);
  EXPECT_EQ(fm->shape, (std::vector<int64_t>{250, 250}));  // fz by default
  EXPECT_EQ(FeatureArrowType(*fm)->ToString(),
            "fixed_size_list<item: fixed_size_list<item: float>[250]>[250]");
  ASSERT_NE(Find(*plan, "observation.gripper_left_force_matrix_valid"), nullptr);
  const ExportFeature* imu = Find(*plan, "observation.imu");
  ASSERT_NE(imu, nullptr);
  EXPECT_EQ(imu->shape, (std::vector<int64_t>{16, 6}));
  ASSERT_NE(Find(*plan, "observation.imu_mask"), nullptr);
  EXPECT_EQ(Find(*plan, "imu_ts_ns"), nullptr);
  EXPECT_EQ(Find(*plan, "observation.slam_trajectory_ns"), nullptr);
  EXPECT_EQ(Find(*plan, "observation.slam_trajectory")->dtype, "float64");
  EXPECT_EQ(Find(*plan, "observation.left_glove")->aligned, AlignedKind::kGlove);
  // Every pooled list column and the raw glove stay in the sidecar for import.
  for (const char* c : {"observation.left_glove", "imu_ts_ns", "observation.imu", "observation.slam_trajectory",
                        "observation.slam_trajectory_ns", "observation.gripper_left_force_matrix"})
    EXPECT_TRUE(Has(plan->sidecar, c)) << c;
}

TEST(ExportAligned, OptionsChangeThePlan) {
  ExportMapping m;
  m.streams.force_matrix = ForceMatrixFeature::kFull;
  m.streams.imu_window = 4;
  m.streams.canonical_gloves = false;
  auto plan = PlanFeatures(Info(), *PooledSchema(), {}, m);
  ASSERT_OK(plan);
  EXPECT_EQ(Find(*plan, "observation.gripper_left_force_matrix")->shape, (std::vector<int64_t>{250, 250, 3}));
  EXPECT_EQ(Find(*plan, "observation.imu")->shape, (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(Find(*plan, "observation.left_glove")->source, FeatureSource::kColumn);
  m.streams.align = false;  // the row mapping
  plan = PlanFeatures(Info(), *PooledSchema(), {}, m);
  ASSERT_OK(plan);
  EXPECT_EQ(Find(*plan, "observation.gripper_left_force_matrix"), nullptr);
  EXPECT_EQ(Find(*plan, "observation.imu")->source, FeatureSource::kLast);
  EXPECT_EQ(Find(*plan, "imu_ts_ns")->source, FeatureSource::kLast);
}

TEST(ExportAligned, NamesAndTolerance) {
  EXPECT_EQ(*ParseForceMatrixFeature("fz"), ForceMatrixFeature::kFz);
  EXPECT_EQ(*ParseForceMatrixFeature("full"), ForceMatrixFeature::kFull);
  EXPECT_EQ(*ParseForceMatrixFeature("none"), ForceMatrixFeature::kNone);
  EXPECT_FALSE(ParseForceMatrixFeature("xyz").ok());
  EXPECT_EQ(*ParseExportFormat("flat"), ExportFormat::kFlat);
  StreamFeatures s;
  EXPECT_EQ(ToleranceNs(s, 30.0, 0.5), 16'666'667);
  EXPECT_EQ(ToleranceNs(s, 30.0, 1.0), 33'333'333);
  s.tolerance_s = 0.004;
  EXPECT_EQ(ToleranceNs(s, 30.0, 0.5), 4'000'000);
}

}  // namespace
}  // namespace reel::internal
