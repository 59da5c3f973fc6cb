// Task::ListEpisodes and FindEpisode while an episode is being published (a local commit's
// renames or a push's uploads: videos, data, episodes row, docs/storage.md). A wrapper file
// system publishes episode 2 in the middle of a listing, at each point a listing can be
// interrupted; whatever the reader returns holds episode 2 whole or not at all.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <functional>

#include "reel/fs.h"
#include "reel/recorder.h"
#include "reel/simulate.h"
#include "reel/task.h"
#include "testing/tiny_rig.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

namespace stdfs = std::filesystem;

// Runs `publish` once, right after the first ListDir of a directory whose path contains
// `trigger` has been answered (so that answer predates the publication).
class PublishingFs : public FileSystemWrapper {
 public:
  PublishingFs(std::string trigger, std::function<void()> publish)
      : FileSystemWrapper(DefaultFileSystem()), trigger_(std::move(trigger)), publish_(std::move(publish)) {}
  Result<std::vector<DirEntry>> ListDir(const std::string& path) override {
    auto answer = target()->ListDir(path);
    if (!done_ && path.find(trigger_) != std::string::npos) {
      done_ = true;
      publish_();
    }
    return answer;
  }
  bool fired() const { return done_; }

 private:
  std::string trigger_;
  std::function<void()> publish_;
  bool done_ = false;
};

class ListingRaceTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    std::string tmpl = (stdfs::temp_directory_path() / "reel_race.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    ASSERT_OK(reel::testing::RecordTinyEpisodes(dir_ + "/full", 2));
    auto full = Task::Open(dir_ + "/full");
    ASSERT_OK(full);
    auto two = (*full)->FindEpisode(2);
    ASSERT_OK(two);
    // Episode 2's files in publishing order, and a copy of the task without them.
    for (const auto& [slot, path] : two->videos) files_.push_back(path);
    files_.push_back(two->data_path);
    files_.push_back(two->row_path);
    stdfs::copy(dir_ + "/full", dir_ + "/copy", stdfs::copy_options::recursive);
    for (const std::string& rel : files_) stdfs::remove(dir_ + "/copy/" + rel);
  }
  void TearDown() override { stdfs::remove_all(dir_); }

  void Publish() {
    for (const std::string& rel : files_)
      stdfs::copy_file(dir_ + "/full/" + rel, dir_ + "/copy/" + rel, stdfs::copy_options::overwrite_existing);
  }

  // Episode 2 as listed is whole: its data, its row, and every video.
  void ExpectWholeOrAbsent(const std::vector<EpisodeEntry>& listed) {
    for (const EpisodeEntry& e : listed) {
      if (e.episode_index != 2) continue;
      EXPECT_FALSE(e.data_path.empty()) << "episode 2 listed without its data (torn)";
      EXPECT_EQ(e.row_source, RowSource::kEpisodeFile) << "episode 2 listed without its row (torn)";
      EXPECT_EQ(e.videos.size() + 2, files_.size()) << "episode 2 listed without all its videos (torn)";
    }
  }

  std::string dir_;
  std::vector<std::string> files_;
};

TEST_P(ListingRaceTest, ListEpisodesSeesAnEpisodePublishedMidListingWholeOrNotAtAll) {
  PublishingFs fs(GetParam(), [&] { Publish(); });
  auto task = Task::Open(dir_ + "/copy", {&fs, 1});
  ASSERT_OK(task);
  auto listed = (*task)->ListEpisodes();
  ASSERT_OK(listed);
  EXPECT_TRUE(fs.fired()) << "the listing never looked into " << GetParam();
  EXPECT_GE(listed->size(), 1u);
  ExpectWholeOrAbsent(*listed);
  // The next listing sees it whole.
  auto again = (*task)->ListEpisodes();
  ASSERT_OK(again);
  ASSERT_EQ(again->size(), 2u);
  ExpectWholeOrAbsent(*again);
}

TEST_P(ListingRaceTest, FindEpisodeSeesItWholeOrNotAtAll) {
  PublishingFs fs(GetParam(), [&] { Publish(); });
  auto task = Task::Open(dir_ + "/copy", {&fs, 1});
  ASSERT_OK(task);
  auto found = (*task)->FindEpisode(2);
  if (found.ok()) ExpectWholeOrAbsent({*found});
  else EXPECT_EQ(found.status().code(), StatusCode::kNotFound) << found.status().ToString();
}

// The directories a listing reads, each a moment for the publication to happen.
INSTANTIATE_TEST_SUITE_P(EveryListingStep, ListingRaceTest,
                         ::testing::Values("/meta/episodes", "/data", "/videos"));

}  // namespace
}  // namespace reel
