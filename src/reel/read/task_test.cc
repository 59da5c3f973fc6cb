// Task: enumeration (contract §2, §6.1, §8), rows from per-episode files and legacy shards,
// data projection, and the non-data files readers must ignore (§7.4, §7.5, §11).
#include <arrow/api.h>
#include <arrow/io/file.h>
#include <gtest/gtest.h>
#include <parquet/arrow/writer.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "reel/task.h"
#include "testing/arrow_builders.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

using testing::Doubles;
using testing::Int64s;
using testing::Strings;

std::shared_ptr<arrow::Table> MakeTable(
    const std::vector<std::pair<std::string, std::shared_ptr<arrow::Array>>>& columns) {
  std::vector<std::shared_ptr<arrow::Field>> fields;
  std::vector<std::shared_ptr<arrow::Array>> arrays;
  for (const auto& [name, array] : columns) {
    fields.push_back(arrow::field(name, array->type()));
    arrays.push_back(array);
  }
  return arrow::Table::Make(arrow::schema(fields), arrays);
}

// Episodes rows with the 10 columns of a v1.1.0 shard, plus force_matrix_specs when `v13`.
std::shared_ptr<arrow::Table> EpisodeRows(const std::vector<int64_t>& n,
                                          const std::vector<int64_t>& length, bool v13) {
  const size_t k = n.size();
  std::vector<int64_t> end;
  std::vector<double> dur;
  for (int64_t l : length) end.push_back(l - 1), dur.push_back(l / 30.0);
  std::vector<std::pair<std::string, std::shared_ptr<arrow::Array>>> cols = {
      {"episode_index", Int64s(n)},
      {"task_index", Int64s(std::vector<int64_t>(k, 0))},
      {"start_frame_index", Int64s(std::vector<int64_t>(k, 0))},
      {"end_frame_index", Int64s(end)},
      {"length", Int64s(length)},
      {"created_at", Doubles(std::vector<double>(k, 1790000000.0))},
      {"duration_sec", Doubles(dur)},
      {"drop_stats", Strings(std::vector<std::string>(k, "{}"))},
      {"video_codec", Strings(std::vector<std::string>(k, "{}"))},
      {"calibration", Strings(std::vector<std::string>(k, "{}"))}};
  if (v13) cols.push_back({"force_matrix_specs", Strings(std::vector<std::string>(k, "{}"))});
  return MakeTable(cols);
}

std::shared_ptr<arrow::Table> DataRows(int64_t n, int64_t rows) {
  std::vector<int64_t> frame;
  for (int64_t i = 0; i < rows; ++i) frame.push_back(i);
  return MakeTable({{"episode_index", Int64s(std::vector<int64_t>(rows, n))},
                    {"frame_index", Int64s(frame)},
                    {"task_index", Int64s(std::vector<int64_t>(rows, 0))}});
}

constexpr const char* kInfo = R"({
  "format": "pooled_episodes_v1", "chunks_size": 1000,
  "data_path": "data/chunk-{c:03d}/episode-{f:03d}.parquet",
  "video_path": "videos/chunk-{c:03d}/{image_key}/episode-{f:03d}.{ext}",
  "episodes_path": "meta/episodes/chunk-{c:03d}/episode-{f:03d}.parquet",
  "codebase_version": "v3.0", "app_version": "1.4.0", "fps": 30.0, "video": true,
  "task_name": "demo", "features": {}, "video_extensions": {"stereo_left": "mp4"},
  "total_episodes": 1001
})";

class TaskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = JoinPath(::testing::TempDir(), "reel_task_test.XXXXXX");
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    tmp_ = tmpl;
    root_ = JoinPath(tmp_, "demo");
    Put("meta/info.json", kInfo);
    Put("meta/tasks.jsonl", "{\"task_index\": 0, \"task\": \"demo\"}\n");
    WriteParquet("data/chunk-000/episode-000.parquet", DataRows(1, 3));      // N=1
    WriteParquet("data/chunk-001/episode-000.parquet", DataRows(1001, 2));   // N=1001
    // A legacy v1.1.0 shard: rows located by episode_index, not by file name or order.
    WriteParquet("meta/episodes/chunk-000/file-000.parquet", EpisodeRows({3, 1}, {5, 3}, false));
    WriteParquet("meta/episodes/chunk-001/episode-000.parquet", EpisodeRows({1001}, {2}, true));
    Put("videos/chunk-001/stereo_left/episode-000.mp4", "");
    // Not data (§7.4, §7.5, §11): none of these may create episode 2.
    Put("meta/episodes/.lock", "");
    Put("meta/recycled_episode.json", R"({"episode_index": 2, "freed_at": "2026-01-01T00:00:00Z"})");
    Put("data/chunk-000/.episode-001.parquet.tmp4242", "garbage");
    Put("videos/chunk-000/.partial/episode-001.mp4", "");
    Put("meta/episodes/chunk-000/.episode-001.parquet.tmp1", "garbage");
  }
  void TearDown() override { std::filesystem::remove_all(tmp_); }

  void Put(const std::string& rel, const std::string& contents) {
    const std::string path = JoinPath(root_, rel);
    ASSERT_OK(DefaultFileSystem()->CreateDirs(DirName(path)));
    ASSERT_OK(WriteFileAtomic(DefaultFileSystem(), path, contents)) << path;
  }
  void WriteParquet(const std::string& rel, const std::shared_ptr<arrow::Table>& table) {
    const std::string path = JoinPath(root_, rel);
    ASSERT_OK(DefaultFileSystem()->CreateDirs(DirName(path)));
    auto out = arrow::io::FileOutputStream::Open(path);
    ASSERT_OK(out);
    ASSERT_OK(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), *out, 1024));
    ASSERT_OK((*out)->Close());
  }
  std::unique_ptr<Task> Open() {
    auto task = Task::Open(root_);
    EXPECT_OK(task);
    return task.ok() ? std::move(*task) : nullptr;
  }

  std::string tmp_, root_;
};

