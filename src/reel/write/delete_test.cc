// DeleteEpisode through the episode transaction (include/reel/recorder.h): an error, a
// stop or a crash at any file-system call of a delete leaves episode N whole or deleted
// (its episodes row alone), never a partial file group: before recovery readers hide N
// while its journal is present, and the next writer's TaskLock rolls the delete forward.
//
// The task is recorded once (two episodes, every video slot of the simulated rig, tiny)
// and copied for each case; the expected file lists come from the copy's directory walk,
// not from the code under test.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "reel/check.h"
#include "reel/file_group.h"
#include "reel/fs.h"
#include "reel/recorder.h"
#include "reel/simulate.h"
#include "reel/task.h"
#include "testing/fault_fs.h"
#include "write/transaction.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

namespace stdfs = std::filesystem;

const char* kData2 = "data/chunk-000/episode-001.parquet";
const char* kRow2 = "meta/episodes/chunk-000/episode-001.parquet";
constexpr int kCrashExit = 86;

SimulateOptions TinySim() {
  SimulateOptions sim;
  sim.seconds = 0.3;
  sim.fps = 10;
  sim.video_width = 32;
  sim.video_height = 24;
  return sim;
}

// Visible files (no dotfile component), relative to root.
std::set<std::string> Files(const std::string& root) {
  std::set<std::string> out;
  for (const auto& e : stdfs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    const std::string rel = stdfs::relative(e.path(), root).string();
    bool dot = false;
    for (const auto& part : stdfs::path(rel)) dot = dot || part.string().starts_with(".");
    if (!dot) out.insert(rel);
  }
  return out;
}

// Episode 2's files as the directory walk finds them: its data parquet and every file
// named episode-001.* under videos/.
std::set<std::string> GroupOf2(const std::set<std::string>& files) {
  std::set<std::string> out;
  for (const std::string& f : files)
    if (f == kData2 || (f.starts_with("videos/") && stdfs::path(f).stem() == "episode-001")) out.insert(f);
  return out;
}

enum class Mode { kError, kStop, kCrash };

// The mutating calls of a delete (NewWritableFile, Append, Sync, Close, Rename, RemoveFile,
// SyncDir), counted; the k-th (0: none) fails. kError returns an IOError; kStop returns it
// and refuses every later one (the process stopped there, as a kill leaves it); kCrash
// _exit()s (only in a forked child).
testing::InjectedFault DeleteFault(int k, Mode mode) {
  return {.ops = testing::Ops({testing::FsOp::kNewWritableFile, testing::FsOp::kAppend, testing::FsOp::kSync,
                               testing::FsOp::kClose, testing::FsOp::kRename, testing::FsOp::kRemoveFile,
                               testing::FsOp::kSyncDir}),
          .nth = k,
          .stays_down = mode == Mode::kStop,
          .exit_code = mode == Mode::kCrash ? kCrashExit : 0};
}

class DeleteEpisodeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string tmpl = JoinPath(::testing::TempDir(), "reel_delete.XXXXXX");
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = new std::string(tmpl);
    base_ = new std::string(JoinPath(*dir_, "base"));
    auto writer = TaskWriter::Open(*base_, SimulatedRigOptions("pick", TinySim()));
    ASSERT_OK(writer);
    for (int64_t n : {1, 2}) {
      auto episode = (*writer)->BeginEpisode();
      ASSERT_OK(episode);
      ASSERT_OK(SimulateEpisode(**episode, TinySim(), n));
      ASSERT_OK((*episode)->Commit());
    }
    files_ = new std::set<std::string>(Files(*base_));
    group2_ = new std::set<std::string>(GroupOf2(*files_));
    // The data parquet and one video per slot of the rig.
    ASSERT_EQ(group2_->size(), 1 + RigVideoSlots(TinySim()).size()) << ::testing::PrintToString(*group2_);
    ASSERT_TRUE(files_->count(kRow2));
  }
  static void TearDownTestSuite() {
    if (dir_) stdfs::remove_all(*dir_);
    delete dir_;
    delete base_;
    delete files_;
    delete group2_;
  }

  std::string Fresh(const std::string& name) {
    const std::string root = JoinPath(*dir_, name);
    stdfs::remove_all(root);
    stdfs::copy(*base_, root, stdfs::copy_options::recursive);
    return root;
  }

  // What a reader sees of N=2 now: hidden (a journal pending), whole, or deleted; never
  // partial. Then, after a writer's lock (recovery), N=2 is whole or deleted: every file of
  // its group or none, the rest of the task unchanged, and CheckTask reports no error.
  // Returns whether the delete happened.
  bool ExpectWholeOrGone(const std::string& root, const std::string& what) {
    {
      auto task = Task::Open(root);
      if (!task.ok()) {
        ADD_FAILURE() << what << ": " << task.status().ToString();
        return false;
      }
      auto e = (*task)->FindEpisode(2);
      if (e.ok()) {
        const FileGroup g = EpisodeFileGroup(**task, *e, nullptr);
        EXPECT_NE(g.state, FileGroupState::kPartial)
            << what << ": before recovery a reader sees a partial episode 2, missing "
            << ::testing::PrintToString(g.missing);
      } else {
        EXPECT_EQ(e.status().code(), StatusCode::kNotFound) << what << ": " << e.status().ToString();
      }
    }
    { EXPECT_TRUE(internal::TaskLock::Acquire(DefaultFileSystem(), root).ok()) << what << ": recovery"; }
    const std::set<std::string> now = Files(root);
    const std::set<std::string> left = GroupOf2(now);
    EXPECT_TRUE(left.empty() || left == *group2_)
        << what << ": after recovery episode 2 is partial: " << ::testing::PrintToString(left);
    std::set<std::string> expect = *files_;
    if (left.empty())
      for (const std::string& f : *group2_) expect.erase(f);
    EXPECT_EQ(now, expect) << what;
    EXPECT_FALSE(stdfs::exists(JoinPath(root, "meta/.commit-2.json"))) << what << ": journal left";
    auto report = CheckTask(root);
    EXPECT_OK(report) << what;
    if (report.ok())
      for (const Finding& f : report->findings)
        EXPECT_NE(f.severity, Severity::kError) << what << ": " << f.rule << " " << f.path << ": " << f.message;
    return left.empty();
  }

  static std::string* dir_;
  static std::string* base_;
  static std::set<std::string>* files_;
  static std::set<std::string>* group2_;
};

std::string* DeleteEpisodeTest::dir_ = nullptr;
std::string* DeleteEpisodeTest::base_ = nullptr;
std::set<std::string>* DeleteEpisodeTest::files_ = nullptr;
std::set<std::string>* DeleteEpisodeTest::group2_ = nullptr;

TEST_F(DeleteEpisodeTest, RemovesTheFileGroupAndKeepsTheRow) {
  const std::string root = Fresh("plain");
  ASSERT_OK(DeleteEpisode(root, 2));
  std::set<std::string> expect = *files_;
  for (const std::string& f : *group2_) expect.erase(f);
  EXPECT_EQ(Files(root), expect);  // the row, stats.json and info.json stay
  auto task = Task::Open(root);
  ASSERT_OK(task);
  auto e = (*task)->FindEpisode(2);
  ASSERT_OK(e);
  EXPECT_EQ(EpisodeFileGroup(**task, *e).state, FileGroupState::kDeleted);
  EXPECT_OK(DeleteEpisode(root, 2)) << "deleting a deleted episode changes nothing";
  EXPECT_EQ(Files(root), expect);
}

// The bug: DeleteEpisode removed the data parquet, then each video, with no journal; a
// kill in between left videos without data, and `reel check` called it clean.
TEST_F(DeleteEpisodeTest, StopRightAfterTheDataFileIsRemovedLeavesWholeOrGone) {
  // A counting pass finds the data file's removal among the delete's calls; the fault run
  // stops at the call after it.
  testing::FaultFileSystem counter;
  counter.Inject(DeleteFault(0, Mode::kError));
  ASSERT_OK(DeleteEpisode(Fresh("stop-count"), 2, &counter));
  const std::vector<std::string> calls = counter.calls();
  const auto removal = std::find_if(calls.begin(), calls.end(), [](const std::string& call) {
    return call.starts_with("RemoveFile ") && call.ends_with(std::string("/") + kData2);
  });
  ASSERT_NE(removal, calls.end()) << "the delete never removed " << kData2 << ": " << ::testing::PrintToString(calls);
  const std::string root = Fresh("stop");
  testing::FaultFileSystem fs;
  fs.Inject(DeleteFault(static_cast<int>(removal - calls.begin()) + 2, Mode::kStop));
  Status st = DeleteEpisode(root, 2, &fs);
  ASSERT_TRUE(fs.fired()) << "the delete stopped before removing " << kData2 << ": " << st.ToString();
  EXPECT_FALSE(st.ok());
  EXPECT_FALSE(stdfs::exists(JoinPath(root, kData2)));
  EXPECT_TRUE(ExpectWholeOrGone(root, "stopped after removing the data file"))
      << "the data file was removed: recovery must finish the delete";
}

