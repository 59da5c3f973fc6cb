// Confinement of the paths a task's own files name (layout/confined.h), and issue 27's
// finding 1 end to end: a forged commit journal plus a symbolic link inside the task, a
// journal for an episode the task lacks, and a staged push journal through a link. Each
// is refused before anything is touched, and nothing outside the task changes.
#include "layout/confined.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "io/scratch_dir.h"
#include "layout/journal.h"
#include "push/push_internal.h"
#include "reel/push.h"
#include "reel/task.h"
#include "testing/tiny_rig.h"
#include "write/transaction.h"
#include "testing/status_matchers.h"

namespace reel::internal {
namespace {

namespace stdfs = std::filesystem;

class ConfinedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto scratch = ScratchDir::Create("reel_confined", stdfs::temp_directory_path().string());
    ASSERT_OK(scratch);
    scratch_ = std::move(*scratch);
    dir_ = scratch_->path();
    root_ = dir_ + "/task";
    outside_ = dir_ + "/elsewhere";
    stdfs::create_directories(root_ + "/meta");
    stdfs::create_directories(outside_);
    Put(outside_ + "/victim.conf", "the user's configuration");
    Put(outside_ + "/secret.txt", "the user's secret");
  }
  static void Put(const std::string& path, const std::string& text) {
    stdfs::create_directories(stdfs::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << text;
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  void ExpectOutsideUntouched() const {
    EXPECT_EQ(Read(outside_ + "/victim.conf"), "the user's configuration");
    EXPECT_EQ(Read(outside_ + "/secret.txt"), "the user's secret");
    size_t entries = 0;
    std::string names;
    for (const auto& e : stdfs::recursive_directory_iterator(outside_)) {
      ++entries;
      names += " " + e.path().string();
    }
    EXPECT_EQ(entries, 2u) << names;
  }

  std::unique_ptr<ScratchDir> scratch_;  // removed with the fixture
  std::string dir_, root_, outside_;
};

TEST_F(ConfinedTest, ALinkOnThePathIsRefusedWhereverItIs) {
  stdfs::create_directories(root_ + "/data/chunk-000");
  stdfs::create_directory_symlink(outside_, root_ + "/meta/cache");
  stdfs::create_symlink(outside_ + "/victim.conf", root_ + "/data/chunk-000/episode-000.parquet");
  FileSystem* fs = DefaultFileSystem();
  EXPECT_OK(CheckBeneath(fs, root_, "meta/info.json", "t"));
  EXPECT_OK(CheckBeneath(fs, root_, "videos/chunk-000/cam/episode-000.mp4", "t"));  // not there yet
  for (const char* rel : {"meta/cache/victim.conf", "meta/cache", "data/chunk-000/episode-000.parquet"}) {
    Status st = CheckBeneath(fs, root_, rel, "the journal");
    EXPECT_EQ(st.code(), StatusCode::kInvalid) << rel;
    EXPECT_THAT(st.message(), ::testing::HasSubstr("symbolic link")) << st.message();
    EXPECT_THAT(st.message(), ::testing::HasSubstr("the journal")) << st.message();
  }
  for (const char* rel : {"../elsewhere/victim.conf", "/etc/passwd", "meta/./info.json", "meta//info.json", ""}) {
    Status st = CheckBeneath(fs, root_, rel, "the journal");
    EXPECT_EQ(st.code(), StatusCode::kInvalid) << rel;
    EXPECT_THAT(st.message(), ::testing::HasSubstr("not a path inside the task")) << st.message();
  }
  // The root itself may be a link: it is the caller's choice, not the task's bytes.
  stdfs::create_directory_symlink(root_, dir_ + "/task-link");
  EXPECT_OK(CheckBeneath(fs, dir_ + "/task-link", "meta/info.json", "t"));
}

// The issue's example: meta/cache -> elsewhere and a journal renaming into it and
// removing from it. Every writer's lock runs recovery; it stops, and leaves both.
TEST_F(ConfinedTest, AForgedJournalThroughALinkChangesNothingOutside) {
  ASSERT_OK(testing::RecordTinyEpisodes(root_, 2));
  stdfs::create_directory_symlink(outside_, root_ + "/meta/cache");
  Put(root_ + "/meta/payload", "attacker's bytes");
  Put(root_ + "/meta/.commit-7.json",
      R"({"renames":[["meta/payload","meta/cache/victim.conf"]],"removes":["meta/cache/secret.txt"]})");
  auto lock = TaskLock::Acquire(DefaultFileSystem(), root_);
  ASSERT_FALSE(lock.ok());
  EXPECT_EQ(lock.status().code(), StatusCode::kInvalid);
  EXPECT_THAT(lock.status().message(), ::testing::HasSubstr(".commit-7.json")) << lock.status().message();
  ExpectOutsideUntouched();
  EXPECT_TRUE(stdfs::exists(root_ + "/meta/.commit-7.json"));  // left for a person

  // Shaped as reel writes its journals (a temp beside an episode file of 7), with the
  // task's templates pointed through the link: the link still stops it.
  Put(root_ + "/meta/.commit-7.json",
      R"({"episode_index":7,"renames":[["meta/cache/.victim.conf.reel-h-1-1.tmp","meta/cache/victim.conf"]]})");
  lock = TaskLock::Acquire(DefaultFileSystem(), root_);
  ASSERT_FALSE(lock.ok());
  ExpectOutsideUntouched();
}

TEST_F(ConfinedTest, AJournalThroughALinkedDataFolderIsRefusedBeforeAnyRename) {
  ASSERT_OK(testing::RecordTinyEpisodes(root_, 2));
  // data/chunk-000 replaced by a link to elsewhere (as a copy by a tool that keeps links).
  stdfs::rename(root_ + "/data/chunk-000", dir_ + "/moved-chunk");
  stdfs::create_directory_symlink(outside_, root_ + "/data/chunk-000");
  Put(root_ + "/meta/.x.reel-h-1-1.tmp", "{}");
  Put(root_ + "/meta/.commit-3.json",
      R"({"episode_index":3,"renames":[["meta/.x.reel-h-1-1.tmp","meta/info.json"]],)"
      R"("removes":["data/chunk-000/episode-002.parquet"]})");
  Put(outside_ + "/episode-002.parquet", "not the task's");
  const std::string info_before = Read(root_ + "/meta/info.json");
  auto lock = TaskLock::Acquire(DefaultFileSystem(), root_);
  ASSERT_FALSE(lock.ok());
  EXPECT_THAT(lock.status().message(), ::testing::HasSubstr("\"data/chunk-000\"")) << lock.status().message();
  EXPECT_EQ(Read(outside_ + "/episode-002.parquet"), "not the task's");
  EXPECT_EQ(Read(root_ + "/meta/info.json"), info_before);  // the rename before it did not happen either
}

// A journal for an episode the task lacks may not remove another episode's files (before:
// episode 1's data went, and check said OK).
TEST_F(ConfinedTest, AJournalMayNameOnlyItsOwnEpisodesFiles) {
  ASSERT_OK(testing::RecordTinyEpisodes(root_, 2));
  auto task = Task::Open(root_);
  ASSERT_OK(task);
  auto one = (*task)->FindEpisode(1);
  ASSERT_OK(one);
  const std::string data_one = root_ + "/" + one->data_path;
  for (const std::string& journal : std::vector<std::string>{
           R"({"episode_index":9,"removes":[")" + one->data_path + R"("]})",
        R"({"episode_index":1,"removes":[")" + one->data_path + R"("]})",  // says 1, is named 9
        R"({"removes":[")" + one->data_path + R"("]})",
           R"({"episode_index":9,"renames":[["meta/stats.json","meta/info.json"]]})"}) {
    Put(root_ + "/meta/.commit-9.json", journal);
    auto lock = TaskLock::Acquire(DefaultFileSystem(), root_);
    ASSERT_FALSE(lock.ok()) << journal;
    EXPECT_EQ(lock.status().code(), StatusCode::kInvalid) << journal;
    EXPECT_THAT(lock.status().message(), ::testing::HasSubstr("left for a person")) << lock.status().message();
    EXPECT_TRUE(stdfs::exists(data_one)) << journal;
    EXPECT_TRUE(stdfs::exists(root_ + "/meta/stats.json")) << journal;
  }
  stdfs::remove(root_ + "/meta/.commit-9.json");
  EXPECT_OK(TaskLock::Acquire(DefaultFileSystem(), root_));
}

// A task's first commit cut before its info.json was renamed in: its templates are in that
// commit's own temp, so the journal is rolled forward on confinement alone (a forged one
// there has no committed episode to take from).
TEST_F(ConfinedTest, TheFirstCommitOfANewTaskIsRolledForward) {
  Put(root_ + "/custom/.ep-000.parquet.commit.reel-h-1-1.tmp", "data");
  Put(root_ + "/meta/.info.json.commit.reel-h-1-2.tmp", "{}");
  Put(root_ + "/meta/.commit-1.json",
      R"({"episode_index":1,"renames":[["custom/.ep-000.parquet.commit.reel-h-1-1.tmp","custom/ep-000.parquet"],)"
      R"(["meta/.info.json.commit.reel-h-1-2.tmp","meta/info.json"]]})");
  auto lock = TaskLock::Acquire(DefaultFileSystem(), root_);
  ASSERT_OK(lock);
  EXPECT_EQ(Read(root_ + "/custom/ep-000.parquet"), "data");
  EXPECT_FALSE(stdfs::exists(root_ + "/meta/.commit-1.json"));
}

// A writer does not write through a link inside the task either: the recording fails,
// naming the link, and nothing lands outside.
TEST_F(ConfinedTest, AWriterRefusesToWriteThroughALinkInsideTheTask) {
  ASSERT_OK(testing::RecordTinyEpisodes(root_, 1));
  stdfs::rename(root_ + "/data", dir_ + "/moved-data");
  stdfs::create_directory_symlink(outside_, root_ + "/data");
  Status st = testing::RecordTinyEpisodes(root_, 1);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), ::testing::HasSubstr("symbolic link \"data\"")) << st.message();
  ExpectOutsideUntouched();
}

// reel push's staged journal at a destination (RollBackStagedEpisodes): a file it lists
// through a link is not removed.
TEST_F(ConfinedTest, AStagedPushJournalThroughALinkRemovesNothing) {
  ASSERT_OK(testing::RecordTinyEpisodes(root_, 1));
  const std::string dest = dir_ + "/dest";
  ASSERT_OK(PushTask(root_, DefaultFileSystem(), dest));
  stdfs::create_directory_symlink(outside_, dest + "/meta/cache");
  Put(dest + "/meta/.push-2.json", R"({"episode_index":2,"staged":true,"files":["meta/cache/secret.txt"]})");
  auto recovered = RecoverStagedPushes(DefaultFileSystem(), dest);
  ASSERT_FALSE(recovered.ok());
  EXPECT_EQ(recovered.status().code(), StatusCode::kInvalid);
  EXPECT_THAT(recovered.status().message(), ::testing::HasSubstr("symbolic link")) << recovered.status().message();
  ExpectOutsideUntouched();
  auto again = PushTask(root_, DefaultFileSystem(), dest);  // a push to it stops the same way
  ASSERT_FALSE(again.ok());
  ExpectOutsideUntouched();
}

}  // namespace
}  // namespace reel::internal
