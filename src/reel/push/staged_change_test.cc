// ChangeStoredTask (reel/push.h) against a "store" that, like an object store, has no
// rename and no lock, and the read-through staging file system under it
// (io/read_through_fs.h). The S3 end to end (import into s3://, killed at random
// moments) is tests/e2e/test_import_s3.py.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "io/read_through_fs.h"
#include "io/temp_name.h"
#include "layout/journal.h"
#include "reel/push.h"
#include "reel/task.h"
#include "testing/fault_fs.h"
#include "testing/tiny_rig.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

namespace stdfs = std::filesystem;

// A local directory standing in for an object store: it says it has no atomic rename and
// no locks, and refuses every rename and lock (counted()).
class NoRenameFileSystem : public testing::FaultFileSystem {
 public:
  NoRenameFileSystem() {
    SetCapabilities({.atomic_rename = false, .locks = false, .directories = true});
    Inject({.ops = testing::Ops({testing::FsOp::kRename, testing::FsOp::kLockFile}),
            .stays_down = true,
            .code = StatusCode::kNotSupported,
            .reason = "no rename or lock on this store"});
  }
};

class StagedChangeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (stdfs::temp_directory_path() / "reel_staged.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    store_root_ = dir_ + "/store/task";
  }
  void TearDown() override { stdfs::remove_all(dir_); }

  // Records `count` tiny episodes into the stored task through a staged change.
  Result<PushReport> Record(int count) {
    return ChangeStoredTask(&store_, store_root_, [count](FileSystem* fs, const std::string& root) -> Status {
      TaskWriterOptions options = SimulatedRigOptions("pick", testing::TinyRig());
      options.fs = fs;
      REEL_ASSIGN_OR_RETURN(auto writer, TaskWriter::Open(root, options));
      for (int i = 0; i < count; ++i) {
        REEL_ASSIGN_OR_RETURN(auto episode, writer->BeginEpisode());
        REEL_RETURN_IF_ERROR(SimulateEpisode(*episode, testing::TinyRig(), episode->episode_index()));
        REEL_RETURN_IF_ERROR(episode->Commit().status());
      }
      return Status::OK();
    });
  }

  std::vector<int64_t> Listed() {
    auto task = Task::Open(store_root_);
    EXPECT_OK(task);
    std::vector<int64_t> out;
    if (!task.ok()) return out;
    auto episodes = (*task)->ListEpisodes();
    EXPECT_OK(episodes);
    for (const EpisodeEntry& e : episodes.ValueOr({})) out.push_back(e.episode_index);
    return out;
  }

  std::string Read(const std::string& rel) {
    std::ifstream in(store_root_ + "/" + rel, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  void Put(const std::string& rel, const std::string& text) {
    stdfs::create_directories(stdfs::path(store_root_ + "/" + rel).parent_path());
    std::ofstream(store_root_ + "/" + rel) << text;
  }

  std::string dir_, store_root_;
  NoRenameFileSystem store_;
};

TEST_F(StagedChangeTest, RecordsIntoAStoreWithoutRenameAndContinuesItsNumbering) {
  auto first = Record(2);
  ASSERT_OK(first);
  EXPECT_EQ(first->sent, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(Listed(), (std::vector<int64_t>{1, 2}));
  auto second = Record(2);  // the staging directory sees 1 and 2 through the store
  ASSERT_OK(second);
  EXPECT_EQ(second->sent, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(Listed(), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(store_.counted(), 0) << "nothing renamed or locked at the store";
  EXPECT_FALSE(stdfs::exists(store_root_ + "/meta/.push-lock.json")) << "the lock is released";
  EXPECT_TRUE(internal::PushJournals(&store_, store_root_).ValueOr({-1}).empty());
}

TEST_F(StagedChangeTest, AFailedChangePublishesWhatItCommittedAndReturnsItsError) {
  auto report = ChangeStoredTask(&store_, store_root_, [](FileSystem* fs, const std::string& root) -> Status {
    TaskWriterOptions options = SimulatedRigOptions("pick", testing::TinyRig());
    options.fs = fs;
    REEL_ASSIGN_OR_RETURN(auto writer, TaskWriter::Open(root, options));
    REEL_ASSIGN_OR_RETURN(auto episode, writer->BeginEpisode());
    REEL_RETURN_IF_ERROR(SimulateEpisode(*episode, testing::TinyRig(), 1));
    REEL_RETURN_IF_ERROR(episode->Commit().status());
    return Status::IOError("the second episode failed");
  });
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().message(), "the second episode failed");
  EXPECT_EQ(Listed(), (std::vector<int64_t>{1}));
}

TEST_F(StagedChangeTest, RollsBackWhatAKilledStagedChangeLeftHidden) {
  ASSERT_OK(Record(1));
  // Episode 2 as a killed staged push leaves it: journal, some files, no lock release.
  Put("data/chunk-000/episode-001.parquet", "partial");
  Put("meta/.push-2.json", R"({"episode_index":2,"staged":true,"files":["data/chunk-000/episode-001.parquet",)"
                           R"("meta/episodes/chunk-000/episode-001.parquet"]})");
  EXPECT_EQ(Listed(), (std::vector<int64_t>{1})) << "readers hide 2 while its journal exists";
  auto report = Record(1);
  ASSERT_OK(report);
  EXPECT_EQ(report->sent, (std::vector<int64_t>{2})) << "2 was rolled back, then made again";
  EXPECT_EQ(Listed(), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(internal::PushJournals(&store_, store_root_).ValueOr({-1}).empty());
}

TEST_F(StagedChangeTest, RollsForwardAChangeKilledAfterItsCommitPoint) {
  ASSERT_OK(Record(2));
  // Episode 2 as a staged change killed after writing its change journal: every file is
  // there, its journal still hides it, and the change journal holds the new task files.
  const std::string stats = Read("meta/stats.json");
  Put("meta/.push-2.json", R"({"episode_index":2,"staged":true,"files":[]})");
  Put("meta/stats.json", "{}");  // the older task files, as before that change
  EXPECT_EQ(Listed(), (std::vector<int64_t>{1}));
  nlohmann::ordered_json change = {{"episodes", {2}}, {"files", {{"meta/stats.json", stats}}}};
  Put("meta/.push-change.json", change.dump());
  auto report = Record(1);
  ASSERT_OK(report);
  EXPECT_EQ(report->sent, (std::vector<int64_t>{3}));
  EXPECT_EQ(Listed(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_FALSE(stdfs::exists(store_root_ + "/meta/.push-change.json"));

  Put("meta/.push-change.json", R"({"episodes":[],"files":{"../../outside.txt":"x"}})");
  auto hostile = Record(1);
  ASSERT_FALSE(hostile.ok());
  EXPECT_EQ(hostile.status().code(), StatusCode::kCorruption);
  EXPECT_THAT(hostile.status().message(), ::testing::HasSubstr("not a task file")) << hostile.status().message();
  EXPECT_FALSE(stdfs::exists(dir_ + "/outside.txt"));
}

TEST_F(StagedChangeTest, RefusesAJournalOfAPlainPushAndOneListingFilesOutsideTheTask) {
  ASSERT_OK(Record(1));
  Put("meta/.push-2.json", R"({"episode_index":2,"files":["data/chunk-000/episode-001.parquet"]})");
  auto plain = Record(1);
  ASSERT_FALSE(plain.ok());
  EXPECT_EQ(plain.status().code(), StatusCode::kNotSupported);
  EXPECT_THAT(plain.status().message(), ::testing::HasSubstr("re-run that push")) << plain.status().message();

  Put("../outside.txt", "keep me");
  Put("meta/.push-2.json", R"({"episode_index":2,"staged":true,"files":["../outside.txt"]})");
  auto hostile = Record(1);
  ASSERT_FALSE(hostile.ok());
  EXPECT_EQ(hostile.status().code(), StatusCode::kInvalid);
  EXPECT_THAT(hostile.status().message(), ::testing::HasSubstr("not a path inside the task"));
  EXPECT_TRUE(stdfs::exists(dir_ + "/store/outside.txt"));
  EXPECT_EQ(Listed(), (std::vector<int64_t>{1}));
}

TEST_F(StagedChangeTest, TornJournalsOfALocalDestination) {
  ASSERT_OK(Record(1));
  Put("meta/.push-change.json", R"({"episodes":[2],"fi)");  // killed while written: never committed
  auto report = Record(1);
  ASSERT_OK(report);
  EXPECT_FALSE(stdfs::exists(store_root_ + "/meta/.push-change.json"));
  EXPECT_EQ(Listed(), (std::vector<int64_t>{1, 2}));
  Put("meta/.push-3.json", "");  // cannot say it is staged: left for its push
  auto torn = Record(1);
  ASSERT_FALSE(torn.ok());
  EXPECT_EQ(torn.status().code(), StatusCode::kNotSupported) << torn.status().ToString();
}

// Journals are bounded by their size before they are read (sparse files: nothing is
// allocated): an oversized change journal stops the change, an oversized push journal
// cannot say it is staged and is left for its push.
TEST_F(StagedChangeTest, OversizedJournalsAreNotRead) {
  ASSERT_OK(Record(1));
  Put("meta/.push-change.json", "{}");
  stdfs::resize_file(store_root_ + "/meta/.push-change.json", (uintmax_t{256} << 20) + 1);
  auto big = Record(1);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kCorruption) << big.status().ToString();
  EXPECT_THAT(big.status().message(), ::testing::HasSubstr("over the 256 MiB")) << big.status().message();
  stdfs::remove(store_root_ + "/meta/.push-change.json");
  Put("meta/.push-2.json", R"({"episode_index":2,"staged":true,"files":[]})");
  stdfs::resize_file(store_root_ + "/meta/.push-2.json", (uintmax_t{1} << 20) + 1);
  auto left = Record(1);
  ASSERT_FALSE(left.ok());
  EXPECT_EQ(left.status().code(), StatusCode::kNotSupported) << left.status().ToString();
  EXPECT_EQ(Listed(), (std::vector<int64_t>{1}));
}

TEST_F(StagedChangeTest, AnotherWritersLiveLockIsRefused) {
  Put("meta/.push-lock.json", R"({"holder":"elsewhere:1:2","expires_at":4102444800})");
  auto report = Record(1);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), StatusCode::kAlreadyExists);
  EXPECT_FALSE(stdfs::exists(store_root_ + "/meta/info.json"));
}

// A push killed while replacing a task file on a disk destination leaves its temp; the next
// writer at the destination removes it once its writer is gone, never a live one's.
TEST(PushTempsTest, ADeadPushsTaskFileTempGoesAndALiveOneStays) {
  std::string tmpl = (stdfs::temp_directory_path() / "reel_push_temps.XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const std::string task = tmpl + "/task", dest = tmpl + "/dest";
  ASSERT_OK(testing::RecordTinyEpisodes(task, 1));
  ASSERT_OK(PushTask(task, DefaultFileSystem(), dest));
  const pid_t child = ::fork();  // a pid that is gone once reaped
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  const std::string prefix = dest + "/meta/.info.json.replace.reel-" + internal::HostId() + "-";
  const std::string dead = prefix + std::to_string(child) + "-1.tmp";
  const std::string live = prefix + std::to_string(::getpid()) + "-1.tmp";
  std::ofstream(dead) << "half a task file";
  std::ofstream(live) << "a running push's";
  ASSERT_OK(testing::RecordTinyEpisodes(task, 1));
  auto pushed = PushTask(task, DefaultFileSystem(), dest);
  ASSERT_OK(pushed);
  EXPECT_FALSE(stdfs::exists(dead));
  EXPECT_TRUE(stdfs::exists(live));
  EXPECT_EQ(pushed->task_files_sent.size(), 2u) << "info.json and stats.json: replaced by rename";
  stdfs::remove_all(tmpl);
}

// The staging file system on its own: reads through, lists the union, writes locally.
TEST(ReadThroughFileSystemTest, ReadsThroughListsTheUnionAndWritesLocally) {
  std::string tmpl = (stdfs::temp_directory_path() / "reel_rt.XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const std::string local = tmpl + "/local", store = tmpl + "/store";
  stdfs::create_directories(local + "/meta");
  stdfs::create_directories(store + "/meta");
  std::ofstream(store + "/meta/info.json") << "stored";
  std::ofstream(store + "/meta/.push-lock.json") << "lock";
  std::ofstream(local + "/meta/stats.json") << "staged";
  NoRenameFileSystem store_fs;
  internal::ReadThroughFileSystem fs(DefaultFileSystem(), local, &store_fs, store);

  EXPECT_EQ(*fs.ReadFile(local + "/meta/info.json"), "stored");
  EXPECT_EQ(*fs.ReadFile(local + "/meta/stats.json"), "staged");
  EXPECT_EQ(fs.Stat(local + "/meta/.push-lock.json")->type, FileType::kNotFound) << "the store's dotfiles stay there";
  std::vector<std::string> names;
  auto entries = fs.ListDir(local + "/meta");
  ASSERT_OK(entries);
  for (const DirEntry& e : *entries) names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{"info.json", "stats.json"}));

  ASSERT_OK(WriteFileAtomic(&fs, local + "/meta/info.json", "new"));
  EXPECT_EQ(*fs.ReadFile(local + "/meta/info.json"), "new") << "the staged copy wins";
  std::ifstream stored(store + "/meta/info.json");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(stored), {}), "stored") << "the store is never written";

  std::ofstream(store + "/meta/tasks.jsonl") << "{}";
  EXPECT_EQ(fs.Rename(local + "/meta/tasks.jsonl", local + "/meta/x").code(), StatusCode::kNotSupported);
  EXPECT_EQ(fs.RemoveFile(local + "/meta/tasks.jsonl").code(), StatusCode::kNotSupported);
  EXPECT_TRUE(stdfs::exists(store + "/meta/tasks.jsonl"));
  EXPECT_EQ(store_fs.counted(), 0);
  stdfs::remove_all(tmpl);
}

}  // namespace
}  // namespace reel