TEST_F(DeleteEpisodeTest, ErrorOrStopAtEveryCallLeavesWholeOrGone) {
  testing::FaultFileSystem counter;
  counter.Inject(DeleteFault(0, Mode::kError));
  const std::string count_root = Fresh("count");
  ASSERT_OK(DeleteEpisode(count_root, 2, &counter));
  const int calls = counter.counted();
  // A journal (write, sync, rename, dir sync), one removal per file, dir syncs, journal gone.
  ASSERT_GE(calls, static_cast<int>(group2_->size()) + 6);
  for (Mode mode : {Mode::kError, Mode::kStop})
    for (int k = 1; k <= calls; ++k) {
      const std::string what = std::string(mode == Mode::kStop ? "stop" : "error") + " at call " + std::to_string(k);
      const std::string root = Fresh("fault");
      testing::FaultFileSystem fs;
      fs.Inject(DeleteFault(k, mode));
      Status st = DeleteEpisode(root, 2, &fs);
      EXPECT_FALSE(st.ok()) << what;
      ExpectWholeOrGone(root, what);
    }
}

TEST_F(DeleteEpisodeTest, CrashAtEveryCallLeavesWholeOrGone) {
  testing::FaultFileSystem counter;
  counter.Inject(DeleteFault(0, Mode::kError));
  ASSERT_OK(DeleteEpisode(Fresh("count"), 2, &counter));
  int deleted = 0;
  for (int k = 1; k <= counter.counted() + 1; ++k) {
    const std::string what = "crash at call " + std::to_string(k);
    const std::string root = Fresh("crash");
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      testing::FaultFileSystem fs;
      fs.Inject(DeleteFault(k, Mode::kCrash));
      ::_exit(DeleteEpisode(root, 2, &fs).ok() ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << what;
    EXPECT_EQ(WEXITSTATUS(status), k <= counter.counted() ? kCrashExit : 0) << what;
    deleted += ExpectWholeOrGone(root, what);
  }
  EXPECT_GT(deleted, 0) << "no crash point was after the commit point";
}

// episode.file_group on a recorded task broken by hand (stdfs::remove, not reel).
std::vector<Finding> FileGroupFindings(const std::string& root) {
  std::vector<Finding> out;
  auto report = CheckTask(root);
  EXPECT_OK(report);
  if (report.ok())
    for (const Finding& f : report->findings)
      if (f.rule == "episode.file_group") out.push_back(f);
  return out;
}

TEST_F(DeleteEpisodeTest, CheckReportsVideosWithoutData) {
  const std::string root = Fresh("no_data");
  stdfs::remove(JoinPath(root, kData2));
  const auto found = FileGroupFindings(root);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].severity, Severity::kError);
  EXPECT_EQ(found[0].path, kData2);
  EXPECT_THAT(found[0].message, ::testing::HasSubstr("episode 2's file group is partial: missing " + std::string(kData2) + "; present "))
      << found[0].message;
  for (const std::string& v : *group2_)
    if (v != kData2) EXPECT_THAT(found[0].message, ::testing::HasSubstr(v)) << v << " not named: " << found[0].message;
}

TEST_F(DeleteEpisodeTest, CheckReportsDataWithoutADeclaredSlot) {
  // The rig's depth slots follow stereo_left and d435_rgb (video_codec "master_slot").
  for (const char* slot : {"stereo_depth", "stereo_left", "d435_rgb"}) {
    const std::string root = Fresh(std::string("no_") + slot);
    std::string video;
    for (const std::string& f : *group2_)
      if (f.starts_with(std::string("videos/chunk-000/") + slot + "/")) video = f;
    ASSERT_FALSE(video.empty()) << slot;
    stdfs::remove(JoinPath(root, video));
    const auto found = FileGroupFindings(root);
    ASSERT_EQ(found.size(), 1u) << slot;
    EXPECT_EQ(found[0].path, video);
    EXPECT_THAT(found[0].message, ::testing::HasSubstr("missing " + video + "; present " + kData2 + ", "))
        << found[0].message;
  }
}

TEST_F(DeleteEpisodeTest, CheckAcceptsADeletedEpisode) {
  const std::string root = Fresh("deleted");
  for (const std::string& f : *group2_) stdfs::remove(JoinPath(root, f));
  EXPECT_TRUE(FileGroupFindings(root).empty());
}

}  // namespace
}  // namespace reel
