// Task::FindEpisode costs one episode, whatever the task holds: Python's
// Task.episodes(episodes=[N]), and through it `reel report` / `reel view` of one episode,
// rely on it (issue 31's growth benchmark found both listing the whole task).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <map>

#include "reel/fs.h"
#include "reel/task.h"
#include "testing/fault_fs.h"
#include "testing/tiny_rig.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

namespace stdfs = std::filesystem;

// The file-system calls FindEpisode(2) makes on a task of `count` episodes, by operation
// (the text before the path in the fault file system's log).
std::map<std::string, int> CallsToFindEpisodeTwo(const std::string& dir, int count) {
  const std::string root = dir + "/t" + std::to_string(count);
  EXPECT_OK(testing::RecordTinyEpisodes(root, count));
  testing::FaultFileSystem fs;
  auto task = Task::Open(root, {.fs = &fs});
  EXPECT_OK(task);
  fs.Log(testing::Ops({testing::FsOp::kStat, testing::FsOp::kListDir, testing::FsOp::kReadFile,
                       testing::FsOp::kOpenRandomAccess}));
  auto two = (*task)->FindEpisode(2);
  EXPECT_OK(two);
  EXPECT_EQ(two->episode_index, 2);
  std::map<std::string, int> ops;
  for (const std::string& call : fs.calls()) {
    ++ops[call.substr(0, call.find(' '))];
    // A listing of the task loads its episode index first (Task::ListEpisodes): in a task of
    // one chunk its directory calls alone would look the same as finding one episode.
    EXPECT_THAT(call, ::testing::Not(::testing::HasSubstr("/meta/.episode_index"))) << "the task was listed: " << call;
  }
  return ops;
}

TEST(FindEpisodeTest, CostsOneEpisodeWhateverTheTaskHolds) {
  std::string tmpl = (stdfs::temp_directory_path() / "reel_find_episode.XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const auto small = CallsToFindEpisodeTwo(tmpl, 4);
  const auto large = CallsToFindEpisodeTwo(tmpl, 40);
  stdfs::remove_all(tmpl);
  EXPECT_FALSE(small.empty());
  EXPECT_EQ(small, large) << "the same calls for 4 and 40 episodes";
  EXPECT_EQ(small.count("ReadFile") + small.count("OpenRandomAccess"), 0u) << "finding reads no file";
}

}  // namespace
}  // namespace reel
