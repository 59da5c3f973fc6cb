// EpisodeFileGroup (reel/file_group.h) and DeclaredVideoSlots (include/reel/task.h): which episodes are
// whole, deleted (their row alone) or partial. FileGroupOf reads no file, and FindEpisode
// only lists them, so the task here is a hand-written info.json and empty files at the
// template paths; each expected list is written out by hand.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "reel/file_group.h"
#include "reel/task.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

namespace stdfs = std::filesystem;

constexpr const char* kInfo = R"({
  "format": "pooled_episodes_v1", "chunks_size": 1000,
  "data_path": "data/chunk-{c:03d}/episode-{f:03d}.parquet",
  "video_path": "videos/chunk-{c:03d}/{image_key}/episode-{f:03d}.{ext}",
  "episodes_path": "meta/episodes/chunk-{c:03d}/episode-{f:03d}.parquet",
  "codebase_version": "v3.0", "app_version": "1.4.0", "fps": 30.0, "video": true,
  "task_name": "demo", "features": {},
  "video_extensions": {"d435_rgb": "mp4", "d435_depth": "mkv", "head_left_rgb": "mp4"},
  "total_episodes": 9
})";

// video_codec of a row that declares the depth slot d435_depth, following d435_rgb.
constexpr const char* kDepthCodec =
    R"({"encoder": "libx264", "depth": {"d435_depth": {"codec": "FFV1 gray16le", "master_slot": "d435_rgb"}}})";

class FileGroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = JoinPath(::testing::TempDir(), "reel_file_group.XXXXXX");
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    Touch("meta/info.json", kInfo);
  }
  void TearDown() override { stdfs::remove_all(root_); }

  void Touch(const std::string& rel, const std::string& text = "") {
    stdfs::create_directories(stdfs::path(JoinPath(root_, rel)).parent_path());
    std::ofstream(JoinPath(root_, rel)) << text;
  }
  // Episode n's group, with a row whose video_codec is `codec` (null: no row given).
  FileGroup GroupOf(int64_t n, const char* codec) {
    auto task = Task::Open(root_);
    EXPECT_OK(task);
    if (!task.ok()) return {};
    auto e = (*task)->FindEpisode(n);
    EXPECT_OK(e);
    if (!e.ok()) return {};
    EpisodeRow row;
    if (codec) row.video_codec = codec;
    return EpisodeFileGroup(**task, *e, codec ? &row : nullptr);
  }

  std::string root_;
};

using Paths = std::vector<std::string>;

TEST(DeclaredVideoSlotsTest, DepthSlotsAndTheirMasterSlots) {
  EpisodeRow row;
  row.video_codec = kDepthCodec;
  EXPECT_EQ(DeclaredVideoSlots(row), (Paths{"d435_depth", "d435_rgb"}));
  row.video_codec = R"({"depth": {"stereo_depth": {"codec": "HEVC (Rext) gray12le"}, "d435_depth": 3}})";
  EXPECT_EQ(DeclaredVideoSlots(row), (Paths{"d435_depth", "stereo_depth"}));
  for (const char* none : {"{}", R"({"encoder": "libx264", "codec": "h264"})", R"({"depth": []})", "not json",
                           "[1]", R"({"depth": {"": {}}})"}) {
    row.video_codec = none;
    EXPECT_EQ(DeclaredVideoSlots(row), Paths{}) << none;
  }
}

