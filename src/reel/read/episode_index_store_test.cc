// The episode index is written only where the file system says Rename is atomic
// (FileSystem::Capabilities), not where a probe rename happens to fail: a store whose Rename
// copies and deletes would otherwise publish a torn cache.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "read/episode_index.h"
#include "reel/fs.h"
#include "reel/task.h"
#include "testing/tiny_rig.h"

namespace reel {
namespace {

namespace stdfs = std::filesystem;

// Renames work (by copy, say) but are not atomic, and the store says so.
class NonAtomicRenameFs final : public FileSystemWrapper {
 public:
  NonAtomicRenameFs() : FileSystemWrapper(DefaultFileSystem()) {}
  FileSystemCapabilities Capabilities() const override {
    return {.atomic_rename = false, .locks = false, .directories = false};
  }
};

class EpisodeIndexStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (stdfs::temp_directory_path() / "reel_index_store.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    ASSERT_TRUE(reel::testing::RecordTinyEpisodes(dir_ + "/t", 2).ok());
    stdfs::remove(dir_ + "/t/" + internal::kEpisodeIndexPath);
  }
  void TearDown() override { stdfs::remove_all(dir_); }

  // Reads every episode's row through `fs` (the index's kUpdate path).
  void ReadRows(FileSystem* fs) {
    auto task = Task::Open(dir_ + "/t", {.fs = fs});
    ASSERT_TRUE(task.ok()) << task.status().ToString();
    auto episodes = (*task)->ListEpisodes();
    ASSERT_TRUE(episodes.ok()) << episodes.status().ToString();
    ASSERT_EQ(episodes->size(), 2u);
    for (const auto& row : (*task)->ReadEpisodeRows(*episodes)) ASSERT_TRUE(row.ok()) << row.status().ToString();
  }
  std::string dir_;
};

TEST_F(EpisodeIndexStoreTest, WrittenOnALocalDisk) {
  ReadRows(DefaultFileSystem());
  EXPECT_TRUE(stdfs::exists(dir_ + "/t/" + internal::kEpisodeIndexPath));
}

TEST_F(EpisodeIndexStoreTest, NotWrittenWhereRenameIsNotAtomic) {
  NonAtomicRenameFs fs;
  ReadRows(&fs);
  EXPECT_FALSE(stdfs::exists(dir_ + "/t/" + internal::kEpisodeIndexPath));
  for (const auto& e : stdfs::directory_iterator(dir_ + "/t/meta"))
    EXPECT_EQ(e.path().filename().string().find(".probe"), std::string::npos) << e.path();
}

}  // namespace
}  // namespace reel
