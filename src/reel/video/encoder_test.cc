// VideoEncoder: files FFmpeg's own CLI reads back with the right codec, size, frame
// count and (for FFV1) exact millimetres.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "reel/fs.h"
#include "reel/video.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

namespace stdfs = std::filesystem;

std::string Shell(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

// "codec_name,pix_fmt,width,height,nb_read_packets" of the first video stream.
std::string Probe(const std::string& path) {
  std::string s = Shell("ffprobe -v error -count_packets -select_streams v:0 -show_entries "
                      "stream=codec_name,pix_fmt,width,height,nb_read_packets -of csv=p=0 '" + path + "'");
  while (!s.empty() && (s.back() == '\n' || s.back() == ',')) s.pop_back();
  return s;
}

class VideoEncoderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = JoinPath(::testing::TempDir(), "reel_encoder.XXXXXX");
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { stdfs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(VideoEncoderTest, RgbH264AndHevc) {
  for (const char* codec : {"h264", "hevc"}) {
    VideoEncoderOptions o;
    o.width = 48;
    o.height = 32;
    o.fps = 15;
    o.codec = codec;
    o.preset = "ultrafast";
    // A dotfile temp name: the container comes from the options, not the name.
    const std::string path = JoinPath(dir_, std::string(".") + codec + ".tmp");
    auto enc = VideoEncoder::Open(path, o);
    ASSERT_OK(enc);
    std::vector<uint8_t> rgb(48 * 32 * 3);
    for (int i = 0; i < 7; ++i) {
      for (size_t k = 0; k < rgb.size(); ++k) rgb[k] = static_cast<uint8_t>(k + i * 9);
      ASSERT_OK((*enc)->AddRgb(rgb));
    }
    ASSERT_OK((*enc)->Repeat());
    ASSERT_OK((*enc)->Finish());
    EXPECT_EQ((*enc)->frames(), 8);
    EXPECT_EQ(Probe(path), std::string(codec) + ",48,32,yuv420p,8");
    EXPECT_THAT((*enc)->DescribeJson(), ::testing::HasSubstr(std::string("\"codec\":\"") + codec + "\""))
        << (*enc)->DescribeJson();
  }
}

TEST_F(VideoEncoderTest, DepthFfv1IsExactMillimetres) {
  VideoEncoderOptions o;
  o.kind = VideoKind::kDepthFfv1;
  o.width = 31;  // FFV1 takes odd sizes
  o.height = 9;
  const std::string path = JoinPath(dir_, "d.mkv");
  auto enc = VideoEncoder::Open(path, o);
  ASSERT_OK(enc);
  std::vector<uint16_t> mm(31 * 9);
  for (size_t k = 0; k < mm.size(); ++k) mm[k] = static_cast<uint16_t>(k * 211 % 65535);
  ASSERT_OK((*enc)->AddDepth(mm));
  ASSERT_OK((*enc)->Finish());
  EXPECT_EQ(Probe(path), "ffv1,31,9,gray16le,1");
  const std::string raw = Shell("ffmpeg -v error -i '" + path + "' -f rawvideo -pix_fmt gray16le -");
  ASSERT_EQ(raw.size(), mm.size() * 2);
  EXPECT_EQ(std::memcmp(raw.data(), mm.data(), raw.size()), 0);
}

TEST_F(VideoEncoderTest, DepthHevcHoldsLogCodes) {
  if (!HaveHevc12Encoder()) GTEST_SKIP() << "no 12-bit HEVC encoder in this FFmpeg";
  VideoEncoderOptions o;
  o.kind = VideoKind::kDepthHevc;
  o.width = 32;
  o.height = 16;
  const std::string path = JoinPath(dir_, "d.mp4");
  auto enc = VideoEncoder::Open(path, o);
  ASSERT_OK(enc);
  std::vector<uint16_t> mm(32 * 16, 1000);
  ASSERT_OK((*enc)->AddDepth(mm));
  ASSERT_OK((*enc)->Finish());
  EXPECT_EQ(Probe(path), "hevc,32,16,gray12le,1");
  const std::string raw = Shell("ffmpeg -v error -i '" + path + "' -f rawvideo -pix_fmt gray12le -");
  ASSERT_EQ(raw.size(), mm.size() * 2);
  const uint16_t want = DepthMmToCode(1000);  // rint(ln 10 * 4095 / ln 50) = 2410
  EXPECT_EQ(want, 2410);
  for (size_t k = 0; k < mm.size(); ++k) {
    uint16_t code;
    std::memcpy(&code, raw.data() + 2 * k, 2);
    EXPECT_NEAR(code, want, 2) << "pixel " << k;
  }
}

TEST_F(VideoEncoderTest, BadInputIsInvalidNamingTheFile) {
  VideoEncoderOptions o;
  o.width = 32;
  o.height = 16;
  const std::string path = JoinPath(dir_, "e.mp4");
  auto enc = VideoEncoder::Open(path, o);
  ASSERT_OK(enc);
  std::vector<uint8_t> wrong(5);
  Status st = (*enc)->AddRgb(wrong);
  EXPECT_EQ(st.code(), StatusCode::kInvalid);
  EXPECT_THAT(st.message(), ::testing::HasSubstr(path)) << st.message();
  std::vector<uint16_t> depth(32 * 16);
  EXPECT_EQ((*enc)->AddDepth(depth).code(), StatusCode::kInvalid);
  o.codec = "vp9";
  EXPECT_EQ(VideoEncoder::Open(JoinPath(dir_, "f.mp4"), o).status().code(), StatusCode::kInvalid);
  o.codec = "h264";
  EXPECT_FALSE(VideoEncoder::Open(JoinPath(dir_, "missing-dir/g.mp4"), o).ok());
}

}  // namespace
}  // namespace reel
