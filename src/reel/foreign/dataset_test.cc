// ForeignDataset over small LeRobot datasets written here (JSON by hand, parquet
// through Arrow's writer): the path templates, the metadata rules, row ranges.
#include <arrow/api.h>
#include <arrow/io/file.h>
#include <gtest/gtest.h>
#include <parquet/arrow/writer.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "reel/dataset.h"
#include "testing/arrow_builders.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

using testing::Int64s;

class ForeignTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = JoinPath(::testing::TempDir(), "reel_foreign_test.XXXXXX");
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  void Write(const std::string& rel, const std::string& text) {
    const std::string path = JoinPath(root_, rel);
    std::filesystem::create_directories(DirName(path));
    std::ofstream(path) << text;
  }
  void WriteParquet(const std::string& rel, const std::shared_ptr<arrow::Table>& table,
                    int64_t row_group = 1024) {
    const std::string path = JoinPath(root_, rel);
    std::filesystem::create_directories(DirName(path));
    auto out = arrow::io::FileOutputStream::Open(path).ValueOrDie();
    ASSERT_OK(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), out, row_group));
    ASSERT_OK(out->Close());
  }
  // v2.1: two episodes (3 and 2 frames), one camera; data and video files empty
  // (the episode index only stats them).
  void WriteV2(const std::string& version = "v2.1",
               const std::string& episodes =
                   "{\"episode_index\": 0, \"tasks\": [\"a\"], \"length\": 3}\n"
                   "{\"episode_index\": 1, \"tasks\": [\"b\"], \"length\": 2}\n") {
    Write("meta/info.json",
          R"({"codebase_version": ")" + version + R"(", "fps": 10, "total_episodes": 2,
              "total_frames": 5, "chunks_size": 1000,
              "data_path": "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet",
              "video_path": "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4",
              "features": {"observation.images.top": {"dtype": "video", "shape": [4, 4, 3]},
                           "timestamp": {"dtype": "float32", "shape": [1]}}})");
    Write("meta/tasks.jsonl", "{\"task_index\": 0, \"task\": \"a\"}\n{\"task_index\": 1, \"task\": \"b\"}\n");
    Write("meta/episodes.jsonl", episodes);
    for (int e = 0; e < 2; ++e) {
      Write("data/chunk-000/episode_00000" + std::to_string(e) + ".parquet", "");
      Write("videos/chunk-000/observation.images.top/episode_00000" + std::to_string(e) + ".mp4", "");
    }
  }
  std::string root_;
};

TEST(ForeignPathTemplate, LeRobotNames) {
  auto v2 = PathTemplate::Parse("videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4");
  ASSERT_OK(v2);
  PathVars vars;
  vars.chunk = 1;
  vars.episode_index = 1234;
  vars.image_key = "observation.images.top";
  EXPECT_EQ(*v2->Render(vars), "videos/chunk-001/observation.images.top/episode_001234.mp4");
  auto v3 = PathTemplate::Parse("videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4");
  ASSERT_OK(v3);
  vars.chunk = 0;
  vars.file = 12;
  EXPECT_EQ(*v3->Render(vars), "videos/observation.images.top/chunk-000/file-012.mp4");
  auto m = v3->Match("videos/cam/chunk-002/file-007.mp4");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(*m->chunk, 2);
  EXPECT_EQ(*m->file, 7);
}

TEST_F(ForeignTest, V2EpisodesFromJsonl) {
  WriteV2();
  auto d = ForeignDataset::Open(root_);
  ASSERT_OK(d);
  EXPECT_EQ((*d)->info().format, DatasetFormat::kLeRobotV2);
  EXPECT_EQ((*d)->info().tasks, (std::vector<std::string>{"a", "b"}));
  auto eps = (*d)->ReadEpisodes();
  ASSERT_OK(eps);
  ASSERT_EQ(eps->size(), 2u);
  const ForeignEpisode& e = (*eps)[1];
  EXPECT_EQ(e.data_path, "data/chunk-000/episode_000001.parquet");
  EXPECT_EQ(e.dataset_from_index, 3);
  EXPECT_EQ(e.dataset_to_index, 5);
  ASSERT_EQ(e.videos.size(), 1u);
  EXPECT_EQ(e.videos[0].path, "videos/chunk-000/observation.images.top/episode_000001.mp4");
  EXPECT_DOUBLE_EQ(e.videos[0].to_timestamp, 0.2);
}

TEST_F(ForeignTest, UnknownVersionIsRefused) {
  WriteV2("v2.9");
  auto d = ForeignDataset::Open(root_);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kNotSupported);
  EXPECT_THAT(d.status().message(), ::testing::HasSubstr("v2.9")) << d.status().message();
  EXPECT_THAT(d.status().message(), ::testing::HasSubstr("meta/info.json"));
}