TEST_F(TaskTest, ListEpisodesUnionWithChunkRolloverAndLegacyShard) {
  auto task = Open();
  ASSERT_NE(task, nullptr);
  auto list = task->ListEpisodes();
  ASSERT_OK(list);
  std::vector<int64_t> ns;
  for (const auto& e : *list) ns.push_back(e.episode_index);
  EXPECT_EQ(ns, (std::vector<int64_t>{1, 3, 1001}));
  ASSERT_EQ(list->size(), 3u);

  const EpisodeEntry& e1 = (*list)[0];
  EXPECT_EQ(e1.data_path, "data/chunk-000/episode-000.parquet");
  EXPECT_TRUE(e1.videos.empty());
  EXPECT_EQ(e1.row_source, RowSource::kLegacyShard);
  EXPECT_EQ(e1.row_path, "meta/episodes/chunk-000/file-000.parquet");

  const EpisodeEntry& e3 = (*list)[1];  // a row without data (e.g. deleted after upload)
  EXPECT_EQ(e3.data_path, "");
  EXPECT_EQ(e3.location.chunk, 0);
  EXPECT_EQ(e3.location.file, 2);
  EXPECT_EQ(e3.row_source, RowSource::kLegacyShard);

  const EpisodeEntry& e1001 = (*list)[2];
  EXPECT_EQ(e1001.location.chunk, 1);
  EXPECT_EQ(e1001.location.file, 0);
  EXPECT_EQ(e1001.data_path, "data/chunk-001/episode-000.parquet");
  ASSERT_EQ(e1001.videos.size(), 1u);
  EXPECT_EQ(e1001.videos[0].first, "stereo_left");
  EXPECT_EQ(e1001.videos[0].second, "videos/chunk-001/stereo_left/episode-000.mp4");
  EXPECT_EQ(e1001.row_source, RowSource::kEpisodeFile);
  EXPECT_EQ(e1001.row_path, "meta/episodes/chunk-001/episode-000.parquet");
  EXPECT_EQ(*task->DataPathOf(1001), "data/chunk-001/episode-000.parquet");
}

// contract-decisions: a slot may mix mp4 and mkv; the declared extension first, then the
// other allowed one when only that file exists.
TEST_F(TaskTest, VideoPathOfFallsBackBetweenMp4AndMkv) {
  Put("videos/chunk-000/stereo_left/episode-000.mkv", "");  // N=1 only has the .mkv
  auto task = Open();
  ASSERT_NE(task, nullptr);
  EXPECT_EQ(*task->VideoPathOf(1001, "stereo_left"), "videos/chunk-001/stereo_left/episode-000.mp4");
  EXPECT_EQ(*task->VideoPathOf(1, "stereo_left"), "videos/chunk-000/stereo_left/episode-000.mkv");
  // Neither exists: the declared path, for the caller's NotFound to name.
  EXPECT_EQ(*task->VideoPathOf(2, "stereo_left"), "videos/chunk-000/stereo_left/episode-001.mp4");
  EXPECT_EQ(task->VideoPathOf(1, "no_such_slot").status().code(), StatusCode::kNotFound);
}

