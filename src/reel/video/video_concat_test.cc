// The video helpers of video/video_concat.h read each input through the FileSystem named
// beside it and write each output through its own: an export reads a task on an object
// store and writes a local directory. Both file systems hold their files under made-up
// paths (testing::RootedFs), so a read or write through the wrong one (or through
// DefaultFileSystem()) fails instead of passing unnoticed.
#include "video/video_concat.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "reel/fs.h"
#include "reel/video.h"
#include "testing/rooted_fs.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

using testing::RootedFs;

constexpr const char* kIn = "/reel-virtual-input";
constexpr const char* kOut = "/reel-virtual-output";
constexpr int kW = 64, kH = 48, kFrames = 6;
constexpr double kFps = 10;

class VideoConcatSplitFsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = JoinPath(::testing::TempDir(), "reel_video_concat.XXXXXX");
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    std::filesystem::create_directories(dir_ + "/in");
    std::filesystem::create_directories(dir_ + "/out");
    ASSERT_OK(EncodeClip(dir_ + "/in/clip.mp4"));
    in_ = std::make_unique<RootedFs>(kIn, dir_ + "/in", RootedFs::kReadOnly);
    out_ = std::make_unique<RootedFs>(kOut, dir_ + "/out", RootedFs::kWriteOnly);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // kFrames frames of H.264 (GOP 2), written directly, before the test watches.
  static Status EncodeClip(const std::string& path) {
    VideoEncoderOptions o;
    o.width = kW;
    o.height = kH;
    o.fps = kFps;
    REEL_ASSIGN_OR_RETURN(auto enc, VideoEncoder::Open(path, o));
    std::vector<uint8_t> rgb(kW * kH * 3);
    for (int f = 0; f < kFrames; ++f) {
      for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>(i * 7 + f * 31);
      REEL_RETURN_IF_ERROR(enc->AddRgb(rgb));
    }
    return enc->Finish();
  }

  // Frames of a file the helpers wrote, read back directly from the real directory.
  int64_t FramesOf(const std::string& real_path) {
    auto reader = VideoReader::Open(real_path);
    EXPECT_OK(reader);
    return reader.ok() ? (*reader)->info().frames : -1;
  }

  // Every read went to the input, every write to the output, nothing anywhere else.
  void ExpectSplit() {
    EXPECT_GT(in_->reads, 0);
    EXPECT_EQ(in_->writes, 0);
    EXPECT_GT(out_->writes, 0);
    EXPECT_EQ(out_->reads, 0);
    EXPECT_EQ(in_->refused + out_->refused, 0);
    EXPECT_EQ(in_->outside + out_->outside, 0);
  }

  const std::string clip_ = std::string(kIn) + "/clip.mp4";
  std::string dir_;
  std::unique_ptr<RootedFs> in_, out_;
};

TEST_F(VideoConcatSplitFsTest, StreamConcatReadsInputsAndWritesTheOutputThroughTheirOwnFs) {
  auto concat = internal::StreamConcat::Open(out_.get(), std::string(kOut) + "/cat.mp4", in_.get(), clip_);
  ASSERT_OK(concat);
  auto same = (*concat)->Accepts(in_.get(), clip_);
  ASSERT_TRUE(same.ok() && *same) << same.status().ToString();
  for (int i = 0; i < 2; ++i) {
    auto span = (*concat)->Append(in_.get(), clip_);
    ASSERT_OK(span);
    EXPECT_EQ(span->frames, kFrames);
    EXPECT_DOUBLE_EQ(span->from_s, i * kFrames / kFps);
  }
  ASSERT_OK((*concat)->Finish());
  ExpectSplit();
  EXPECT_EQ(FramesOf(dir_ + "/out/cat.mp4"), 2 * kFrames);
}

TEST_F(VideoConcatSplitFsTest, CopySegmentReadsTheInputAndWritesTheOutputThroughTheirOwnFs) {
  Status st = internal::CopySegment(in_.get(), clip_, 2 / kFps, 4, out_.get(), std::string(kOut) + "/seg.mp4");
  ASSERT_OK(st);
  ExpectSplit();
  EXPECT_EQ(FramesOf(dir_ + "/out/seg.mp4"), 4);
}

TEST_F(VideoConcatSplitFsTest, ReencodeReadsTheInputAndWritesTheOutputThroughTheirOwnFs) {
  auto copyable = internal::CopyableToMp4(clip_, in_.get());
  ASSERT_TRUE(copyable.ok() && *copyable) << copyable.status().ToString();
  Status st = internal::ReencodeToMp4(in_.get(), clip_, out_.get(), std::string(kOut) + "/re.mp4", kFps);
  ASSERT_OK(st);
  ExpectSplit();
  EXPECT_EQ(FramesOf(dir_ + "/out/re.mp4"), kFrames);
}

TEST_F(VideoConcatSplitFsTest, TheWrongFileSystemCannotReachEitherSide) {
  // The made-up paths exist through their own file systems only: the checks above can fail.
  EXPECT_FALSE(internal::CopySegment(nullptr, clip_, 0, 2, out_.get(), std::string(kOut) + "/a.mp4").ok());
  EXPECT_FALSE(internal::CopySegment(in_.get(), clip_, 0, 2, nullptr, std::string(kOut) + "/b.mp4").ok());
  EXPECT_FALSE(internal::CopySegment(out_.get(), clip_, 0, 2, in_.get(), std::string(kOut) + "/c.mp4").ok());
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/out/a.mp4") || std::filesystem::exists(dir_ + "/out/b.mp4") ||
               std::filesystem::exists(dir_ + "/out/c.mp4"));
}

}  // namespace
}  // namespace reel
