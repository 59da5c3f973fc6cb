// Task-level merge of stats.json blocks and info.json (contract §3, §4; multi-device §6.7;
// contract-decisions.md). Expected values are computed by hand or by an independent
// two-pass float64 formula, never by the accumulator under test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "reel/merge.h"
#include "reel/metadata.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

using OJson = nlohmann::ordered_json;

std::vector<std::string> Keys(const OJson& obj) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : obj.items()) keys.push_back(k);
  return keys;
}

template <typename V>
std::vector<std::string> Keys(const OrderedMap<V>& map) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : map) keys.push_back(k);
  return keys;
}

void ExpectNearRel(const std::vector<double>& got, const std::vector<double>& want,
                   const char* what, double rel = 1e-12) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], rel * std::max(1.0, std::fabs(want[i]))) << what << "[" << i << "]";
}

void ExpectBlockNear(const StatsBlock& got, const StatsBlock& want, double rel = 1e-12) {
  ASSERT_TRUE(got.count.has_value());
  ASSERT_TRUE(want.count.has_value());
  EXPECT_EQ(*got.count, *want.count);
  ExpectNearRel(got.mean, want.mean, "mean", rel);
  ExpectNearRel(got.std, want.std, "std", rel);
  EXPECT_EQ(got.min, want.min);
  EXPECT_EQ(got.max, want.max);
}

// Independent reference: two-pass population statistics in float64.
StatsBlock TwoPassBlock(const std::vector<float>& values, int64_t dim) {
  const int64_t rows = static_cast<int64_t>(values.size()) / dim;
  StatsBlock b;
  b.count = rows;
  for (int64_t j = 0; j < dim; ++j) {
    double sum = 0, lo = values[j], hi = values[j];
    for (int64_t r = 0; r < rows; ++r) {
      const double v = values[r * dim + j];
      sum += v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    const double mean = sum / rows;
    double sq = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const double d = values[r * dim + j] - mean;
      sq += d * d;
    }
    b.mean.push_back(mean);
    b.std.push_back(std::sqrt(sq / rows));
    b.min.push_back(lo);
    b.max.push_back(hi);
  }
  b.shape = {dim};
  return b;
}

// Deterministic pseudo-random float32 rows: column j centred near j*3-2 with spread ~j+1.
std::vector<float> Rows(int64_t rows, int64_t dim, uint32_t seed) {
  std::vector<float> v;
  uint32_t s = seed;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < dim; ++j) {
      s = s * 1664525u + 1013904223u;
      const double u = (s >> 8) / double(1u << 24) - 0.5;  // [-0.5, 0.5)
      v.push_back(static_cast<float>(j * 3.0 - 2.0 + u * 2.0 * (j + 1)));
    }
  }
  return v;
}

StatsBlock Block(int64_t count, std::vector<double> mean, std::vector<double> std,
                 std::vector<double> min, std::vector<double> max) {
  StatsBlock b;
  b.count = count;
  b.shape = {static_cast<int64_t>(mean.size())};
  b.mean = std::move(mean);
  b.std = std::move(std);
  b.min = std::move(min);
  b.max = std::move(max);
  return b;
}

// ---- blocks -----------------------------------------------------------------------

TEST(BlockFromValues, PopulationStdOfSmallTwoDimExample) {
  // Column 0: 1, 2, 3, 4 -> mean 2.5, population std sqrt(1.25) (sample std would be sqrt(5/3)).
  // Column 1: -2, 0, 0, 6 -> mean 1, E[x^2] = 40/4 = 10, std sqrt(10 - 1) = 3.
  const std::vector<float> v = {1, -2, 2, 0, 3, 0, 4, 6};
  StatsBlock b = BlockFromValues(v.data(), 4, 2);
  ASSERT_TRUE(b.count.has_value());
  EXPECT_EQ(*b.count, 4);
  EXPECT_EQ(b.shape, (std::vector<int64_t>{2}));
  EXPECT_DOUBLE_EQ(b.mean[0], 2.5);
  EXPECT_DOUBLE_EQ(b.mean[1], 1.0);
  EXPECT_DOUBLE_EQ(b.std[0], std::sqrt(1.25));
  EXPECT_DOUBLE_EQ(b.std[1], 3.0);
  EXPECT_EQ(b.min, (std::vector<double>{1, -2}));
  EXPECT_EQ(b.max, (std::vector<double>{4, 6}));
}

