// PackEpisode (contract §9): entry order and names, stored entries, byte-identical
// task files, the single-row slice of a legacy shard, refusals, atomic output; and
// the packer's output accepted by InspectSlice / ExtractSlice.
#include <arrow/api.h>
#include <arrow/io/file.h>
#include <gtest/gtest.h>
#include <parquet/arrow/writer.h>
#include <stdlib.h>
#include <zip.h>

#include <filesystem>
#include <string>
#include <vector>

#include "reel/metadata.h"
#include "reel/pack.h"
#include "reel/task.h"
#include "testing/arrow_builders.h"
#include "testing/fault_fs.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

using testing::Doubles;
using testing::Int64s;
using testing::Strings;

std::shared_ptr<arrow::Table> Rows(const std::vector<int64_t>& n) {
  const size_t k = n.size();
  auto schema = arrow::schema({arrow::field("episode_index", arrow::int64()),
                               arrow::field("task_index", arrow::int64()),
                               arrow::field("length", arrow::int64()),
                               arrow::field("duration_sec", arrow::float64()),
                               arrow::field("video_codec", arrow::utf8())});
  std::vector<std::string> codec;
  for (int64_t v : n) codec.push_back("{\"row\": " + std::to_string(v) + "}");
  return arrow::Table::Make(schema, {Int64s(n), Int64s(std::vector<int64_t>(k, 0)),
                                     Int64s(std::vector<int64_t>(k, 3)),
                                     Doubles(std::vector<double>(k, 0.1)), Strings(codec)});
}

std::shared_ptr<arrow::Table> Data(int64_t n) {
  auto schema = arrow::schema({arrow::field("episode_index", arrow::int64()),
                               arrow::field("frame_index", arrow::int64())});
  return arrow::Table::Make(schema, {Int64s({n, n, n}), Int64s({0, 1, 2})});
}

constexpr const char* kInfo = R"({
  "format": "pooled_episodes_v1", "chunks_size": 1000,
  "data_path": "data/chunk-{c:03d}/episode-{f:03d}.parquet",
  "video_path": "videos/chunk-{c:03d}/{image_key}/episode-{f:03d}.{ext}",
  "episodes_path": "meta/episodes/chunk-{c:03d}/episode-{f:03d}.parquet",
  "codebase_version": "v3.0", "fps": 30.0, "video": true, "task_name": "demo",
  "features": {}, "cameras": {"zeta_rgb": {"height": 24, "width": 32}},
  "video_extensions": {"zeta_rgb": "mp4", "alpha_depth": "mkv"}, "total_episodes": 1002
})";

// The paths a logged call names (testing::FaultFileSystem::calls()): "<op> <path>", or
// "Rename <from> -> <to>".
std::vector<std::string> PathsOf(const std::string& call) {
  std::string rest = call.substr(call.find(' ') + 1);
  const size_t arrow = rest.find(" -> ");
  if (arrow == std::string::npos) return {rest};
  return {rest.substr(0, arrow), rest.substr(arrow + 4)};
}

class PackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = JoinPath(::testing::TempDir(), "reel_pack_test.XXXXXX");
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    tmp_ = tmpl;
    root_ = JoinPath(tmp_, "demo");
    Put("meta/info.json", kInfo);
    Put("meta/stats.json", "{}");
    Put("meta/tasks.jsonl", "{\"task_index\": 0, \"task\": \"demo\"}\n");
    // N=2: per-episode files; videos are opaque bytes to the packer without precompress.
    Parquet("data/chunk-000/episode-001.parquet", Data(2));
    Parquet("meta/episodes/chunk-000/episode-001.parquet", Rows({2}));
    Put("videos/chunk-000/zeta_rgb/episode-001.mp4", "rgb bytes of N=2");
    Put("videos/chunk-000/alpha_depth/episode-001.mkv", std::string("depth\0bytes", 11));
    // N=1 and N=3: rows in a legacy shard, out of order; N=3's data was deleted.
    Parquet("data/chunk-000/episode-000.parquet", Data(1));
    Parquet("meta/episodes/chunk-000/file-000.parquet", Rows({3, 1}));
    // N=1002 (chunk 1): data but no episodes row at all.
    Parquet("data/chunk-001/episode-001.parquet", Data(1002));
    // Never packed (§11).
    Put("meta/episodes/.lock", "");
    Put("meta/recycled_episode.json", "{\"episode_index\": 4}");
    Put("videos/chunk-000/zeta_rgb/.episode-001.mp4.tmp", "partial");
  }
  void TearDown() override { std::filesystem::remove_all(tmp_); }

  void Put(const std::string& rel, const std::string& contents) {
    const std::string path = JoinPath(root_, rel);
    ASSERT_OK(DefaultFileSystem()->CreateDirs(DirName(path)));
    ASSERT_OK(WriteFileAtomic(DefaultFileSystem(), path, contents)) << path;
  }
  void Parquet(const std::string& rel, const std::shared_ptr<arrow::Table>& table) {
    const std::string path = JoinPath(root_, rel);
    ASSERT_OK(DefaultFileSystem()->CreateDirs(DirName(path)));
    auto out = arrow::io::FileOutputStream::Open(path);
    ASSERT_OK(out);
    ASSERT_OK(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), *out, 1024));
    ASSERT_OK((*out)->Close());
  }
  std::string Read(const std::string& path) {
    auto s = DefaultFileSystem()->ReadFile(path);
    EXPECT_OK(s) << path;
    return s.ok() ? *s : "";
  }
  // Every file under `dir`, relative, sorted (dotfiles included: none may be there).
  std::vector<std::string> Tree(const std::string& dir) {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
      if (!e.is_directory()) out.push_back(std::filesystem::relative(e.path(), dir).string());
    std::sort(out.begin(), out.end());
    return out;
  }
  // Entries of a zip as libzip reads them: (name, compression method, bytes).
  struct Entry {
    std::string name;
    int32_t method;
    std::string bytes;
  };
  std::vector<Entry> Unzip(const std::string& path) {
    std::vector<Entry> out;
    int err = 0;
    zip_t* za = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &err);
    EXPECT_NE(za, nullptr) << path;
    if (!za) return out;
    for (zip_int64_t i = 0; i < zip_get_num_entries(za, 0); ++i) {
      zip_stat_t st;
      EXPECT_EQ(zip_stat_index(za, i, 0, &st), 0);
      std::string bytes(st.size, '\0');
      zip_file_t* f = zip_fopen_index(za, i, 0);
      EXPECT_EQ(zip_fread(f, bytes.data(), st.size), static_cast<zip_int64_t>(st.size));
      zip_fclose(f);
      out.push_back({st.name, st.comp_method, bytes});
    }
    zip_discard(za);
    return out;
  }

  std::string tmp_, root_;
};

TEST_F(PackTest, DefaultNameAndUploadIndex) {
  EXPECT_EQ(UploadEpisodeIndex(0), 0);
  EXPECT_EQ(UploadEpisodeIndex(1), 0);
  EXPECT_EQ(UploadEpisodeIndex(12), 11);
  EXPECT_EQ(UploadEpisodeIndex(1001), 0);
  EXPECT_EQ(DefaultSliceName("pick_cup", 12), "pick_cup_ep000011.zip");
  EXPECT_EQ(DefaultSliceName("pick_cup", 1001), "pick_cup_ep000000.zip");
}