TEST_F(FileGroupTest, WholeWhenDataAndEveryDeclaredSlotExist) {
  Touch("data/chunk-000/episode-001.parquet");
  Touch("videos/chunk-000/d435_rgb/episode-001.mp4");
  Touch("videos/chunk-000/d435_depth/episode-001.mkv");
  Touch("videos/chunk-000/head_left_rgb/episode-001.mp4");  // declared nowhere: present, not required
  Touch("meta/episodes/chunk-000/episode-001.parquet");
  const FileGroup g = GroupOf(2, kDepthCodec);
  EXPECT_EQ(g.state, FileGroupState::kWhole);
  EXPECT_EQ(g.present, (Paths{"data/chunk-000/episode-001.parquet", "videos/chunk-000/d435_depth/episode-001.mkv",
                              "videos/chunk-000/d435_rgb/episode-001.mp4",
                              "videos/chunk-000/head_left_rgb/episode-001.mp4"}));
  EXPECT_EQ(g.missing, Paths{});
  EXPECT_STREQ(FileGroupStateName(g.state), "whole");
}

TEST_F(FileGroupTest, DataWithoutVideosIsWholeWhenTheRowDeclaresNone) {
  Touch("data/chunk-000/episode-000.parquet");
  Touch("meta/episodes/chunk-000/episode-000.parquet");
  EXPECT_EQ(GroupOf(1, "{}").state, FileGroupState::kWhole);
  EXPECT_EQ(GroupOf(1, nullptr).state, FileGroupState::kWhole);
}

TEST_F(FileGroupTest, TheRowAloneIsDeleted) {
  Touch("meta/episodes/chunk-000/episode-004.parquet");
  const FileGroup g = GroupOf(5, kDepthCodec);
  EXPECT_EQ(g.state, FileGroupState::kDeleted);
  EXPECT_EQ(g.present, Paths{});
  EXPECT_EQ(g.missing, Paths{});
  EXPECT_STREQ(FileGroupStateName(g.state), "deleted");
}

TEST_F(FileGroupTest, VideosWithoutDataArePartial) {
  Touch("videos/chunk-000/d435_depth/episode-000.mkv");
  Touch("meta/episodes/chunk-000/episode-000.parquet");
  for (const char* codec : {static_cast<const char*>(nullptr), "{}"}) {
    const FileGroup g = GroupOf(1, codec);
    EXPECT_EQ(g.state, FileGroupState::kPartial);
    EXPECT_EQ(g.present, Paths{"videos/chunk-000/d435_depth/episode-000.mkv"});
    EXPECT_EQ(g.missing, Paths{"data/chunk-000/episode-000.parquet"});
  }
  // With the row, the declared master slot is missing too.
  const FileGroup g = GroupOf(1, kDepthCodec);
  EXPECT_EQ(g.missing, (Paths{"data/chunk-000/episode-000.parquet", "videos/chunk-000/d435_rgb/episode-000.mp4"}));
  EXPECT_STREQ(FileGroupStateName(g.state), "partial");
}

TEST_F(FileGroupTest, DataWithoutADeclaredSlotIsPartial) {
  Touch("data/chunk-000/episode-002.parquet");
  Touch("videos/chunk-000/d435_rgb/episode-002.mp4");
  Touch("meta/episodes/chunk-000/episode-002.parquet");
  const FileGroup g = GroupOf(3, kDepthCodec);
  EXPECT_EQ(g.state, FileGroupState::kPartial);
  EXPECT_EQ(g.present, (Paths{"data/chunk-000/episode-002.parquet", "videos/chunk-000/d435_rgb/episode-002.mp4"}));
  EXPECT_EQ(g.missing, Paths{"videos/chunk-000/d435_depth/episode-002.mkv"});
  // Without the row nothing says the depth slot belongs to it.
  EXPECT_EQ(GroupOf(3, nullptr).state, FileGroupState::kWhole);
}

TEST_F(FileGroupTest, ASlotOutsideVideoExtensionsIsNamedWithAWildcard) {
  Touch("data/chunk-000/episode-000.parquet");
  Touch("meta/episodes/chunk-000/episode-000.parquet");
  const FileGroup g = GroupOf(1, R"({"depth": {"stereo_depth": {}}})");
  EXPECT_EQ(g.missing, Paths{"videos/chunk-000/stereo_depth/episode-000.*"});
}

}  // namespace
}  // namespace reel
