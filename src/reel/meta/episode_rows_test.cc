// meta/episodes rows: the 11 columns of contract §6.2 plus slam_specs (multi-device §7.2).
#include <arrow/api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "reel/metadata.h"
#include "testing/arrow_builders.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

using testing::Doubles;
using testing::Int64s;
using testing::Strings;

const std::string kSpecs =
    R"({"observation.gripper_left_force_matrix": {"dtype": "int16", "shape": [250, 250, 3], )"
    R"("encoding": "row_diff_quantized", "scale": 100}})";

// Two rows (a legacy shard holds several), every column in contract order, minus `skip`.
std::shared_ptr<arrow::Table> EpisodesTable(const std::vector<std::string>& skip = {},
                                            const std::string& retype = "") {
  std::vector<std::pair<std::string, std::shared_ptr<arrow::Array>>> columns = {
      {"episode_index", Int64s({1, 3})},
      {"task_index", Int64s({0, 0})},
      {"start_frame_index", Int64s({0, 0})},
      {"end_frame_index", Int64s({299, 29})},
      {"length", Int64s({300, 30})},
      {"created_at", Doubles({1790000000.5, 1790000100.25})},
      {"duration_sec", Doubles({10.0, 1.0})},
      {"drop_stats", Strings({R"({"imu_overflow": 2})", "{}"})},
      {"video_codec", Strings({R"({"codec": "hevc"})", "{}"})},
      {"calibration", Strings({"{}", R"({"head_stereo": {}})"})},
      {"force_matrix_specs", Strings({kSpecs, "{}"})},
      {"slam_specs", Strings({"{}", R"({"observation.slam_trajectory": {}})"})},
  };
  std::vector<std::shared_ptr<arrow::Field>> fields;
  std::vector<std::shared_ptr<arrow::Array>> arrays;
  for (auto& [name, array] : columns) {
    if (std::find(skip.begin(), skip.end(), name) != skip.end()) continue;
    if (name == retype) array = array->type_id() == arrow::Type::STRING ? Int64s({1, 2}) : Strings({"1", "2"});
    fields.push_back(arrow::field(name, array->type()));
    arrays.push_back(array);
  }
  return arrow::Table::Make(arrow::schema(fields), arrays);
}

TEST(EpisodeRowsFromTable, AllTwelveColumns) {
  EXPECT_STREQ(kEpisodeColumns[0], "episode_index");
  EXPECT_STREQ(kEpisodeColumns[10], "force_matrix_specs");
  EXPECT_STREQ(kEpisodeColumns[11], "slam_specs");
  auto r = EpisodeRowsFromTable(*EpisodesTable(), "meta/episodes/chunk-000/file-000.parquet");
  ASSERT_OK(r);
  ASSERT_EQ(r->size(), 2u);
  const EpisodeRow& a = (*r)[0];
  EXPECT_EQ(a.episode_index, 1);
  EXPECT_EQ(a.task_index, 0);
  EXPECT_EQ(a.start_frame_index, 0);
  EXPECT_EQ(a.end_frame_index, 299);
  EXPECT_EQ(a.length, 300);
  EXPECT_EQ(a.created_at, 1790000000.5);
  EXPECT_EQ(a.duration_sec, 10.0);
  EXPECT_EQ(a.drop_stats, R"({"imu_overflow": 2})");
  EXPECT_EQ(a.video_codec, R"({"codec": "hevc"})");
  EXPECT_EQ(a.calibration, "{}");
  EXPECT_EQ(a.force_matrix_specs, kSpecs);
  EXPECT_EQ(a.slam_specs, "{}");
  EXPECT_TRUE(a.missing_columns.empty());
  EXPECT_TRUE(a.HasColumn("force_matrix_specs"));
  const EpisodeRow& b = (*r)[1];
  EXPECT_EQ(b.episode_index, 3);
  EXPECT_EQ(b.end_frame_index, 29);
  EXPECT_EQ(b.length, 30);
  EXPECT_EQ(b.created_at, 1790000100.25);
  EXPECT_EQ(b.calibration, R"({"head_stereo": {}})");
  EXPECT_EQ(b.force_matrix_specs, "{}");
  EXPECT_EQ(b.slam_specs, R"({"observation.slam_trajectory": {}})");
}

TEST(EpisodeRowsFromTable, OlderFilesWithoutForceMatrixSpecs) {
  // A v1.1.x row: no force_matrix_specs (contract §6.2: readers MUST tolerate it) and no slam_specs.
  auto r = EpisodeRowsFromTable(*EpisodesTable({"force_matrix_specs", "slam_specs"}), "ep.parquet");
  ASSERT_OK(r);
  ASSERT_EQ(r->size(), 2u);
  for (const EpisodeRow& row : *r) {
    EXPECT_EQ(row.force_matrix_specs, "{}");
    EXPECT_EQ(row.slam_specs, "{}");
    EXPECT_FALSE(row.HasColumn("force_matrix_specs"));
    EXPECT_FALSE(row.HasColumn("slam_specs"));
    EXPECT_TRUE(row.HasColumn("calibration"));
    EXPECT_EQ(row.missing_columns.size(), 2u);
  }
  EXPECT_EQ((*r)[0].length, 300);
  EXPECT_EQ((*r)[0].drop_stats, R"({"imu_overflow": 2})");
}

TEST(EpisodeRowsFromTable, WrongColumnTypeIsInvalidNamingColumnAndPath) {
  for (const char* column : {"length", "episode_index", "created_at", "drop_stats",
                             "force_matrix_specs"}) {
    auto r = EpisodeRowsFromTable(*EpisodesTable({}, column), "meta/episodes/x.parquet");
    ASSERT_FALSE(r.ok()) << column;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalid) << column;
    EXPECT_THAT(r.status().message(), ::testing::HasSubstr(std::string("\"") + column + "\""))
        << r.status().message();
    EXPECT_THAT(r.status().message(), ::testing::HasSubstr("meta/episodes/x.parquet"))
        << r.status().message();
  }
}

}  // namespace
}  // namespace reel