TEST_F(TaskTest, FindEpisode) {
  auto task = Open();
  ASSERT_NE(task, nullptr);
  auto e1001 = task->FindEpisode(1001);
  ASSERT_OK(e1001);
  EXPECT_EQ(e1001->data_path, "data/chunk-001/episode-000.parquet");
  EXPECT_EQ(e1001->row_source, RowSource::kEpisodeFile);
  EXPECT_EQ(e1001->videos.size(), 1u);
  auto e3 = task->FindEpisode(3);
  ASSERT_OK(e3);
  EXPECT_EQ(e3->row_source, RowSource::kLegacyShard);
  EXPECT_EQ(e3->row_path, "meta/episodes/chunk-000/file-000.parquet");
  EXPECT_EQ(e3->data_path, "");
  for (int64_t missing : {2, 4, 1000, 1002}) {
    auto r = task->FindEpisode(missing);
    EXPECT_FALSE(r.ok()) << missing;
    EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << missing;
  }
  EXPECT_FALSE(task->FindEpisode(0).ok());
}

TEST_F(TaskTest, ReadEpisodeRowsFromShardAndFile) {
  auto task = Open();
  ASSERT_NE(task, nullptr);
  auto list = task->ListEpisodes();
  ASSERT_OK(list);
  auto rows = task->ReadEpisodeRows(*list);
  ASSERT_EQ(rows.size(), 3u);
  const int64_t want_n[] = {1, 3, 1001}, want_len[] = {3, 5, 2};
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_OK(rows[i]);
    EXPECT_EQ(rows[i]->episode_index, want_n[i]);
    EXPECT_EQ(rows[i]->length, want_len[i]);
    EXPECT_EQ(rows[i]->end_frame_index, want_len[i] - 1);
  }
  EXPECT_FALSE(rows[0]->HasColumn("force_matrix_specs"));  // v1.1.0 shard
  EXPECT_TRUE(rows[2]->HasColumn("force_matrix_specs"));
  EpisodeEntry no_row = (*list)[0];
  no_row.row_source = RowSource::kMissing;
  EXPECT_EQ(task->ReadEpisodeRow(no_row).status().code(), StatusCode::kNotFound);
}

TEST_F(TaskTest, ReadDataProjection) {
  auto task = Open();
  ASSERT_NE(task, nullptr);
  auto e = task->FindEpisode(1001);
  ASSERT_OK(e);
  auto all = task->ReadData(*e);
  ASSERT_OK(all);
  EXPECT_EQ((*all)->num_columns(), 3);
  EXPECT_EQ((*all)->num_rows(), 2);
  auto one = task->ReadData(*e, {"frame_index"});
  ASSERT_OK(one);
  ASSERT_EQ((*one)->num_columns(), 1);
  EXPECT_EQ((*one)->schema()->field(0)->name(), "frame_index");
  auto frames = std::static_pointer_cast<arrow::Int64Array>((*one)->column(0)->chunk(0));
  EXPECT_EQ(frames->Value(1), 1);
  auto missing = task->ReadData(*e, {"frame_index", "observation.imu"});
  EXPECT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), ::testing::HasSubstr("observation.imu"));
  auto e3 = task->FindEpisode(3);
  ASSERT_OK(e3);
  EXPECT_EQ(task->ReadData(*e3).status().code(), StatusCode::kNotFound);
}

TEST_F(TaskTest, OpenDataStreamsProjectedBatches) {
  auto task = Open();
  ASSERT_NE(task, nullptr);
  auto e = task->FindEpisode(1001);
  ASSERT_OK(e);
  auto reader = task->OpenData(*e, {"frame_index"});
  ASSERT_OK(reader);
  ASSERT_EQ((*reader)->schema()->num_fields(), 1);
  EXPECT_EQ((*reader)->schema()->field(0)->name(), "frame_index");
  int64_t rows = 0, last = -1;
  for (;;) {
    std::shared_ptr<arrow::RecordBatch> batch;
    ASSERT_OK((*reader)->ReadNext(&batch));
    if (!batch) break;
    auto frames = std::static_pointer_cast<arrow::Int64Array>(batch->column(0));
    for (int64_t i = 0; i < frames->length(); ++i) EXPECT_EQ(frames->Value(i), ++last);
    rows += batch->num_rows();
  }
  EXPECT_EQ(rows, 2);
  EXPECT_EQ(task->OpenData(*e, {"observation.imu"}).status().code(), StatusCode::kNotFound);
  auto schemas = task->ReadDataSchemas({*e, *task->FindEpisode(3)});
  ASSERT_EQ(schemas.size(), 2u);
  ASSERT_OK(schemas[0]);
  EXPECT_EQ((*schemas[0])->num_fields(), 3);
  EXPECT_EQ(schemas[1].status().code(), StatusCode::kNotFound);  // N=3 has only a row
}

TEST_F(TaskTest, TasksAndOpenErrors) {
  auto task = Open();
  ASSERT_NE(task, nullptr);
  auto tasks = task->ReadTasks();
  ASSERT_OK(tasks);
  ASSERT_EQ(tasks->size(), 1u);
  EXPECT_EQ((*tasks)[0].task, "demo");
  EXPECT_EQ(Task::Open(JoinPath(tmp_, "absent")).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace reel