TEST_F(ForeignTest, TasksOutOfOrderAreRefused) {
  WriteV2();
  Write("meta/tasks.jsonl", "{\"task_index\": 1, \"task\": \"b\"}\n{\"task_index\": 0, \"task\": \"a\"}\n");
  auto d = ForeignDataset::Open(root_);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(), ::testing::HasSubstr("meta/tasks.jsonl: row 0 (task \"b\") has task_index 1"))
      << d.status().message();
}

TEST_F(ForeignTest, StrictReadStopsAtFirstErrorValidateCollectsAll) {
  WriteV2("v2.1",
          "{\"episode_index\": 0, \"tasks\": [\"a\"], \"length\": 3}\n"
          "{\"episode_index\": 2, \"tasks\": [\"b\"], \"length\": 2}\n");
  auto d = ForeignDataset::Open(root_);
  ASSERT_OK(d);
  auto eps = (*d)->ReadEpisodes();
  ASSERT_FALSE(eps.ok());
  EXPECT_THAT(eps.status().message(), ::testing::HasSubstr("line 2: episode_index 2, expected 1"))
      << eps.status().message();
  // Episode 2's files do not exist either, and episode 0's are empty stand-ins
  // (not parquet, not video): Validate reports every problem.
  TaskReport report = (*d)->Validate();
  std::vector<std::string> rules;
  for (const Finding& f : report.findings)
    if (f.severity == Severity::kError) rules.push_back(f.rule);
  EXPECT_EQ(rules, (std::vector<std::string>{"foreign.episode_order", "foreign.file_missing",
                                             "foreign.file_missing", "foreign.unreadable",
                                             "foreign.unreadable"}));
}

// v3: three episodes (2, 3, 2 rows) in one data file with row groups of 2 rows:
// ReadFrames returns exactly an episode's rows across row-group boundaries.
TEST_F(ForeignTest, V3ReadFramesSlicesTheSharedFile) {
  Write("meta/info.json",
        R"({"codebase_version": "v3.0", "fps": 10, "total_episodes": 3, "total_frames": 7,
            "chunks_size": 1000,
            "data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
            "features": {"x": {"dtype": "int64", "shape": [1]}}})");
  auto tasks = arrow::Table::Make(
      arrow::schema({arrow::field("task_index", arrow::int64()), arrow::field("task", arrow::utf8())}),
      {Int64s({0}), testing::Strings({"t"})});
  WriteParquet("meta/tasks.parquet", tasks);
  auto i64 = arrow::int64();
  auto episodes = arrow::Table::Make(
      arrow::schema({arrow::field("episode_index", i64), arrow::field("length", i64),
                     arrow::field("data/chunk_index", i64), arrow::field("data/file_index", i64),
                     arrow::field("dataset_from_index", i64), arrow::field("dataset_to_index", i64)}),
      {Int64s({0, 1, 2}), Int64s({2, 3, 2}), Int64s({0, 0, 0}), Int64s({0, 0, 0}), Int64s({0, 2, 5}),
       Int64s({2, 5, 7})});
  WriteParquet("meta/episodes/chunk-000/file-000.parquet", episodes);
  auto data = arrow::Table::Make(
      arrow::schema({arrow::field("x", i64), arrow::field("episode_index", i64),
                     arrow::field("index", i64)}),
      {Int64s({10, 11, 12, 13, 14, 15, 16}), Int64s({0, 0, 1, 1, 1, 2, 2}),
       Int64s({0, 1, 2, 3, 4, 5, 6})});
  WriteParquet("data/chunk-000/file-000.parquet", data, /*row_group=*/2);

  auto d = ForeignDataset::Open(root_);
  ASSERT_OK(d);
  auto eps = (*d)->ReadEpisodes();
  ASSERT_OK(eps);
  ASSERT_EQ(eps->size(), 3u);
  EXPECT_EQ((*eps)[1].from_row, 2);
  EXPECT_EQ((*eps)[1].to_row, 5);
  auto t = (*d)->ReadFrames((*eps)[1], {"x"});
  ASSERT_OK(t);
  ASSERT_EQ((*t)->num_columns(), 1);
  std::vector<int64_t> got;
  for (const auto& chunk : (*t)->column(0)->chunks())
    for (int64_t i = 0; i < chunk->length(); ++i)
      got.push_back(std::static_pointer_cast<arrow::Int64Array>(chunk)->Value(i));
  EXPECT_EQ(got, (std::vector<int64_t>{12, 13, 14}));
  EXPECT_TRUE((*d)->Validate().findings.empty());

  // A data row of another episode inside episode 1's range is caught by name.
  auto bad = arrow::Table::Make(data->schema(), {Int64s({10, 11, 12, 13, 14, 15, 16}),
                                                 Int64s({0, 0, 1, 2, 1, 2, 2}),
                                                 Int64s({0, 1, 2, 3, 4, 5, 6})});
  WriteParquet("data/chunk-000/file-000.parquet", bad, 2);
  auto r = (*d)->ReadFrames((*eps)[1], {"x"});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("episode 1 row 1 (file row 3) has episode_index 2, expected 1"))
      << r.status().message();
}

}  // namespace
}  // namespace reel
