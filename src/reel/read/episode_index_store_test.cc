// The episode index is written only where the file system says Rename is atomic
// (FileSystem::Capabilities), not where a probe rename happens to fail: a store whose Rename
// copies and deletes would otherwise publish a torn cache.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <functional>

#include "read/episode_index.h"
#include "reel/fs.h"
#include "reel/task.h"
#include "testing/fault_fs.h"
#include "testing/tiny_rig.h"

namespace reel {
namespace {

namespace stdfs = std::filesystem;

// Renames work (by copy, say) but are not atomic, and the store says so.
class NonAtomicRenameFs final : public testing::FaultFileSystem {
 public:
  NonAtomicRenameFs() { SetCapabilities({.atomic_rename = false, .locks = false, .directories = false}); }
};

class EpisodeIndexStoreTest : public ::testing::Test {
 protected:
  // 32 episodes (the rows' cache starts there), recorded once; each test takes a copy.
  static void SetUpTestSuite() {
    std::string tmpl = (stdfs::temp_directory_path() / "reel_index_store.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    recorded_ = tmpl;
    ASSERT_TRUE(reel::testing::RecordTinyEpisodes(recorded_ + "/t", 32).ok());
    stdfs::remove(recorded_ + "/t/" + internal::kEpisodeIndexPath);
    stdfs::remove(recorded_ + "/t/" + internal::kListingIndexPath);
  }
  static void TearDownTestSuite() { stdfs::remove_all(recorded_); }
  void SetUp() override {
    std::string tmpl = (stdfs::temp_directory_path() / "reel_index_store.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    stdfs::copy(recorded_ + "/t", dir_ + "/t", stdfs::copy_options::recursive);
    // Settled: the caches remember only files and directories older than a few seconds.
    const auto past = stdfs::file_time_type::clock::now() - std::chrono::hours(1);
    for (const auto& e : stdfs::recursive_directory_iterator(dir_ + "/t")) stdfs::last_write_time(e.path(), past);
    stdfs::last_write_time(dir_ + "/t", past);
  }
  void TearDown() override { stdfs::remove_all(dir_); }

  // Lists the task and reads every episode's row through `fs` (the index's kUpdate path:
  // the rows' cache is used from 32 episodes on).
  void ReadRows(FileSystem* fs) {
    auto task = Task::Open(dir_ + "/t", {.fs = fs});
    ASSERT_TRUE(task.ok()) << task.status().ToString();
    auto episodes = (*task)->ListEpisodes();
    ASSERT_TRUE(episodes.ok()) << episodes.status().ToString();
    ASSERT_EQ(episodes->size(), 32u);
    for (const auto& row : (*task)->ReadEpisodeRows(*episodes)) ASSERT_TRUE(row.ok()) << row.status().ToString();
  }
  static inline std::string recorded_;
  std::string dir_;
};

TEST_F(EpisodeIndexStoreTest, WrittenOnALocalDisk) {
  ReadRows(DefaultFileSystem());
  EXPECT_TRUE(stdfs::exists(dir_ + "/t/" + internal::kEpisodeIndexPath));
  EXPECT_TRUE(stdfs::exists(dir_ + "/t/" + internal::kListingIndexPath));
}

TEST_F(EpisodeIndexStoreTest, NotWrittenWhereRenameIsNotAtomic) {
  NonAtomicRenameFs fs;
  ReadRows(&fs);
  EXPECT_FALSE(stdfs::exists(dir_ + "/t/" + internal::kEpisodeIndexPath));
  EXPECT_FALSE(stdfs::exists(dir_ + "/t/" + internal::kListingIndexPath));
  for (const auto& e : stdfs::directory_iterator(dir_ + "/t/meta"))
    EXPECT_EQ(e.path().filename().string().find(".probe"), std::string::npos) << e.path();
}

// Renames onto meta/.episode_index.parquet (each is one write of the whole index) while
// `read` lists the task and reads rows and schemas.
int IndexWrites(const std::string& root, const std::function<void(const Task&, const std::vector<EpisodeEntry>&)>& read) {
  testing::FaultFileSystem fs;
  fs.Log(testing::Ops({testing::FsOp::kRename}));
  auto task = Task::Open(root, {.fs = &fs});
  EXPECT_TRUE(task.ok()) << task.status().ToString();
  auto episodes = (*task)->ListEpisodes();
  EXPECT_TRUE(episodes.ok()) << episodes.status().ToString();
  read(**task, *episodes);
  int writes = 0;
  for (const std::string& call : fs.calls())
    writes += call.ends_with(std::string("/") + internal::kEpisodeIndexPath) ? 1 : 0;
  return writes;
}

// A first listing of a task that shows rows and schemas (reel ls, Task.episodes(), export)
// writes the index once (issue 31: it wrote it once for the rows, then again for the schemas).
TEST_F(EpisodeIndexStoreTest, AFirstListingWritesTheIndexOnce) {
  const std::string root = dir_ + "/t";
  EXPECT_EQ(IndexWrites(root, [](const Task& task, const std::vector<EpisodeEntry>& episodes) {
              auto [rows, schemas] = task.ReadRowsAndSchemas(episodes, {"length"});
              ASSERT_EQ(rows.size(), 32u);
              for (size_t i = 0; i < rows.size(); ++i) {
                ASSERT_TRUE(rows[i].ok()) << rows[i].status().ToString();
                ASSERT_TRUE(schemas[i].ok()) << schemas[i].status().ToString();
              }
            }),
            1);
  // Warm, nothing changed: nothing written.
  EXPECT_EQ(IndexWrites(root, [](const Task& task, const std::vector<EpisodeEntry>& episodes) {
              (void)task.ReadRowsAndSchemas(episodes, {"length"});
            }),
            0);
}

}  // namespace
}  // namespace reel