TEST_F(PackTest, EpisodeFileSliceInContractOrder) {
  const std::string zip = JoinPath(tmp_, "out/demo_ep000001.zip");
  ASSERT_OK(DefaultFileSystem()->CreateDirs(DirName(zip)));
  auto packed = PackEpisode(root_, 2, zip);
  ASSERT_OK(packed);
  EXPECT_EQ(packed->episode_index, 2);
  EXPECT_EQ(packed->upload_episode_index, 1);
  const std::vector<std::string> order = {
      "videos/chunk-000/alpha_depth/episode-001.mkv", "videos/chunk-000/zeta_rgb/episode-001.mp4",
      "data/chunk-000/episode-001.parquet", "meta/episodes/chunk-000/episode-001.parquet",
      "meta/info.json", "meta/stats.json", "meta/tasks.jsonl"};
  auto entries = Unzip(zip);
  ASSERT_EQ(entries.size(), order.size());
  ASSERT_EQ(packed->entries.size(), order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ(entries[i].name, order[i]);
    EXPECT_EQ(packed->entries[i].arcname, order[i]);
    EXPECT_EQ(entries[i].method, ZIP_CM_STORE) << order[i];
    EXPECT_EQ(entries[i].bytes, Read(JoinPath(root_, order[i]))) << order[i];
    EXPECT_EQ(packed->entries[i].size, entries[i].bytes.size());
    EXPECT_FALSE(packed->entries[i].recompressed);
  }
  EXPECT_EQ(packed->zip_bytes, std::filesystem::file_size(zip));
  // Atomic: only the zip in its directory, no temp left behind.
  EXPECT_EQ(Tree(DirName(zip)), std::vector<std::string>{"demo_ep000001.zip"});

  // The server accepts what the client packs, and extracts it byte for byte.
  auto manifest = InspectSlice(zip);
  ASSERT_OK(manifest);
  EXPECT_EQ(manifest->chunk, 0);
  EXPECT_EQ(manifest->file, 1);
  const std::string dir = JoinPath(tmp_, "extracted");
  ASSERT_OK(ExtractSlice(zip, dir));
  std::vector<std::string> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(Tree(dir), sorted);
  for (const std::string& rel : order) EXPECT_EQ(Read(JoinPath(dir, rel)), Read(JoinPath(root_, rel)));
}

TEST_F(PackTest, LegacyShardBecomesSingleRowSliceUnderPerEpisodeName) {
  const std::string zip = JoinPath(tmp_, "n1.zip");
  auto before = Tree(root_);
  auto packed = PackEpisode(root_, 1, zip);
  ASSERT_OK(packed);
  auto entries = Unzip(zip);
  ASSERT_EQ(entries.size(), 5u);  // no videos
  EXPECT_EQ(entries[0].name, "data/chunk-000/episode-000.parquet");
  EXPECT_EQ(entries[1].name, "meta/episodes/chunk-000/episode-000.parquet");
  // The slice, read back: one row, N=1's values, the shard's schema.
  const std::string slice = JoinPath(tmp_, "slice.parquet");
  ASSERT_OK(WriteFileAtomic(DefaultFileSystem(), slice, entries[1].bytes));
  auto table = ReadParquetFile(DefaultFileSystem(), slice);
  ASSERT_OK(table);
  EXPECT_EQ((*table)->num_rows(), 1);
  EXPECT_TRUE((*table)->schema()->Equals(*Rows({1})->schema(), /*check_metadata=*/false));
  auto rows = EpisodeRowsFromTable(**table, slice);
  ASSERT_OK(rows);
  EXPECT_EQ((*rows)[0].episode_index, 1);
  EXPECT_EQ((*rows)[0].video_codec, "{\"row\": 1}");
  // The task was not modified (no slice or temp written into it).
  EXPECT_EQ(Tree(root_), before);
}

