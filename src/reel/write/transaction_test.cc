// EpisodeTransaction (write/transaction.h) on its own: numbering, tracked temps, commit,
// abort and the recycled marker. Crash and I/O-fault behaviour of the commit is covered
// through the recorder in recorder_fault_test.cc.
#include "write/transaction.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "io/temp_name.h"
#include "util/json_util.h"
#include "reel/layout.h"
#include "reel/task.h"
#include "write/task_files.h"
#include "testing/status_matchers.h"

namespace reel::internal {
namespace {

namespace stdfs = std::filesystem;

class TransactionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (stdfs::temp_directory_path() / "reel_txn.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { stdfs::remove_all(root_); }

  bool Exists(const std::string& rel) const { return stdfs::exists(stdfs::path(root_) / rel); }
  std::string Read(const std::string& rel) const {
    std::ifstream in(stdfs::path(root_) / rel, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // Dotfiles anywhere under the root but the lock file: leftovers of a transaction.
  std::vector<std::string> Leftovers() const {
    std::vector<std::string> out;
    for (const auto& e : stdfs::recursive_directory_iterator(root_)) {
      const std::string name = e.path().filename().string();
      if (e.is_regular_file() && name.starts_with(".") && name != ".lock") out.push_back(e.path().string());
    }
    return out;
  }

  // The files of a minimal episode N, written as temps of `txn`, and the update.
  TaskFilesUpdate WriteEpisode(EpisodeTransaction* txn) {
    FileSystem* fs = DefaultFileSystem();
    const int64_t n = txn->episode_index();
    InfoJson info = *LoadInfo(fs, root_);
    const EpisodeLocation loc = LocateEpisode(n, info.chunks_size);
    const PathVars vars{loc.chunk, loc.file, n, std::nullopt, std::nullopt};
    const std::string row_rel = PathTemplate::Parse(info.episodes_path)->Render(vars).ValueOr("");
    EpisodeRow row;
    row.episode_index = n;
    auto temp = txn->NewTemp(row_rel, "test");
    EXPECT_OK(temp);
    EXPECT_OK(WriteEpisodeRow(fs, *temp, row));
    TaskFilesUpdate update;
    update.declaration.format = "pooled_episodes_v1";
    update.declaration.codebase_version = "v3.0";
    update.declaration.fps = 30;
    update.declaration.task_name = "t";
    update.tasks_jsonl = "{\"task_index\": 0, \"task\": \"t\"}\n";
    return update;
  }

  std::vector<int64_t> Listed() const {
    auto task = Task::Open(root_, {DefaultFileSystem(), 0});
    std::vector<int64_t> out;
    if (!task.ok()) return out;
    for (const EpisodeEntry& e : (*task)->ListEpisodes().ValueOr({})) out.push_back(e.episode_index);
    return out;
  }

  std::string root_;
};

TEST_F(TransactionTest, ReserveCommitPublishesEverythingAndLeavesNoTemps) {
  auto txn = EpisodeTransaction::Reserve(DefaultFileSystem(), root_, 0);
  ASSERT_OK(txn);
  EXPECT_EQ((*txn)->episode_index(), 1);
  EXPECT_EQ(Leftovers().size(), 1u);  // the reservation
  TaskFilesUpdate update = WriteEpisode(txn->get());
  ASSERT_OK((*txn)->Commit(update));
  EXPECT_TRUE((*txn)->decided());
  EXPECT_TRUE(Exists(kInfoPath));
  EXPECT_TRUE(Exists(kStatsPath));
  EXPECT_EQ(Read(kTasksPath), update.tasks_jsonl);
  EXPECT_EQ(Listed(), std::vector<int64_t>{1});
  EXPECT_TRUE(Leftovers().empty());
  EXPECT_EQ((*txn)->Commit(update).code(), StatusCode::kInvalid);  // once only
}

TEST_F(TransactionTest, AbortOfAReservationRecyclesTheNumberAndRemovesTemps) {
  {
    auto first = EpisodeTransaction::Reserve(DefaultFileSystem(), root_, 0);
    ASSERT_OK(first);
    ASSERT_OK((*first)->Commit(WriteEpisode(first->get())));
  }
  auto txn = EpisodeTransaction::Reserve(DefaultFileSystem(), root_, 0);
  ASSERT_OK(txn);
  EXPECT_EQ((*txn)->episode_index(), 2);
  (void)WriteEpisode(txn->get());
  ASSERT_OK((*txn)->Abort());
  EXPECT_TRUE(Leftovers().empty());
  auto marker = ParseJson(Read(kRecycledPath), "marker");
  ASSERT_OK(marker);
  EXPECT_EQ((*marker)["episode_index"], 2);
  // The next reservation takes the recycled number even past a watermark, and its
  // commit clears the marker (reference behaviour).
  auto again = EpisodeTransaction::Reserve(DefaultFileSystem(), root_, 50);
  ASSERT_OK(again);
  EXPECT_EQ((*again)->episode_index(), 2);
  ASSERT_OK((*again)->Commit(WriteEpisode(again->get())));
  EXPECT_FALSE(Exists(kRecycledPath));
  EXPECT_EQ(Listed(), (std::vector<int64_t>{1, 2}));
}

TEST_F(TransactionTest, DestructorAbortsAnUncommittedTransaction) {
  {
    auto txn = EpisodeTransaction::Reserve(DefaultFileSystem(), root_, 0);
    ASSERT_OK(txn);
    (void)WriteEpisode(txn->get());
    EXPECT_EQ(Leftovers().size(), 2u);  // reservation + episodes-row temp
  }
  EXPECT_TRUE(Leftovers().empty());
  EXPECT_TRUE(Exists(kRecycledPath));
  EXPECT_TRUE(Listed().empty());
}

TEST_F(TransactionTest, ReservationsKeepConcurrentWritersApart) {
  auto a = EpisodeTransaction::Reserve(DefaultFileSystem(), root_, 0);
  auto b = EpisodeTransaction::Reserve(DefaultFileSystem(), root_, 0);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)->episode_index(), 1);
  EXPECT_EQ((*b)->episode_index(), 2);
  // b commits first: a's number stays its own.
  ASSERT_OK((*b)->Commit(WriteEpisode(b->get())));
  ASSERT_OK((*a)->Commit(WriteEpisode(a->get())));
  EXPECT_EQ(Listed(), (std::vector<int64_t>{1, 2}));
}

TEST_F(TransactionTest, UnderAHeldLockNumbersAreGivenOrChosenAndFilesAdopted) {
  auto lock = TaskLock::Acquire(DefaultFileSystem(), root_);
  ASSERT_OK(lock);
  EXPECT_EQ(EpisodeTransaction::Begin(&*lock, 0).status().code(), StatusCode::kInvalid);
  {
    auto txn = EpisodeTransaction::Begin(&*lock, 7);
    ASSERT_OK(txn);
    EXPECT_EQ((*txn)->episode_index(), 7);
    // A file written elsewhere on the same file system is moved in.
    const std::string outside = root_ + "/outside.bin";
    std::ofstream(outside) << "bytes";
    ASSERT_OK((*txn)->Adopt(outside, "extra/kept.bin"));
    EXPECT_FALSE(stdfs::exists(outside));
    ASSERT_OK((*txn)->Commit(WriteEpisode(txn->get())));
    EXPECT_EQ(Read("extra/kept.bin"), "bytes");
  }
  auto next = EpisodeTransaction::Begin(&*lock, std::nullopt);
  ASSERT_OK(next);
  EXPECT_EQ((*next)->episode_index(), 8);
  (void)WriteEpisode(next->get());
  ASSERT_OK((*next)->Abort());
  EXPECT_FALSE(Exists(kRecycledPath));  // no reservation, nothing to recycle
  EXPECT_TRUE(Leftovers().empty());
  EXPECT_EQ(Listed(), std::vector<int64_t>{7});
}

TEST_F(TransactionTest, AnAdoptThatFailsTracksNothing) {
  auto lock = TaskLock::Acquire(DefaultFileSystem(), root_);
  ASSERT_OK(lock);
  auto txn = EpisodeTransaction::Begin(&*lock, 3);
  ASSERT_OK(txn);
  EXPECT_FALSE((*txn)->Adopt(root_ + "/missing", "data/x.parquet").ok());
  ASSERT_OK((*txn)->Commit(WriteEpisode(txn->get())));
  EXPECT_FALSE(Exists("data/x.parquet"));
  EXPECT_EQ(Listed(), std::vector<int64_t>{3});
}

// A task change (what the maintenance tools commit): temps published over existing files,
// removals after them, the task files untouched, and the journal gone.
TEST_F(TransactionTest, ATaskChangeReplacesAndRemovesFilesInOneCommit) {
  stdfs::create_directories(stdfs::path(root_) / "meta/episodes");
  std::ofstream(stdfs::path(root_) / "meta/old.txt") << "old";
  std::ofstream(stdfs::path(root_) / "meta/gone.txt") << "gone";
  auto lock = TaskLock::Acquire(DefaultFileSystem(), root_);
  ASSERT_OK(lock);
  auto txn = EpisodeTransaction::BeginTaskChange(&*lock);
  EXPECT_EQ(txn->episode_index(), kTaskChange);
  auto temp = txn->NewTemp("meta/old.txt", "test");
  ASSERT_OK(temp);
  std::ofstream(*temp) << "new";
  txn->Remove("meta/gone.txt");
  txn->Remove("meta/never-there.txt");
  EXPECT_EQ(txn->Commit({}).code(), StatusCode::kInvalid);  // a task change merges no task files
  txn.reset();                                               // aborted: its temp removed
  auto again = EpisodeTransaction::BeginTaskChange(&*lock);
  temp = again->NewTemp("meta/old.txt", "test");
  ASSERT_OK(temp);
  std::ofstream(*temp) << "new";
  again->Remove("meta/gone.txt");
  again->Remove("meta/never-there.txt");
  ASSERT_OK(again->CommitFiles());
  EXPECT_TRUE(again->decided());
  EXPECT_EQ(Read("meta/old.txt"), "new");
  EXPECT_FALSE(Exists("meta/gone.txt"));
  EXPECT_FALSE(Exists(kInfoPath));
  EXPECT_TRUE(Leftovers().empty());
}

// A task change killed after its journal was written is rolled forward by the next writer
// (renames, then removals); a journal naming a path outside the task is refused whole.
TEST_F(TransactionTest, AnInterruptedTaskChangeIsRolledForwardAndAnUnsafeOneRefused) {
  stdfs::create_directories(stdfs::path(root_) / "meta/episodes");
  std::ofstream(stdfs::path(root_) / "meta/.stats.json.t.tmp") << "rebuilt";
  std::ofstream(stdfs::path(root_) / "meta/stats.json") << "old";
  std::ofstream(stdfs::path(root_) / "meta/shard.parquet") << "shard";
  std::ofstream(stdfs::path(root_) / "meta/.commit-task.json")
      << R"({"renames": [["meta/.stats.json.t.tmp", "meta/stats.json"]], "removes": ["meta/shard.parquet"]})";
  ASSERT_OK(TaskLock::Acquire(DefaultFileSystem(), root_));
  EXPECT_EQ(Read("meta/stats.json"), "rebuilt");
  EXPECT_FALSE(Exists("meta/shard.parquet"));
  EXPECT_FALSE(Exists("meta/.commit-task.json"));

  for (const char* journal : {R"({"renames": [["meta/stats.json", "../outside"]]})",
                              R"({"removes": ["/etc/passwd"]})", R"({"removes": ["meta/./stats.json"]})",
                              R"({"renames": "x"})", R"([1])"}) {
    std::ofstream(stdfs::path(root_) / "meta/.commit-task.json") << journal;
    auto lock = TaskLock::Acquire(DefaultFileSystem(), root_);
    EXPECT_EQ(lock.status().code(), StatusCode::kInvalid) << journal;
    EXPECT_THAT(lock.status().ToString(), ::testing::HasSubstr(".commit-task.json")) << lock.status().ToString();
    EXPECT_EQ(Read("meta/stats.json"), "rebuilt") << journal;
    EXPECT_TRUE(Exists("meta/.commit-task.json"));
  }
}

// Re-recording a number (contract §6.1): only a number recorded before; a live one only
// with replace; an aborted re-recording is not offered to the next recording.
TEST_F(TransactionTest, ReserveNumberTakesOnlyARecordedNumberAndALiveOneOnlyWithReplace) {
  FileSystem* fs = DefaultFileSystem();
  EXPECT_EQ(EpisodeTransaction::ReserveNumber(fs, root_, 1, false).status().code(), StatusCode::kInvalid);
  for (int i = 0; i < 2; ++i) {
    auto txn = EpisodeTransaction::Reserve(fs, root_, 0);
    ASSERT_OK(txn);
    ASSERT_OK((*txn)->Commit(WriteEpisode(txn->get())));
  }
  // Episode 1 gets a data file (live); episode 2 keeps only its row (its data was deleted).
  stdfs::create_directories(stdfs::path(root_) / "data/chunk-000");
  std::ofstream(stdfs::path(root_) / "data/chunk-000/episode-000.parquet") << "data";
  EXPECT_EQ(EpisodeTransaction::ReserveNumber(fs, root_, 0, false).status().code(), StatusCode::kInvalid);
  auto never = EpisodeTransaction::ReserveNumber(fs, root_, 3, false);
  EXPECT_EQ(never.status().code(), StatusCode::kInvalid);
  EXPECT_THAT(never.status().message(), ::testing::HasSubstr("highest recorded is 2")) << never.status().ToString();
  auto live = EpisodeTransaction::ReserveNumber(fs, root_, 1, false);
  EXPECT_EQ(live.status().code(), StatusCode::kAlreadyExists);
  EXPECT_THAT(live.status().message(), ::testing::HasSubstr("replace"));
  {
    auto replaced = EpisodeTransaction::ReserveNumber(fs, root_, 1, true);
    ASSERT_OK(replaced);
    EXPECT_EQ((*replaced)->episode_index(), 1);
    // Another writer cannot take a number a live reservation holds.
    EXPECT_EQ(EpisodeTransaction::ReserveNumber(fs, root_, 1, true).status().code(), StatusCode::kAlreadyExists);
  }
  auto deleted = EpisodeTransaction::ReserveNumber(fs, root_, 2, false);
  ASSERT_OK(deleted);
  (void)WriteEpisode(deleted->get());
  ASSERT_OK((*deleted)->Abort());
  EXPECT_FALSE(Exists(kRecycledPath));
  EXPECT_TRUE(Leftovers().empty());
  auto fresh = EpisodeTransaction::Reserve(fs, root_, 0);
  ASSERT_OK(fresh);
  EXPECT_EQ((*fresh)->episode_index(), 3);
}

// Move(): the task's own file is renamed at the commit, in call order with the temps, and
// stays where it is when the change is aborted.
TEST_F(TransactionTest, AMovedFileStaysOnAbortAndMovesOnCommit) {
  stdfs::create_directories(stdfs::path(root_) / "session/videos");
  std::ofstream(stdfs::path(root_) / "session/videos/cam.mp4") << "video bytes";
  auto lock = TaskLock::Acquire(DefaultFileSystem(), root_);
  ASSERT_OK(lock);
  {
    auto txn = EpisodeTransaction::BeginTaskChange(&*lock);
    txn->Move("session/videos/cam.mp4", "videos/chunk-000/cam/episode-000.mp4");
    ASSERT_OK(txn->Abort());
  }
  EXPECT_EQ(Read("session/videos/cam.mp4"), "video bytes");
  EXPECT_FALSE(Exists("videos/chunk-000/cam/episode-000.mp4"));
  auto txn = EpisodeTransaction::BeginTaskChange(&*lock);
  txn->Move("session/videos/cam.mp4", "videos/chunk-000/cam/episode-000.mp4");
  auto temp = txn->NewTemp("meta/marker.txt", "test");
  ASSERT_OK(temp);
  std::ofstream(*temp) << "after";
  ASSERT_OK(txn->CommitFiles());
  EXPECT_FALSE(Exists("session/videos/cam.mp4"));
  EXPECT_EQ(Read("videos/chunk-000/cam/episode-000.mp4"), "video bytes");
  EXPECT_EQ(Read("meta/marker.txt"), "after");
  EXPECT_TRUE(Leftovers().empty());
}

// A temp's or a reservation's writer on another host (a task on NFS): its pid means
// nothing here, so only its age (a day untouched) makes it stale; this host's dead
// writer's temp goes as before; an earlier version's name (no host) is not swept by its
// pid alone.
class HostTempTest : public TransactionTest {
 protected:
  static constexpr const char* kDeadPid = "99999999";  // above pid_max: no process has it
  static std::string OtherHost() {
    std::string id = HostId();
    id[0] = id[0] == '0' ? '1' : '0';
    return id;
  }
  // Writes `rel` (relative to the root), last modified `age_s` seconds ago.
  void Put(const std::string& rel, int64_t age_s) {
    const stdfs::path path = stdfs::path(root_) / rel;
    stdfs::create_directories(path.parent_path());
    std::ofstream(path) << "temp";
    stdfs::last_write_time(path, stdfs::file_time_type::clock::now() - std::chrono::seconds(age_s));
  }
};

TEST_F(HostTempTest, AnotherHostsTempIsSweptOnlyByAge) {
  const std::string dir = "data/chunk-000/";
  const std::string base = dir + ".episode_000007.parquet.commit.reel-";
  const int64_t hour = 3600;
  const std::vector<std::pair<std::string, int64_t>> kept = {
      {base + OtherHost() + "-" + kDeadPid + "-0.tmp", 0},           // another host's, fresh
      {base + OtherHost() + "-" + kDeadPid + "-1.tmp", 23 * hour},   // another host's, under a day
      {base + HostId() + "-" + std::to_string(::getpid()) + "-2.tmp", 48 * hour},  // this host's, alive
      {base + kDeadPid + "-3.tmp", 60},                              // an earlier version's, fresh
      {dir + ".x.reel-zz.tmp", 23 * hour},                           // no writer in its name, under a day
  };
  const std::vector<std::pair<std::string, int64_t>> swept = {
      {base + OtherHost() + "-" + kDeadPid + "-4.tmp", 25 * hour},  // another host's, over a day
      {base + HostId() + "-" + kDeadPid + "-5.tmp", 0},             // this host's, its pid gone
      {base + kDeadPid + "-6.tmp", 11 * 60},                        // an earlier version's: pid gone, 10 min
      {dir + ".x.reel-zz-7.tmp", 25 * hour},                        // no writer in its name, over a day
  };
  for (const auto& [rel, age] : kept) Put(rel, age);
  for (const auto& [rel, age] : swept) Put(rel, age);
  auto lock = TaskLock::Acquire(DefaultFileSystem(), root_);
  ASSERT_OK(lock);
  ASSERT_OK(lock->RemoveStaleTemps());
  for (const auto& [rel, age] : kept) EXPECT_TRUE(Exists(rel)) << rel << " was swept";
  for (const auto& [rel, age] : swept) EXPECT_FALSE(Exists(rel)) << rel << " was kept";
}

TEST_F(HostTempTest, AnotherHostsReservationHoldsItsNumberForADay) {
  const std::string other = "meta/episodes/.reserved-1.n.reel-" + OtherHost() + "-" + kDeadPid + "-0.tmp";
  Put(other, 3600);
  auto a = EpisodeTransaction::Reserve(DefaultFileSystem(), root_, 0);
  ASSERT_OK(a);
  EXPECT_EQ((*a)->episode_index(), 2) << "another host's live recording holds 1";
  ASSERT_OK((*a)->Abort());
  stdfs::remove(stdfs::path(root_) / kRecycledPath);
  Put(other, 25 * 3600);
  auto b = EpisodeTransaction::Reserve(DefaultFileSystem(), root_, 0);
  ASSERT_OK(b);
  EXPECT_EQ((*b)->episode_index(), 1) << "a day-old reservation of another host holds nothing";
  ASSERT_OK((*b)->Abort());
  stdfs::remove(stdfs::path(root_) / kRecycledPath);
  stdfs::remove(stdfs::path(root_) / other);
  Put("meta/episodes/.reserved-1.n.reel-" + HostId() + "-" + kDeadPid + "-1.tmp", 0);
  auto c = EpisodeTransaction::Reserve(DefaultFileSystem(), root_, 0);
  ASSERT_OK(c);
  EXPECT_EQ((*c)->episode_index(), 1) << "this host's dead writer holds nothing";
  const std::string mine = ".reel-" + HostId() + "-" + std::to_string(::getpid()) + "-";
  const std::vector<std::string> left = Leftovers();
  EXPECT_TRUE(std::any_of(left.begin(), left.end(), [&](const std::string& p) { return p.find(mine) != std::string::npos; }))
      << "a reservation names its host and pid (" << mine << ")";
}

}  // namespace
}  // namespace reel::internal

