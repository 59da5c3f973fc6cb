#include "interop/feature_stats.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include "testing/arrow_builders.h"
#include "testing/status_matchers.h"

namespace reel::internal {
namespace {

TEST(FeatureStats, ColumnStatsMatchNumpy) {
  // numpy: x = [4, 1, 3, 2, 10]; np.quantile(x, [.01,.1,.5,.9,.99]) = [1.04, 1.4, 3, 7.6, 9.76]
  auto column = reel::testing::Doubles({4, 1, 3, 2, 10});
  auto s = ColumnStats(*column);
  ASSERT_OK(s);
  EXPECT_EQ(s->count, 5);
  EXPECT_DOUBLE_EQ(s->min[0], 1);
  EXPECT_DOUBLE_EQ(s->max[0], 10);
  EXPECT_DOUBLE_EQ(s->mean[0], 4);
  EXPECT_DOUBLE_EQ(s->std[0], std::sqrt(10.0));  // population std
  const double want[] = {1.04, 1.4, 3, 7.6, 9.76};
  for (int q = 0; q < 5; ++q) EXPECT_NEAR(s->quantiles[q][0], want[q], 1e-12) << q;
}

TEST(FeatureStats, ImageSampleIndicesFollowLeRobot) {
  // n < 100: every frame; n = 1000: 177 samples; n = 20000: 1681.
  EXPECT_EQ(ImageSampleIndices(5), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  auto thousand = ImageSampleIndices(1000);
  EXPECT_EQ(thousand.size(), 177u);
  EXPECT_EQ(thousand.front(), 0);
  EXPECT_EQ(thousand.back(), 999);
  EXPECT_EQ(ImageSampleIndices(20000).size(), 1681u);
}

TEST(FeatureStats, ImageStatsPerChannelInUnitRange) {
  // Two 1x1 frames: (0, 255, 51) and (255, 255, 51).
  std::vector<uint8_t> frames = {0, 255, 51, 255, 255, 51};
  FeatureStats s = ImageStats(frames, 2);
  EXPECT_EQ(s.count, 2);
  EXPECT_DOUBLE_EQ(s.mean[0], 0.5);
  EXPECT_DOUBLE_EQ(s.std[0], 0.5);
  EXPECT_DOUBLE_EQ(s.min[1], 1.0);
  EXPECT_DOUBLE_EQ(s.mean[2], 0.2);
  EXPECT_DOUBLE_EQ(s.quantiles[2][0], 0.5);  // median of {0, 1}
  auto j = FeatureStatsJson(s, true);
  EXPECT_EQ(j["mean"].dump(), "[[[0.5]],[[1.0]],[[0.2]]]");
  EXPECT_EQ(j["count"].dump(), "[2]");
}

TEST(FeatureStats, AggregateIsThePooledMoments) {
  auto a = ColumnStats(*reel::testing::Doubles({1, 2, 3})).value();
  auto b = ColumnStats(*reel::testing::Doubles({10, 20})).value();
  auto all = ColumnStats(*reel::testing::Doubles({1, 2, 3, 10, 20})).value();
  FeatureStats t = Aggregate({&a, &b});
  EXPECT_EQ(t.count, 5);
  EXPECT_NEAR(t.mean[0], all.mean[0], 1e-12);
  EXPECT_NEAR(t.std[0], all.std[0], 1e-12);
  EXPECT_EQ(t.min[0], 1);
  EXPECT_EQ(t.max[0], 20);
  EXPECT_NEAR(t.quantiles[2][0], (3 * 2.0 + 2 * 15.0) / 5, 1e-12);  // count-weighted medians
}

}  // namespace
}  // namespace reel::internal
