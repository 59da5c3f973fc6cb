// A video write failing half-way through an episode (issue 15, "every byte through
// FileSystem"): the encoders write their temps through the task's FileSystem, so a
// FileSystemWrapper can fail the n-th Append/WriteAt of a video temp while the
// recorder is recording. The failed episode must leave nothing visible, its number
// must be recycled, and the episodes committed before must stay byte-identical.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>

#include "reel/fs.h"
#include "reel/recorder.h"
#include "reel/simulate.h"
#include "reel/task.h"
#include "testing/fault_fs.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

namespace stdfs = std::filesystem;

// A temp of a video file being recorded: ".../videos/.../.<name>..." (a dotfile).
bool IsVideoTemp(const std::string& path) {
  return path.find("/videos/") != std::string::npos && BaseName(path).starts_with(".");
}

// The Append and WriteAt calls on video temps, counted from Inject(); the nth one fails
// with IOError after writing half its bytes (0: none, count only).
testing::InjectedFault VideoWriteFault(int nth) {
  return {.ops = testing::Ops({testing::FsOp::kAppend, testing::FsOp::kWriteAt}),
          .on = IsVideoTemp,
          .nth = nth,
          .half_write = true};
}

using Tree = std::map<std::string, std::string>;  // relative path -> bytes

// Every file a reader can see (no dotfiles, no lock, no recycled marker).
Tree Visible(const std::string& root) {
  Tree out;
  for (const auto& e : stdfs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    const std::string rel = stdfs::relative(e.path(), root).string();
    bool dot = false;
    for (const auto& part : stdfs::path(rel)) dot = dot || part.string().starts_with(".");
    if (dot || rel == "meta/recycled_episode.json") continue;
    out[rel] = *DefaultFileSystem()->ReadFile(e.path().string());
  }
  return out;
}

SimulateOptions Sim() {
  SimulateOptions sim;
  sim.seconds = 1.0;
  sim.fps = 10;
  sim.video_width = 320;  // big enough that the encoders write while recording
  sim.video_height = 240;
  return sim;
}

class VideoFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = JoinPath(::testing::TempDir(), "reel_video_fault.XXXXXX");
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    root_ = JoinPath(dir_, "pick");
  }
  void TearDown() override { stdfs::remove_all(dir_); }

  // Records one episode; returns its N, or the first error. *before_commit (when
  // given) is set to the video writes counted when the last frame was appended.
  Result<int64_t> Record(TaskWriter& writer, testing::FaultFileSystem* fs = nullptr, int* before_commit = nullptr) {
    REEL_ASSIGN_OR_RETURN(auto episode, writer.BeginEpisode());
    const int64_t n = episode->episode_index();
    REEL_RETURN_IF_ERROR(SimulateEpisode(*episode, Sim(), n));
    if (before_commit) *before_commit = fs->counted();
    REEL_RETURN_IF_ERROR(episode->Commit().status());
    return n;
  }

  std::string dir_, root_;
};

TEST_F(VideoFaultTest, VideoWriteFailingMidEpisodeLeavesNothingAndRecyclesN) {
  testing::FaultFileSystem fs;
  TaskWriterOptions options = SimulatedRigOptions("pick", Sim());
  options.fs = &fs;
  auto writer = TaskWriter::Open(root_, options);
  ASSERT_OK(writer);

  // Episodes 1 and 2 commit; episode 2 counts the video writes of one episode.
  auto first = Record(**writer);
  ASSERT_OK(first);
  fs.Inject(VideoWriteFault(0));
  int while_recording = 0;
  auto second = Record(**writer, &fs, &while_recording);
  ASSERT_OK(second);
  const int writes = fs.counted();
  ASSERT_GT(writes, 8) << "too few video writes to fail one half-way";
  // Half-way through the episode's video writes, among those the encoders make while
  // frames are still being appended (not only in the commit's final flush).
  const int fail_at = std::min(writes / 2, while_recording);
  ASSERT_GT(fail_at, 1) << "the encoders wrote nothing while recording (" << writes << " writes in all)";
  const Tree before = Visible(root_);

  // Episode 3: its video write half-way through fails.
  fs.Inject(VideoWriteFault(fail_at));
  auto third = Record(**writer);
  ASSERT_FALSE(third.ok()) << "the injected fault did not surface";
  EXPECT_TRUE(fs.fired());
  EXPECT_THAT(third.status().message(), ::testing::HasSubstr("injected")) << third.status().ToString();
  EXPECT_TRUE(IsVideoTemp(fs.failed_path())) << fs.failed_path();
  fs.Disarm();

  // Nothing of it is visible; the earlier episodes are byte-identical.
  EXPECT_EQ(Visible(root_), before);
  auto task = Task::Open(root_);
  ASSERT_OK(task);
  auto episodes = (*task)->ListEpisodes();
  ASSERT_OK(episodes);
  ASSERT_EQ(episodes->size(), 2u);

  // Its number is recycled: the next episode is N=3 again, and commits.
  auto again = Record(**writer);
  ASSERT_OK(again);
  EXPECT_EQ(*again, *second + 1);
  const Tree after = Visible(root_);
  for (const auto& [rel, bytes] : before) {
    if (rel.starts_with("meta/info.json") || rel.starts_with("meta/stats.json") || rel == "meta/tasks.jsonl") continue;
    ASSERT_TRUE(after.count(rel)) << rel << " vanished";
    EXPECT_EQ(after.at(rel), bytes) << rel << " changed";
  }
}

}  // namespace
}  // namespace reel