TEST_F(PackTest, DeletedEpisodeAndMissingRowAreNotFound) {
  const std::string zip = JoinPath(tmp_, "x.zip");
  auto deleted = PackEpisode(root_, 3, zip);  // row in the shard, data deleted
  ASSERT_FALSE(deleted.ok());
  EXPECT_EQ(deleted.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(deleted.status().message(), ::testing::HasSubstr("episode 3"));
  EXPECT_THAT(deleted.status().message(), ::testing::HasSubstr("data/chunk-000/episode-002.parquet"))
      << deleted.status().message();
  auto rowless = PackEpisode(root_, 1002, zip);
  ASSERT_FALSE(rowless.ok());
  EXPECT_EQ(rowless.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(rowless.status().message(), ::testing::HasSubstr("episodes row"));
  auto absent = PackEpisode(root_, 7, zip);
  EXPECT_EQ(absent.status().code(), StatusCode::kNotFound);
  // No zip, no temp.
  for (const auto& e : std::filesystem::directory_iterator(tmp_))
    EXPECT_TRUE(e.is_directory()) << e.path();
}

TEST_F(PackTest, MissingTaskFileIsNotFoundAndLeavesNoTemp) {
  std::filesystem::remove(JoinPath(root_, "meta/stats.json"));
  const std::string zip = JoinPath(tmp_, "x.zip");
  auto packed = PackEpisode(root_, 2, zip);
  ASSERT_FALSE(packed.ok());
  EXPECT_EQ(packed.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(packed.status().message(), ::testing::HasSubstr("meta/stats.json"));
  for (const auto& e : std::filesystem::directory_iterator(tmp_))
    EXPECT_TRUE(e.is_directory()) << e.path();
}

TEST_F(PackTest, ReplacesAnExistingZipWholeOnlyWhenAsked) {
  const std::string zip = JoinPath(tmp_, "x.zip");
  ASSERT_OK(PackEpisode(root_, 1, zip));
  const size_t first = Unzip(zip).size();
  auto refused = PackEpisode(root_, 2, zip);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(Unzip(zip).size(), first);
  PackOptions replace;
  replace.replace_existing = true;
  ASSERT_OK(PackEpisode(root_, 2, zip, replace));
  EXPECT_EQ(Unzip(zip).size(), 7u);
  // A file that is not a zip is never replaced, asked or not (-o meta/info.json --force).
  const std::string other = JoinPath(tmp_, "info.json");
  ASSERT_OK(WriteFileAtomic(DefaultFileSystem(), other, "{}"));
  auto not_zip = PackEpisode(root_, 2, other, replace);
  ASSERT_FALSE(not_zip.ok());
  EXPECT_THAT(not_zip.status().message(), ::testing::HasSubstr("not a zip")) << not_zip.status().message();
}

TEST_F(PackTest, FaultsLeaveNoZipNoTempAndNeverTouchTheTask) {
  // A zip temp's Sync, Append (the second: past the first entry's local header,
  // mid-archive), WriteAt (libzip writes through the FileSystem), and the rename.
  for (testing::FsOp op : {testing::FsOp::kSync, testing::FsOp::kAppend, testing::FsOp::kWriteAt, testing::FsOp::kRename}) {
    SCOPED_TRACE(testing::FsOpName(op));
    testing::FaultFileSystem fs;
    fs.Log(testing::kWriteOps);
    fs.Inject({.ops = testing::Ops({op}), .nth = op == testing::FsOp::kAppend ? 2 : 1, .stays_down = true});
    PackOptions options;
    options.task_fs = &fs;  // the task read and the zip written through one recording fs
    options.output_fs = &fs;
    const std::string zip = JoinPath(tmp_, "x.zip");
    auto packed = PackEpisode(root_, 1, zip, options);  // legacy shard: a generated entry too
    ASSERT_FALSE(packed.ok());
    EXPECT_EQ(packed.status().code(), StatusCode::kIOError);
    for (const auto& e : std::filesystem::directory_iterator(tmp_))
      EXPECT_TRUE(e.is_directory()) << e.path();
    ASSERT_TRUE(fs.fired());
    for (const std::string& call : fs.calls())
      for (const std::string& p : PathsOf(call)) EXPECT_NE(p.rfind(root_, 0), 0u) << "wrote into the task: " << call;
  }
}

TEST_F(PackTest, ExtractionWritesOnlyUnderItsDirectory) {
  const std::string zip = JoinPath(tmp_, "x.zip");
  ASSERT_OK(PackEpisode(root_, 2, zip));
  testing::FaultFileSystem fs;
  fs.Log(testing::kWriteOps);
  const std::string dir = JoinPath(tmp_, "in/x");
  ASSERT_OK(ExtractSlice(zip, dir, {}, &fs));
  ASSERT_FALSE(fs.calls().empty());
  for (const std::string& call : fs.calls()) {
    if (call.starts_with("SyncDir ")) continue;  // making a new directory's name durable
    for (const std::string& p : PathsOf(call)) EXPECT_EQ(p.rfind(dir, 0), 0u) << call;
  }
}

}  // namespace
}  // namespace reel
