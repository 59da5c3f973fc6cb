// FFmpeg over FileSystem (video/avio_fs.h): the encoder writes and the reader reads
// every byte through a FileSystem, so injected faults (testing/fault_fs.h) reach them: a
// write error or a read error mid-decode comes back as a clean Status, never a crash.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "reel/fs.h"
#include "reel/video.h"
#include "testing/fault_fs.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

using testing::FsOp;

class AvioFsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = JoinPath(::testing::TempDir(), "reel_avio_fs.XXXXXX");
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Encodes `frames` noisy RGB frames to `path` through `fs`.
  Status Encode(FileSystem* fs, const std::string& path, VideoKind kind, int frames) {
    VideoEncoderOptions o;
    o.kind = kind;
    o.width = kW;
    o.height = kH;
    o.fps = 10;
    o.fs = fs;
    o.sync_on_finish = true;
    REEL_ASSIGN_OR_RETURN(auto enc, VideoEncoder::Open(path, o));
    uint32_t seed = 7;
    std::vector<uint8_t> rgb(kW * kH * 3);
    std::vector<uint16_t> mm(kW * kH);
    for (int f = 0; f < frames; ++f) {
      for (auto& b : rgb) b = static_cast<uint8_t>((seed = seed * 1103515245 + 12345) >> 24);
      for (auto& v : mm) v = static_cast<uint16_t>(300 + ((seed = seed * 1103515245 + 12345) >> 22));
      REEL_RETURN_IF_ERROR(kind == VideoKind::kRgb ? enc->AddRgb(rgb) : enc->AddDepth(mm));
    }
    return enc->Finish();
  }

  static constexpr int kW = 160, kH = 120;
  std::string dir_;
};

TEST_F(AvioFsTest, EncoderWritesThroughTheFileSystemWithPositionedWrites) {
  for (VideoKind kind : {VideoKind::kRgb, VideoKind::kDepthFfv1}) {
    testing::FaultFileSystem fs;
    const std::string path = JoinPath(dir_, std::string(".v.") + VideoExtension(kind));
    ASSERT_OK(Encode(&fs, path, kind, 20));
    EXPECT_GT(fs.count(FsOp::kAppend), 1);
    EXPECT_GT(fs.count(FsOp::kWriteAt), 0) << "the muxer patches its headers through WriteAt";
    VideoReaderOptions ro;
    ro.fs = &fs;
    auto reader = VideoReader::Open(path, ro);
    ASSERT_OK(reader);
    EXPECT_EQ((*reader)->info().frames, 20);
    EXPECT_GT(fs.count(FsOp::kRead), 0) << "the reader reads through the FileSystem";
  }
}

TEST_F(AvioFsTest, WriteFaultIsReturnedAsTheFileSystemsStatus) {
  testing::FaultFileSystem fs;
  fs.Inject({.ops = testing::Ops({FsOp::kAppend}), .nth = 3});
  Status st = Encode(&fs, JoinPath(dir_, "w.mp4"), VideoKind::kRgb, 30);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kIOError) << st.ToString();
  EXPECT_THAT(st.message(), ::testing::HasSubstr("injected Append fault")) << st.ToString();
}

TEST_F(AvioFsTest, ReadFaultMidDecodeIsACleanStatusAndTheReaderRecovers) {
  const std::string path = JoinPath(dir_, "r.mp4");
  ASSERT_OK(Encode(DefaultFileSystem(), path, VideoKind::kRgb, 30));
  testing::FaultFileSystem fs;
  VideoReaderOptions ro;
  ro.fs = &fs;
  auto reader = VideoReader::Open(path, ro);
  ASSERT_OK(reader);
  std::vector<int64_t> all(30);
  for (int i = 0; i < 30; ++i) all[i] = i;
  std::vector<uint8_t> want(30 * kW * kH * 3), got(want.size());
  ASSERT_OK((*reader)->ReadRgb({all.data(), 5}, {want.data(), 5 * kW * kH * 3}));

  fs.Inject({.ops = testing::Ops({FsOp::kRead}), .stays_down = true});  // mid-decode: no packet can be read
  Status st = (*reader)->ReadRgb(std::span<const int64_t>(all).subspan(5), {got.data(), 25 * kW * kH * 3});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kIOError) << st.ToString();
  EXPECT_THAT(st.message(), ::testing::HasSubstr("injected Read fault")) << st.ToString();

  fs.Disarm();
  ASSERT_OK((*reader)->ReadRgb(all, want));
  auto fresh = VideoReader::Open(path);
  ASSERT_OK(fresh);
  ASSERT_OK((*fresh)->ReadRgb(all, got));
  EXPECT_EQ(got, want) << "frames after the recovered fault differ";
}

}  // namespace
}  // namespace reel