namespace reel::internal {
namespace {

// Issue 27 finding 6: a 70 MB drop_stats was written into an episodes row past the 64 MiB
// its readers apply. The row writer holds each JSON cell to the readers' bound.
TEST(WriteEpisodeRowBounds, AJsonCellPastTheReadersBoundIsNotWritten) {
  std::string tmpl = (stdfs::temp_directory_path() / "reel_row.XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const std::string path = tmpl + "/episode-000.parquet";
  EpisodeRow row;
  row.episode_index = 1;
  row.drop_stats = "\"" + std::string(size_t{65} << 20, 'x') + "\"";
  Status st = WriteEpisodeRow(DefaultFileSystem(), path, row);
  EXPECT_EQ(st.code(), StatusCode::kInvalid);
  EXPECT_THAT(st.message(), ::testing::HasSubstr("drop_stats")) << st.message().substr(0, 300);
  EXPECT_THAT(st.message(), ::testing::HasSubstr("json.size")) << st.message().substr(0, 300);
  EXPECT_FALSE(stdfs::exists(path));
  row.drop_stats = std::string(70, '[') + std::string(70, ']');
  EXPECT_THAT(WriteEpisodeRow(DefaultFileSystem(), path, row).message(), ::testing::HasSubstr("json.depth"));
  row.drop_stats = R"({"queue": 0})";
  EXPECT_OK(WriteEpisodeRow(DefaultFileSystem(), path, row));
  stdfs::remove_all(tmpl);
}

}  // namespace
}  // namespace reel::internal