TEST(BlockFromValues, ZeroFilledRowsAreCounted) {
  // Rows [2,4], [0,0] (a glove row without a sample), [4,8]: count 3 and the zeros lower the
  // mean to [2,4] (it would be [3,6] without them); min becomes 0.
  // Column 0: E[x^2] = 20/3, var = 20/3 - 4 = 8/3. Column 1: E[x^2] = 80/3, var = 80/3 - 16 = 32/3.
  const std::vector<float> v = {2, 4, 0, 0, 4, 8};
  StatsBlock b = BlockFromValues(v.data(), 3, 2);
  ASSERT_TRUE(b.count.has_value());
  EXPECT_EQ(*b.count, 3);
  EXPECT_DOUBLE_EQ(b.mean[0], 2.0);
  EXPECT_DOUBLE_EQ(b.mean[1], 4.0);
  EXPECT_DOUBLE_EQ(b.std[0], std::sqrt(8.0 / 3.0));
  EXPECT_DOUBLE_EQ(b.std[1], std::sqrt(32.0 / 3.0));
  EXPECT_EQ(b.min, (std::vector<double>{0, 0}));
  EXPECT_EQ(b.max, (std::vector<double>{4, 8}));
}

TEST(BlockFromValues, NoRowsGivesTheEmptyBlock) {
  StatsBlock b = BlockFromValues(nullptr, 0, 3);
  ASSERT_TRUE(b.count.has_value());
  EXPECT_EQ(*b.count, 0);
  EXPECT_EQ(b.mean, (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(b.std, (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(b.min, (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(b.max, (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(b.shape, (std::vector<int64_t>{3}));
}

TEST(BlockFromValues, MatchesTwoPassReference) {
  const std::vector<float> v = Rows(200, 6, 7);
  ExpectBlockNear(BlockFromValues(v.data(), 200, 6), TwoPassBlock(v, 6));
}

TEST(EmptyBlock, PlaceholdersAndActionBlock) {
  StatsBlock e = EmptyBlock(2);
  ASSERT_TRUE(e.count.has_value());
  EXPECT_EQ(*e.count, 0);
  EXPECT_EQ(e.mean, (std::vector<double>{0, 0}));
  EXPECT_EQ(e.std, (std::vector<double>{1, 1}));
  EXPECT_EQ(e.min, (std::vector<double>{0, 0}));
  EXPECT_EQ(e.max, (std::vector<double>{0, 0}));

  StatsBlock a = ActionPlaceholderBlock();
  ASSERT_TRUE(a.count.has_value());
  EXPECT_EQ(*a.count, 0);
  EXPECT_EQ(a.mean, (std::vector<double>{0.0}));
  EXPECT_EQ(a.std, (std::vector<double>{1.0}));
  EXPECT_EQ(a.min, (std::vector<double>{0.0}));
  EXPECT_EQ(a.max, (std::vector<double>{0.0}));
}

TEST(MergeBlocks, EqualsStatisticsOfTheConcatenation) {
  const std::vector<float> first = Rows(50, 3, 1);
  const std::vector<float> second = Rows(70, 3, 2);
  std::vector<float> both = first;
  both.insert(both.end(), second.begin(), second.end());

  auto merged = MergeBlocks(BlockFromValues(first.data(), 50, 3),
                            BlockFromValues(second.data(), 70, 3));
  ASSERT_OK(merged);
  ExpectBlockNear(*merged, TwoPassBlock(both, 3));
  ExpectBlockNear(*merged, BlockFromValues(both.data(), 120, 3));
  EXPECT_EQ(merged->shape, (std::vector<int64_t>{3}));
}

TEST(MergeBlocks, ThreeEpisodesInSequenceMatchTheWholeTask) {
  // The file is the accumulator: merge after every episode, as a recorder does.
  const std::vector<float> e1 = Rows(10, 2, 11), e2 = Rows(1, 2, 12), e3 = Rows(33, 2, 13);
  std::vector<float> all = e1;
  all.insert(all.end(), e2.begin(), e2.end());
  all.insert(all.end(), e3.begin(), e3.end());
  StatsBlock acc = EmptyBlock(2);
  for (const auto* e : {&e1, &e2, &e3}) {
    auto r = MergeBlocks(acc, BlockFromValues(e->data(), static_cast<int64_t>(e->size()) / 2, 2));
    ASSERT_OK(r);
    acc = *r;
  }
  ExpectBlockNear(acc, TwoPassBlock(all, 2));
}

TEST(MergeBlocks, EmptyBlockContributesNothing) {
  // min is positive and max negative: the empty block's 0 placeholders must not leak in.
  StatsBlock b = Block(4, {2.5, -3}, {0.5, 1}, {1, -5}, {4, -1});
  for (bool empty_first : {true, false}) {
    auto r = empty_first ? MergeBlocks(EmptyBlock(2), b) : MergeBlocks(b, EmptyBlock(2));
    ASSERT_OK(r);
    EXPECT_EQ(*r->count, 4);
    EXPECT_EQ(r->mean, b.mean);
    EXPECT_EQ(r->std, b.std);
    EXPECT_EQ(r->min, b.min);
    EXPECT_EQ(r->max, b.max);
  }
  auto both = MergeBlocks(EmptyBlock(2), EmptyBlock(2));
  ASSERT_OK(both);
  EXPECT_EQ(*both->count, 0);
  EXPECT_EQ(both->mean, (std::vector<double>{0, 0}));
  EXPECT_EQ(both->std, (std::vector<double>{1, 1}));
  EXPECT_EQ(both->min, (std::vector<double>{0, 0}));
  EXPECT_EQ(both->max, (std::vector<double>{0, 0}));
}

TEST(MergeBlocks, ByHandValues) {
  // a = {0, 2}: mean 1, std 1. b = {4}: mean 4, std 0. Concatenation {0, 2, 4}: mean 2,
  // E[x^2] = 20/3, std sqrt(20/3 - 4) = sqrt(8/3).
  auto r = MergeBlocks(Block(2, {1}, {1}, {0}, {2}), Block(1, {4}, {0}, {4}, {4}));
  ASSERT_OK(r);
  EXPECT_EQ(*r->count, 3);
  EXPECT_DOUBLE_EQ(r->mean[0], 2.0);
  EXPECT_NEAR(r->std[0], std::sqrt(8.0 / 3.0), 1e-12);
  EXPECT_EQ(r->min[0], 0);
  EXPECT_EQ(r->max[0], 4);
}

TEST(MergeBlocks, DimensionMismatchIsInvalidNamingBothDims) {
  auto r = MergeBlocks(Block(1, {1, 2}, {0, 0}, {1, 2}, {1, 2}),
                       Block(1, {1, 2, 3}, {0, 0, 0}, {1, 2, 3}, {1, 2, 3}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalid);
  EXPECT_NE(r.status().message().find('2'), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find('3'), std::string::npos) << r.status().message();
  // An empty block of another (non-zero) dimension is still a schema conflict.
  EXPECT_EQ(MergeBlocks(EmptyBlock(6), Block(1, {1, 2}, {0, 0}, {1, 2}, {1, 2})).status().code(),
            StatusCode::kInvalid);
}

TEST(MergeBlocks, MissingCountIsInvalidNeedsRebuild) {
  StatsBlock legacy = Block(1, {1}, {0}, {1}, {1});
  legacy.count.reset();  // v1.1.0 block
  for (bool legacy_first : {true, false}) {
    StatsBlock ok = Block(3, {2}, {1}, {0}, {3});
    auto r = legacy_first ? MergeBlocks(legacy, ok) : MergeBlocks(ok, legacy);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalid);
    EXPECT_THAT(r.status().message(), ::testing::HasSubstr("rebuild")) << r.status().message();
    EXPECT_THAT(r.status().message(), ::testing::HasSubstr("count")) << r.status().message();
  }
  // Even against an empty block: the legacy block cannot be used as an accumulator.
  EXPECT_FALSE(MergeBlocks(EmptyBlock(1), legacy).ok());
}

TEST(MergeBlocks, InconsistentVectorLengthsAreInvalid) {
  StatsBlock bad = Block(2, {1, 2}, {0}, {1, 2}, {1, 2});
  EXPECT_EQ(MergeBlocks(bad, Block(1, {1, 2}, {0, 0}, {1, 2}, {1, 2})).status().code(),
            StatusCode::kInvalid);
}

// ---- stats.json -------------------------------------------------------------------

constexpr const char* kTaskStats = R"({
  "observation.left_glove": {"count": 2, "mean": [1, 0], "std": [1, 2], "min": [0, -2], "max": [2, 2]},
  "observation.legacy": {"mean": [0.5], "std": [1.0], "min": [0.0], "max": [1.0]},
  "action": {"count": 5, "mean": [3.0], "std": [2.0], "min": [1.0], "max": [9.0]}
})";

TEST(MergeStats, KeepsOrderAppendsNewBlocksAndForcesActionPlaceholder) {
  auto task = ParseStatsJson(kTaskStats, "meta/stats.json");
  ASSERT_OK(task);

  // Episode: one glove row [4, 2] and a new observation.imu block; an action block with
  // statistics that must not be taken.
  const std::vector<float> glove = {4, 2};
  const std::vector<float> imu = {1, 2, 3, 4, 5, 6, 3, 2, 1, 0, -1, -2};
  OrderedMap<StatsBlock> episode;
  episode.emplace_back("observation.imu", BlockFromValues(imu.data(), 2, 6));
  episode.emplace_back("action", Block(9, {7}, {7}, {7}, {7}));
  episode.emplace_back("observation.left_glove", BlockFromValues(glove.data(), 1, 2));

  auto merged = MergeStats(*task, episode);
  ASSERT_OK(merged);
  EXPECT_EQ(Keys(merged->blocks), (std::vector<std::string>{"observation.left_glove",
                                                            "observation.legacy", "action",
                                                            "observation.imu"}));

  // Glove: task {0,2} x {-2,2} plus {4} x {2}. Column 0 {0,2,4}: mean 2, std sqrt(8/3).
  // Column 1 {-2,2,2}: mean 2/3, E[x^2] = 4, std sqrt(4 - 4/9) = sqrt(32)/3.
  const StatsBlock& g = merged->blocks[0].second;
  EXPECT_EQ(*g.count, 3);
  ExpectNearRel(g.mean, {2.0, 2.0 / 3.0}, "glove mean");
  ExpectNearRel(g.std, {std::sqrt(8.0 / 3.0), std::sqrt(32.0) / 3.0}, "glove std");
  EXPECT_EQ(g.min, (std::vector<double>{0, -2}));
  EXPECT_EQ(g.max, (std::vector<double>{4, 2}));

  // An untouched legacy block stays as it was (the caller rebuilds it).
  EXPECT_FALSE(merged->blocks[1].second.count.has_value());
  EXPECT_EQ(merged->blocks[1].second.mean, (std::vector<double>{0.5}));

  const StatsBlock& a = merged->blocks[2].second;
  EXPECT_EQ(*a.count, 0);
  EXPECT_EQ(a.mean, (std::vector<double>{0.0}));
  EXPECT_EQ(a.std, (std::vector<double>{1.0}));
  EXPECT_EQ(a.min, (std::vector<double>{0.0}));
  EXPECT_EQ(a.max, (std::vector<double>{0.0}));

  const StatsBlock& i = merged->blocks[3].second;
  EXPECT_EQ(*i.count, 2);
  ExpectNearRel(i.mean, {2, 2, 2, 2, 2, 2}, "imu mean");
  ExpectNearRel(i.std, {1, 0, 1, 2, 3, 4}, "imu std");

  // Serialized: same block order, count first in every block that has one.
  OJson doc = OJson::parse(SerializeStatsJson(*merged));
  EXPECT_EQ(Keys(doc), Keys(merged->blocks));
  for (const char* name : {"observation.left_glove", "action", "observation.imu"}) {
    EXPECT_EQ(Keys(doc[name]), (std::vector<std::string>{"count", "mean", "std", "min", "max"}))
        << name;
  }
  EXPECT_EQ(doc["action"]["count"], 0);
  EXPECT_EQ(doc["observation.left_glove"]["count"], 3);
  EXPECT_EQ(doc["observation.imu"]["count"], 2);
}

TEST(MergeStats, ActionPlaceholderPresentEvenIfNeitherHadIt) {
  StatsJson fresh;
  const std::vector<float> imu = {1, 2, 3, 4, 5, 6};
  OrderedMap<StatsBlock> episode;
  episode.emplace_back("observation.imu", BlockFromValues(imu.data(), 1, 6));
  auto merged = MergeStats(fresh, episode);
  ASSERT_OK(merged);
  EXPECT_EQ(Keys(merged->blocks), (std::vector<std::string>{"observation.imu", "action"}));
  EXPECT_EQ(*merged->blocks[1].second.count, 0);

  OJson doc = OJson::parse(SerializeStatsJson(*merged));
  EXPECT_EQ(doc["action"], OJson::parse(R"({"count": 0, "mean": [0.0], "std": [1.0],
                                            "min": [0.0], "max": [0.0]})"));
  EXPECT_EQ(Keys(doc["observation.imu"]).front(), "count");
}

TEST(MergeStats, ErrorsNameTheBlock) {
  auto task = ParseStatsJson(kTaskStats, "meta/stats.json");
  ASSERT_OK(task);
  {
    OrderedMap<StatsBlock> episode;
    const std::vector<float> three = {1, 2, 3};
    episode.emplace_back("observation.left_glove", BlockFromValues(three.data(), 1, 3));
    auto r = MergeStats(*task, episode);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalid);
    EXPECT_THAT(r.status().message(), ::testing::HasSubstr("observation.left_glove"))
        << r.status().message();
  }
  {
    OrderedMap<StatsBlock> episode;
    episode.emplace_back("observation.legacy", Block(1, {1}, {0}, {1}, {1}));
    auto r = MergeStats(*task, episode);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalid);
    EXPECT_THAT(r.status().message(), ::testing::HasSubstr("observation.legacy"))
        << r.status().message();
    EXPECT_THAT(r.status().message(), ::testing::HasSubstr("rebuild")) << r.status().message();
  }
}

// ---- info.json --------------------------------------------------------------------

constexpr const char* kTaskInfo = R"json({
  "format": "pooled_episodes_v1",
  "chunks_size": 1000,
  "data_path": "data/chunk-{c:03d}/episode-{f:03d}.parquet",
  "video_path": "videos/chunk-{c:03d}/{image_key}/episode-{f:03d}.{ext}",
  "episodes_path": "meta/episodes/chunk-{c:03d}/episode-{f:03d}.parquet",
  "codebase_version": "v3.0",
  "app_version": "1.3.0",
  "fps": 30.0,
  "x_recorder_build": {"commit": "abc", "备注": "中文"},
  "video": true,
  "task_name": "示例任务",
  "features": {
    "observation.left_glove": {"dtype": "float32", "shape": [16, 16]},
    "observation.gripper_left_force_matrix": {"dtype": "int16", "shape": [250, 250, 3],
                                              "encoding": "row_diff_quantized", "scale": 10},
    "action": {"dtype": "float32", "shape": [1]}
  },
  "cameras": {"stereo_left": {"height": 800, "width": 1280}},
  "video_extensions": {"stereo_left": "mp4", "stereo_depth": "mkv"},
  "devices": [
    {"key": "s80m:1", "kind": "s80m", "name": "old head", "slots": ["stereo_left", "stereo_depth"]},
    {"key": "usbglove:2", "kind": "data_ble", "name": "glove", "slots": []}
  ],
  "device_names": {"stereo_left": "old head", "stereo_depth": "old head"},
  "sensors": ["left_glove", "right_glove"],
  "sensor_dim": 256,
  "created_at": 1790000000.0,
  "calibration": {"head_stereo": {"baseline": 0.095}},
  "total_episodes": 5,
  "zz_last": 7
})json";

InfoJson ParsedTask() {
  auto r = ParseInfoJson(kTaskInfo, "meta/info.json");
  EXPECT_OK(r);
  return r.ok() ? *r : InfoJson{};
}

FeatureSpec Feature(const char* dtype, std::vector<int64_t> shape) {
  FeatureSpec f;
  f.dtype = dtype;
  f.shape = std::move(shape);
  return f;
}

// What one committed episode declares.
InfoJson Episode() {
  InfoJson e;
  e.codebase_version = "v3.0";
  e.app_version = "1.4.0";
  e.fps = 15.0;
  e.video = true;
  e.task_name = "示例任务";
  e.created_at = 1790009999.0;
  e.features.emplace_back("observation.imu", Feature("float32", {6}));
  FeatureSpec fm = Feature("float32", {250, 250, 3});
  fm.encoding = "row_flat_raw";
  fm.scale = 1.0;
  e.features.emplace_back("observation.gripper_left_force_matrix", fm);
  e.cameras.emplace_back("gripper_rgb", CameraSpec{960, 1280, std::nullopt});
  e.cameras.emplace_back("stereo_left", CameraSpec{720, 1280, std::nullopt});
  e.video_extensions.emplace_back("stereo_depth", "mp4");
  e.video_extensions.emplace_back("gripper_rgb", "mp4");
  e.devices.push_back({"gripper:AA", "gripper", "夹爪", {"gripper_rgb"}});
  e.devices.push_back({"s80m:1", "s80m", "new head", {"stereo_left", "stereo_depth"}});
  e.device_names = {{"gripper_rgb", "夹爪"}, {"stereo_left", "new head"}};
  e.sensors = {"third_glove", "left_glove"};
  e.calibration_json = "{}";
  return e;
}

TEST(MergeInfo, UnionWithLatestWinning) {
  const InfoJson task = ParsedTask();
  const InfoJson m = MergeInfo(task, Episode(), 6);

  // Features: task order first, new keys appended, the episode's spec wins.
  EXPECT_EQ(Keys(m.features),
            (std::vector<std::string>{"observation.left_glove",
                                      "observation.gripper_left_force_matrix", "action",
                                      "observation.imu"}));
  const FeatureSpec* fm = m.Feature("observation.gripper_left_force_matrix");
  ASSERT_NE(fm, nullptr);
  EXPECT_EQ(fm->dtype, "float32");
  EXPECT_EQ(fm->encoding, "row_flat_raw");
  EXPECT_EQ(fm->scale, 1.0);
  EXPECT_EQ(m.Feature("observation.left_glove")->shape, (std::vector<int64_t>{16, 16}));

  EXPECT_EQ(Keys(m.cameras), (std::vector<std::string>{"stereo_left", "gripper_rgb"}));
  EXPECT_EQ(Lookup(m.cameras, "stereo_left")->height, 720);
  EXPECT_EQ(m.video_extensions,
            (OrderedMap<std::string>{{"stereo_left", "mp4"}, {"stereo_depth", "mp4"},
                                     {"gripper_rgb", "mp4"}}));
  EXPECT_EQ(m.device_names,
            (OrderedMap<std::string>{{"stereo_left", "new head"}, {"stereo_depth", "old head"},
                                     {"gripper_rgb", "夹爪"}}));

  // Devices by key: the episode's entry replaces in place, new ones appended.
  ASSERT_EQ(m.devices.size(), 3u);
  EXPECT_EQ(m.devices[0].key, "s80m:1");
  EXPECT_EQ(m.devices[0].name, "new head");
  EXPECT_EQ(m.devices[1].key, "usbglove:2");
  EXPECT_EQ(m.devices[2].key, "gripper:AA");

  // Sensors: union in first-seen order.
  EXPECT_EQ(m.sensors, (std::vector<std::string>{"left_glove", "right_glove", "third_glove"}));

  // Episode's: fps, app_version. Task's: format, chunks_size, paths, created_at.
  EXPECT_EQ(m.fps, 15.0);
  EXPECT_EQ(m.app_version, "1.4.0");
  EXPECT_EQ(m.format, "pooled_episodes_v1");
  EXPECT_EQ(m.chunks_size, 1000);
  EXPECT_EQ(m.data_path, task.data_path);
  ASSERT_TRUE(m.created_at.has_value());
  EXPECT_EQ(*m.created_at, 1790000000.0);

  // The episode declared no calibration ("{}"): the task's stays.
  EXPECT_EQ(OJson::parse(m.calibration_json), OJson::parse(R"({"head_stereo": {"baseline": 0.095}})"));
  EXPECT_EQ(m.total_episodes, 6);
}

TEST(MergeInfo, ForceMatrixScaleThenFloat32ShowsTheLatestWhenSerialized) {
  const InfoJson m = MergeInfo(ParsedTask(), Episode(), 6);
  auto text = SerializeInfoJson(m);
  ASSERT_OK(text);
  OJson doc = OJson::parse(*text);
  const OJson& fm = doc["features"]["observation.gripper_left_force_matrix"];
  EXPECT_EQ(fm["dtype"], "float32");
  EXPECT_EQ(fm["encoding"], "row_flat_raw");
  EXPECT_EQ(fm["scale"], 1.0);
  EXPECT_EQ(doc["fps"], 15.0);
  EXPECT_EQ(doc["created_at"], 1790000000.0);
}

TEST(MergeInfo, CalibrationIsTheLatestWhenTheEpisodeHasOne) {
  InfoJson e = Episode();
  e.calibration_json = R"({"head_stereo": {"baseline": 0.1}, "d435_rgb_calibration": {}})";
  const InfoJson m = MergeInfo(ParsedTask(), e, 6);
  EXPECT_EQ(m.calibration_json, e.calibration_json);
  e.calibration_json = "";
  EXPECT_EQ(OJson::parse(MergeInfo(ParsedTask(), e, 6).calibration_json),
            OJson::parse(R"({"head_stereo": {"baseline": 0.095}})"));
}

TEST(MergeInfo, TotalEpisodesIsMonotone) {
  const InfoJson task = ParsedTask();  // total_episodes 5
  EXPECT_EQ(MergeInfo(task, Episode(), 3).total_episodes, 5);  // re-recorded / recycled N
  EXPECT_EQ(MergeInfo(task, Episode(), 5).total_episodes, 5);
  EXPECT_EQ(MergeInfo(task, Episode(), 7).total_episodes, 7);
}

TEST(MergeInfo, CreatedAtSetOnceForAFreshTask) {
  InfoJson fresh;  // no info.json on disk yet
  const InfoJson first = MergeInfo(fresh, Episode(), 1);
  ASSERT_TRUE(first.created_at.has_value());
  EXPECT_EQ(*first.created_at, 1790009999.0);
  EXPECT_EQ(first.total_episodes, 1);
  EXPECT_EQ(first.sensors, (std::vector<std::string>{"third_glove", "left_glove"}));

  InfoJson later = Episode();
  later.created_at = 1790020000.0;
  const InfoJson second = MergeInfo(first, later, 2);
  EXPECT_EQ(*second.created_at, 1790009999.0);
  EXPECT_EQ(second.total_episodes, 2);
  auto text = SerializeInfoJson(second);
  ASSERT_OK(text);
  EXPECT_EQ(OJson::parse(*text)["format"], "pooled_episodes_v1");
}

TEST(MergeInfo, UnknownTopLevelKeysOfTheTaskSurviveInOrder) {
  const InfoJson m = MergeInfo(ParsedTask(), Episode(), 6);
  auto text = SerializeInfoJson(m);
  ASSERT_OK(text);
  EXPECT_THAT(*text, ::testing::Not(::testing::HasSubstr("\\u")));
  OJson out = OJson::parse(*text);
  OJson in = OJson::parse(kTaskInfo);
  EXPECT_EQ(Keys(out), Keys(in));
  EXPECT_EQ(out["x_recorder_build"], in["x_recorder_build"]);
  EXPECT_EQ(out["zz_last"], 7);
  EXPECT_EQ(out["total_episodes"], 6);
  EXPECT_EQ(out["sensors"], OJson::parse(R"(["left_glove", "right_glove", "third_glove"])"));
  EXPECT_EQ(Keys(out["features"]).back(), "observation.imu");
  EXPECT_EQ(m.present_keys, ParsedTask().present_keys);
}

TEST(MergeInfo, GripperSlamFrameOnlyWhileAGripperTrajectoryExists) {
  auto with = [](std::vector<std::string> columns, std::optional<std::string> frame) {
    InfoJson t = ParsedTask();
    for (const auto& c : columns) t.features.emplace_back(c, Feature("float64", {8}));
    t.gripper_slam_frame = std::move(frame);
    return t;
  };
  const InfoJson episode = Episode();  // declares no trajectory and no gripper_slam_frame

  // Only an ego trajectory: the gripper frame is dropped (and absent from the file).
  InfoJson ego_only = MergeInfo(with({"observation.ego_slam_trajectory"}, "down_left_forward"),
                                episode, 6);
  EXPECT_FALSE(ego_only.gripper_slam_frame.has_value());
  auto text = SerializeInfoJson(ego_only);
  ASSERT_OK(text);
  EXPECT_FALSE(OJson::parse(*text).contains("gripper_slam_frame"));

  // Rig 1 trajectory in the task: kept.
  InfoJson rig1 = MergeInfo(with({"observation.slam_trajectory"}, "down_left_forward"), episode, 6);
  EXPECT_EQ(rig1.gripper_slam_frame, "down_left_forward");

  // Rig 2 trajectory declared by the episode: kept.
  InfoJson e2 = episode;
  e2.features.emplace_back("observation.gripper_2_slam_trajectory", Feature("float64", {8}));
  InfoJson rig2 = MergeInfo(with({"observation.ego_slam_trajectory"}, "down_left_forward"), e2, 6);
  EXPECT_EQ(rig2.gripper_slam_frame, "down_left_forward");

  // The _ns companion alone is not a trajectory.
  InfoJson ns_only =
      MergeInfo(with({"observation.slam_trajectory_ns"}, "down_left_forward"), episode, 6);
  EXPECT_FALSE(ns_only.gripper_slam_frame.has_value());

  // The episode's value wins when it sets one.
  InfoJson e3 = episode;
  e3.gripper_slam_frame = "up_right_back";
  EXPECT_EQ(MergeInfo(with({"observation.slam_trajectory"}, "down_left_forward"), e3, 6)
                .gripper_slam_frame,
            "up_right_back");
}

TEST(MergeInfo, SlamFramesUnionEpisodeWins) {
  InfoJson t = ParsedTask();
  t.slam_frames = {{"observation.slam_trajectory", "a"}, {"observation.ego_slam_trajectory", "b"}};
  InfoJson e = Episode();
  e.slam_frames = {{"observation.gripper_2_slam_trajectory", "c"},
                   {"observation.ego_slam_trajectory", "d"}};
  EXPECT_EQ(MergeInfo(t, e, 6).slam_frames,
            (OrderedMap<std::string>{{"observation.slam_trajectory", "a"},
                                     {"observation.ego_slam_trajectory", "d"},
                                     {"observation.gripper_2_slam_trajectory", "c"}}));
}

}  // namespace
}  // namespace reel
