// VideoReader and the depth code against files and pixels made by the ffmpeg CLI,
// independently of reel: every decoded frame must equal, byte for byte, what
// `ffmpeg -i f -f rawvideo -pix_fmt rgb24 -` prints for it.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "reel/video.h"
#include "testing/shell.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

namespace fs = std::filesystem;

constexpr int kW = 96, kH = 64;

using ::reel::testing::Shell;

void WriteFile(const std::string& path, const void* data, size_t size) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
}

// Smooth depth in mm (so lossy HEVC stays near), with holes (0) and far values.
std::vector<uint16_t> DepthMm(int frames) {
  std::vector<uint16_t> mm(static_cast<size_t>(frames) * kW * kH);
  for (int f = 0; f < frames; ++f)
    for (int y = 0; y < kH; ++y)
      for (int x = 0; x < kW; ++x) {
        uint16_t v = static_cast<uint16_t>(100 + 45 * x + 10 * y + 37 * f);
        if (x < 4 && y < 4) v = 0;       // no depth
        if (x >= kW - 4 && y < 4) v = 9000;  // beyond 5 m
        mm[(static_cast<size_t>(f) * kH + y) * kW + x] = v;
      }
  return mm;
}

class VideoReaderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/reel_video_test_XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    const std::string ff = "ffmpeg -nostdin -v error -y ";
    const std::string src = "-f lavfi -i testsrc2=size=96x64:rate=30 ";
    Shell(ff + src + "-frames:v 40 -c:v libx264 -pix_fmt yuv420p -g 2 " + P("g2.mp4"));
    Shell(ff + src + "-frames:v 75 -c:v libx264 -pix_fmt yuv420p -g 30 -bf 3 " + P("g30b.mp4"));
    Shell(ff + src + "-frames:v 75 -c:v libx264 -pix_fmt yuv420p -g 30 -bf 3 -movflags +faststart " +
          P("faststart.mp4"));
    Shell(ff + src + "-frames:v 30 -c:v libx265 -pix_fmt yuv420p -g 10 -x265-params log-level=error " +
          P("hevc.mp4"));
    // Colour tags the CLI honours: BT.709 matrix, and full range.
    Shell(ff + src + "-frames:v 10 -c:v libx264 -pix_fmt yuv420p -colorspace bt709 "
          "-color_primaries bt709 -color_trc bt709 " + P("bt709.mp4"));
    Shell(ff + src + "-frames:v 10 -c:v libx264 -pix_fmt yuvj420p " + P("full.mp4"));
    // Formats that take swscale's general (scaling) path instead of its yuv420p shortcut.
    Shell(ff + src + "-frames:v 6 -c:v libx264 -pix_fmt yuv444p " + P("yuv444.mp4"));
    Shell(ff + src + "-frames:v 6 -c:v libx264 -pix_fmt yuv422p " + P("yuv422.mp4"));
    Shell(ff + src + "-frames:v 6 -c:v libx265 -pix_fmt yuv420p10le -x265-params log-level=error " +
          P("hevc10.mp4"));
    // Odd frame sizes (FFV1 allows them): chroma siting matters there.
    Shell(ff + "-f lavfi -i testsrc2=size=95x63:rate=30 -frames:v 6 -c:v ffv1 -pix_fmt yuv420p " +
          P("odd420.mkv"));
    Shell(ff + "-f lavfi -i testsrc2=size=95x63:rate=30 -frames:v 6 -c:v ffv1 -pix_fmt yuv444p " +
          P("odd444.mkv"));
    // Variable frame rate with B-frames: presentation times do not follow from the
    // index's decode times.
    Shell(ff + src + "-frames:v 40 -vf \"setpts='(N+if(gt(N,10),N-10,0)*0.5)/30/TB'\" "
          "-fps_mode passthrough -c:v libx264 -pix_fmt yuv420p -g 12 -bf 3 " + P("vfr.mp4"));
    // Timestamps that start at 5 s.
    Shell(ff + src + "-frames:v 20 -c:v libx264 -pix_fmt yuv420p -g 5 -bf 2 -output_ts_offset 5 " +
          P("offset.mkv"));

    depth_mm_ = DepthMm(12);
    WriteFile(P("mm.raw"), depth_mm_.data(), depth_mm_.size() * 2);
    const std::string raw16 = "-f rawvideo -pix_fmt gray16le -s 96x64 -r 30 -i " + P("mm.raw") + " ";
    Shell(ff + raw16 + "-c:v ffv1 -pix_fmt gray16le " + P("depth.mkv"));
    // The older dual-stream layout: H.264 heatmap first, FFV1 millimetres second.
    Shell(ff + "-f lavfi -i testsrc2=size=96x64:rate=30:duration=0.4 " + raw16 +
          "-map 0:v -map 1:v -c:v:0 libx264 -pix_fmt:v:0 yuv420p -c:v:1 ffv1 -pix_fmt:v:1 gray16le " +
          P("dual.mkv"));
    codes_.resize(depth_mm_.size());
    for (size_t i = 0; i < codes_.size(); ++i) codes_[i] = DepthMmToCode(depth_mm_[i]);
    WriteFile(P("codes.raw"), codes_.data(), codes_.size() * 2);
    Shell(ff + "-f rawvideo -pix_fmt gray12le -s 96x64 -r 30 -i " + P("codes.raw") +
          " -c:v libx265 -pix_fmt gray12le -preset fast -x265-params qp=6:range=full:log-level=error "
          "-tag:v hvc1 " + P("depth12.mp4"));

    // Bad input.
    const std::string whole = Shell("cat " + P("g30b.mp4"));
    WriteFile(P("cut.mp4"), whole.data(), whole.size() / 2);
    const std::string fast = Shell("cat " + P("faststart.mp4"));
    WriteFile(P("cut_faststart.mp4"), fast.data(), fast.size() / 2);
    WriteFile(P("text.mp4"), "this is not a video\n", 20);
    Shell(ff + "-f lavfi -i sine=duration=0.2 -c:a aac " + P("audio.mp4"));
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static std::string P(const std::string& name) { return dir_ + "/" + name; }

  // All frames of `file` as the ffmpeg CLI converts them to RGB24.
  static std::string CliRgb(const std::string& file) {
    return Shell("ffmpeg -nostdin -v error -i " + P(file) + " -f rawvideo -pix_fmt rgb24 -");
  }
  // The same with every decoded frame kept once (no constant-rate duplication).
  static std::string CliRgbPassthrough(const std::string& file) {
    return Shell("ffmpeg -nostdin -v error -i " + P(file) +
                 " -fps_mode passthrough -f rawvideo -pix_fmt rgb24 -");
  }

  static std::unique_ptr<VideoReader> OpenOk(const std::string& file) {
    auto r = VideoReader::Open(P(file));
    EXPECT_OK(r);
    return r.ok() ? std::move(r).value() : nullptr;
  }

  // Reads `indices` and compares each frame with the CLI's frame of that index.
  static void ExpectFramesMatch(VideoReader& reader, const std::string& cli,
                                const std::vector<int64_t>& indices, const std::string& what) {
    const size_t bytes = static_cast<size_t>(reader.info().width) * reader.info().height * 3;
    std::vector<uint8_t> out(indices.size() * bytes);
    Status st = reader.ReadRgb(indices, out);
    ASSERT_OK(st) << what;
    for (size_t k = 0; k < indices.size(); ++k) {
      ASSERT_LE((indices[k] + 1) * bytes, cli.size());
      EXPECT_EQ(0, std::memcmp(out.data() + k * bytes, cli.data() + indices[k] * bytes, bytes))
          << what << ": frame " << indices[k] << " (position " << k << ") differs from ffmpeg's";
    }
  }

  // Sequential, reversed, random, repeated and one-at-a-time orders against the CLI.
  static void CheckOrders(const std::string& file, int64_t frames, bool passthrough = false) {
    const std::string ref = passthrough ? CliRgbPassthrough(file) : CliRgb(file);
    auto reader = OpenOk(file);
    ASSERT_TRUE(reader);
    ASSERT_EQ(reader->info().frames, frames);
    ASSERT_EQ(ref.size(), static_cast<size_t>(frames) * reader->info().width * reader->info().height * 3)
        << file;
    ExpectFramesMatch(*reader, ref, Sequential(frames), file + " sequential");
    std::vector<int64_t> reversed = Sequential(frames);
    std::reverse(reversed.begin(), reversed.end());
    ExpectFramesMatch(*reader, ref, reversed, file + " reversed");
    std::mt19937 rng(7);
    std::vector<int64_t> random;
    for (int i = 0; i < 25; ++i)
      random.push_back(std::uniform_int_distribution<int64_t>(0, frames - 1)(rng));
    ExpectFramesMatch(*reader, ref, random, file + " random");
    ExpectFramesMatch(*reader, ref, {5, 5, 3, 5, frames - 1, 0, frames - 1, 5}, file + " repeated");
    // One frame per call: forward, backward, the same again (served from the held frame).
    for (int64_t i : {int64_t{2}, int64_t{3}, frames - 2, int64_t{1}, int64_t{1}, frames / 2})
      ExpectFramesMatch(*reader, ref, {i}, file + " single " + std::to_string(i));
    // A fresh reader whose first read is the last frame.
    auto fresh = OpenOk(file);
    ASSERT_TRUE(fresh);
    ExpectFramesMatch(*fresh, ref, {frames - 1, 0}, file + " fresh");
  }

  static std::vector<int64_t> Sequential(int64_t n) {
    std::vector<int64_t> v(n);
    std::iota(v.begin(), v.end(), 0);
    return v;
  }

  static std::string dir_;
  static std::vector<uint16_t> depth_mm_, codes_;
};

std::string VideoReaderTest::dir_;
std::vector<uint16_t> VideoReaderTest::depth_mm_, VideoReaderTest::codes_;

// ---- depth code ------------------------------------------------------------------------

TEST(DepthCode, HandComputedValues) {
  EXPECT_EQ(DepthMmToCode(0), 0);      // no depth
  EXPECT_EQ(DepthMmToCode(1), 0);      // below 100 mm: clipped
  EXPECT_EQ(DepthMmToCode(50), 0);
  EXPECT_EQ(DepthMmToCode(100), 0);
  EXPECT_EQ(DepthMmToCode(101), 10);   // 10.416 -> 10
  EXPECT_EQ(DepthMmToCode(150), 424);  // 424.430
  EXPECT_EQ(DepthMmToCode(1000), 2410);  // 2410.284
  EXPECT_EQ(DepthMmToCode(2500), 3369);  // 3369.432
  EXPECT_EQ(DepthMmToCode(4999), 4095);  // 4094.79
  EXPECT_EQ(DepthMmToCode(5000), 4095);
  EXPECT_EQ(DepthMmToCode(65535), 4095);  // beyond 5 m: clipped
  EXPECT_EQ(DepthCodeToMm(0), 100);  // code 0 decodes to 100 mm, not 0
  EXPECT_EQ(DepthCodeToMm(1), 100);  // 100.096
  EXPECT_EQ(DepthCodeToMm(1000), 260);  // 259.949
  EXPECT_EQ(DepthCodeToMm(2048), 707);  // 707.445
  EXPECT_EQ(DepthCodeToMm(2410), 1000);  // 999.729
  EXPECT_EQ(DepthCodeToMm(4095), 5000);
}

TEST(DepthCode, RoundTripWithinOneStep) {
  // One code is a factor 50^(1/4095) ~ 1.00096: the round trip stays within it.
  const double step = std::exp(std::log(50.0) / 4095);
  for (int mm = 100; mm <= 5000; ++mm) {
    const double back = DepthCodeToMm(DepthMmToCode(static_cast<uint16_t>(mm)));
    EXPECT_LE(std::abs(back - mm), mm * (step - 1) / 2 + 0.5) << mm;
  }
  for (int c = 0; c <= 4095; ++c) {
    // Below ~1050 mm a code step is under 1 mm and neighbouring codes share a
    // millimetre value; above it every code has its own and survives the round trip.
    const uint16_t mm = DepthCodeToMm(static_cast<uint16_t>(c));
    if (c >= 2450) {
      EXPECT_EQ(DepthMmToCode(mm), c) << c;
    }
  }
}

// ---- opening -----------------------------------------------------------------------------

TEST_F(VideoReaderTest, InfoOfEachKind) {
  auto g2 = OpenOk("g2.mp4");
  ASSERT_TRUE(g2);
  EXPECT_EQ(g2->info().width, kW);
  EXPECT_EQ(g2->info().height, kH);
  EXPECT_EQ(g2->info().frames, 40);
  EXPECT_EQ(g2->info().codec, "h264");
  EXPECT_EQ(g2->info().pix_fmt, "yuv420p");
  EXPECT_FALSE(g2->info().depth);
  EXPECT_NEAR(g2->info().fps, 30.0, 1e-9);

  auto hevc = OpenOk("hevc.mp4");
  ASSERT_TRUE(hevc);
  EXPECT_EQ(hevc->info().codec, "hevc");
  EXPECT_EQ(hevc->info().frames, 30);
  EXPECT_FALSE(hevc->info().depth);

  auto d12 = OpenOk("depth12.mp4");
  ASSERT_TRUE(d12);
  EXPECT_EQ(d12->info().codec, "hevc");
  EXPECT_EQ(d12->info().pix_fmt, "gray12le");
  EXPECT_TRUE(d12->info().depth);
  EXPECT_EQ(d12->info().frames, 12);

  auto ffv1 = OpenOk("depth.mkv");
  ASSERT_TRUE(ffv1);
  EXPECT_EQ(ffv1->info().codec, "ffv1");
  EXPECT_EQ(ffv1->info().pix_fmt, "gray16le");
  EXPECT_TRUE(ffv1->info().depth);
  EXPECT_EQ(ffv1->info().frames, 12);  // mkv: counted by a packet scan

  auto dual = OpenOk("dual.mkv");
  ASSERT_TRUE(dual);
  EXPECT_EQ(dual->info().stream_index, 1);  // found by codec, not by position
  EXPECT_EQ(dual->info().codec, "ffv1");
  EXPECT_TRUE(dual->info().depth);
  EXPECT_EQ(dual->info().frames, 12);
}

TEST_F(VideoReaderTest, MissingFile) {
  auto r = VideoReader::Open(P("nope.mp4"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("nope.mp4")) << r.status().message();
}

TEST_F(VideoReaderTest, TruncatedFile) {
  // moov at the end: the half file has no index at all.
  auto r = VideoReader::Open(P("cut.mp4"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << r.status().ToString();
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("cut.mp4")) << r.status().message();
  // moov first: the index survives, the frames it lists do not.
  auto f = VideoReader::Open(P("cut_faststart.mp4"));
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kCorruption) << f.status().ToString();
  EXPECT_THAT(f.status().message(), ::testing::HasSubstr("cut_faststart.mp4"));
  EXPECT_THAT(f.status().message(), ::testing::HasSubstr("truncated")) << f.status().message();
}

TEST_F(VideoReaderTest, TextFileNamedMp4) {
  auto r = VideoReader::Open(P("text.mp4"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << r.status().ToString();
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("text.mp4"));
}

TEST_F(VideoReaderTest, NoVideoStream) {
  auto r = VideoReader::Open(P("audio.mp4"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("audio.mp4"));
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("no video stream")) << r.status().message();
}

TEST_F(VideoReaderTest, IndexOutOfRange) {
  auto r = OpenOk("g2.mp4");
  ASSERT_TRUE(r);
  std::vector<uint8_t> out(kW * kH * 3);
  for (int64_t bad : {int64_t{40}, int64_t{-1}, int64_t{1000}}) {
    const int64_t idx[] = {bad};
    Status st = r->ReadRgb(idx, out);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.code(), StatusCode::kInvalid);
    EXPECT_THAT(st.message(), ::testing::HasSubstr("g2.mp4")) << st.message();
    EXPECT_THAT(st.message(), ::testing::HasSubstr("frame " + std::to_string(bad))) << st.message();
    EXPECT_THAT(st.message(), ::testing::HasSubstr("has 40 frames")) << st.message();
  }
  // The reader still works after an error.
  const int64_t ok[] = {39};
  EXPECT_OK(r->ReadRgb(ok, out));
}

TEST_F(VideoReaderTest, WrongBufferOrKind) {
  auto r = OpenOk("g2.mp4");
  ASSERT_TRUE(r);
  std::vector<uint8_t> small(10);
  const int64_t idx[] = {0};
  EXPECT_EQ(r->ReadRgb(idx, small).code(), StatusCode::kInvalid);
  std::vector<uint16_t> mm(kW * kH);
  Status st = r->ReadDepth(idx, mm);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), ::testing::HasSubstr("not a depth stream")) << st.message();
  auto d = OpenOk("depth.mkv");
  ASSERT_TRUE(d);
  std::vector<uint8_t> rgb(kW * kH * 3);
  EXPECT_EQ(d->ReadRgb(idx, rgb).code(), StatusCode::kInvalid);
}

// ---- RGB by index, byte for byte against the CLI ----------------------------------------------

TEST_F(VideoReaderTest, H264Gop2MatchesCli) {
  CheckOrders("g2.mp4", 40);
}

TEST_F(VideoReaderTest, H264Gop30BFramesMatchesCli) {
  CheckOrders("g30b.mp4", 75);
}

TEST_F(VideoReaderTest, HevcMatchesCli) {
  CheckOrders("hevc.mp4", 30);
}

TEST_F(VideoReaderTest, ColourTagsMatchCli) {
  CheckOrders("bt709.mp4", 10);
  CheckOrders("full.mp4", 10);
}

TEST_F(VideoReaderTest, OtherPixelFormatsMatchCli) {
  CheckOrders("yuv444.mp4", 6);
  CheckOrders("yuv422.mp4", 6);
  CheckOrders("hevc10.mp4", 6);
  CheckOrders("odd420.mkv", 6);
  CheckOrders("odd444.mkv", 6);
}

TEST_F(VideoReaderTest, VariableFrameRateWithBFrames) {
  CheckOrders("vfr.mp4", 40, /*passthrough=*/true);
  // Frame times are the packets' own presentation times, in order.
  auto r = OpenOk("vfr.mp4");
  ASSERT_TRUE(r);
  const std::string probe = Shell("ffprobe -v error -select_streams v:0 -show_entries packet=pts_time "
                                  "-of csv=p=0 " + P("vfr.mp4") + " | sort -g");
  std::istringstream lines(probe);
  double t = 0;
  for (int64_t i = 0; lines >> t; ++i) {
    auto got = r->FrameTime(i);
    ASSERT_OK(got);
    EXPECT_NEAR(*got, t, 1e-6) << "frame " << i;
  }
}

TEST_F(VideoReaderTest, NonZeroFirstTimestamp) {
  CheckOrders("offset.mkv", 20);
  auto r = OpenOk("offset.mkv");
  ASSERT_TRUE(r);
  auto t0 = r->FrameTime(0);
  ASSERT_OK(t0);
  EXPECT_NEAR(*t0, 5.0, 0.002);
  auto t19 = r->FrameTime(19);
  ASSERT_OK(t19);
  EXPECT_NEAR(*t19, 5.0 + 19 / 30.0, 0.002);
  EXPECT_FALSE(r->FrameTime(20).ok());
}

TEST_F(VideoReaderTest, FrameTimesWithBFrames) {
  auto r = OpenOk("g30b.mp4");
  ASSERT_TRUE(r);
  for (int64_t i : {0, 1, 2, 29, 30, 74}) {
    auto t = r->FrameTime(i);
    ASSERT_OK(t);
    EXPECT_NEAR(*t, i / 30.0, 1e-6) << i;
  }
}

// ---- depth ------------------------------------------------------------------------------------

TEST_F(VideoReaderTest, Ffv1DepthIsExact) {
  for (const char* file : {"depth.mkv", "dual.mkv"}) {
    auto r = OpenOk(file);
    ASSERT_TRUE(r);
    const std::vector<int64_t> idx = {11, 0, 5, 5, 6, 1};
    std::vector<uint16_t> out(idx.size() * kW * kH);
    Status st = r->ReadDepth(idx, out);
    ASSERT_OK(st);
    for (size_t k = 0; k < idx.size(); ++k)
      EXPECT_EQ(0, std::memcmp(out.data() + k * kW * kH, depth_mm_.data() + idx[k] * kW * kH, kW * kH * 2))
          << file << " frame " << idx[k];
  }
}

TEST_F(VideoReaderTest, HevcDepthThroughTheLogCode) {
  auto r = OpenOk("depth12.mp4");
  ASSERT_TRUE(r);
  // Exactly: the CLI's 12-bit samples through DepthCodeToMm.
  const std::string cli = Shell("ffmpeg -nostdin -v error -i " + P("depth12.mp4") +
                                " -f rawvideo -pix_fmt gray12le -");
  ASSERT_EQ(cli.size(), codes_.size() * 2);
  std::vector<int64_t> idx = Sequential(12);
  std::reverse(idx.begin(), idx.end());
  idx.push_back(3);
  std::vector<uint16_t> out(idx.size() * kW * kH);
  Status st = r->ReadDepth(idx, out);
  ASSERT_OK(st);
  int64_t code_error = 0, big_errors = 0;
  for (size_t k = 0; k < idx.size(); ++k) {
    for (size_t p = 0; p < static_cast<size_t>(kW * kH); ++p) {
      const size_t src = idx[k] * kW * kH + p;
      uint16_t code;
      std::memcpy(&code, cli.data() + src * 2, 2);
      ASSERT_EQ(out[k * kW * kH + p], DepthCodeToMm(code)) << "frame " << idx[k] << " pixel " << p;
      // Near what was written: qp=6 is not lossless; codes move by a step or two on
      // smooth depth (more next to the holes' edges).
      const int off = std::abs(static_cast<int>(code) - static_cast<int>(codes_[src]));
      code_error += off;
      big_errors += off > 12;
    }
  }
  const double pixels = static_cast<double>(idx.size()) * kW * kH;
  EXPECT_LE(code_error / pixels, 3.0) << "mean code error";
  EXPECT_LE(big_errors / pixels, 0.01) << "pixels more than 12 codes off";
  // Holes (0 mm) are code 0, which decodes to 100 mm (reference behaviour).
  EXPECT_EQ(codes_[0], 0);
  EXPECT_EQ(out[0], 100);
}

// ---- timestamps -------------------------------------------------------------------------------

TEST_F(VideoReaderTest, ReadRgbAtNearestFrame) {
  auto r = OpenOk("g30b.mp4");
  ASSERT_TRUE(r);
  const std::string ref = CliRgb("g30b.mp4");
  const size_t bytes = kW * kH * 3;
  // Out of order, duplicates, jitter below half a period, two clusters (gap 1.5 s > 0.5 s).
  const std::vector<double> targets = {2.0 + 0.01, 0.1, 0.1 + 0.012, 2.0 + 0.01, 0.0, 2.4667, 0.5};
  const std::vector<int64_t> want = {60, 3, 3, 60, 0, 74, 15};
  std::vector<uint8_t> out(targets.size() * bytes);
  Status st = r->ReadRgbAt(targets, 0.5 / 30, out, 0.5);
  ASSERT_OK(st);
  for (size_t k = 0; k < targets.size(); ++k)
    EXPECT_EQ(0, std::memcmp(out.data() + k * bytes, ref.data() + want[k] * bytes, bytes))
        << "target " << targets[k] << " should be frame " << want[k];
  // Past the end: an error naming the file, the target and the nearest frame.
  const double past[] = {0.0, 3.0};
  std::vector<uint8_t> out2(2 * bytes);
  st = r->ReadRgbAt(past, 0.5 / 30, out2);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), ::testing::HasSubstr("g30b.mp4")) << st.message();
  EXPECT_THAT(st.message(), ::testing::HasSubstr("target 3 s")) << st.message();
  EXPECT_THAT(st.message(), ::testing::HasSubstr("frame 74")) << st.message();
}

TEST_F(VideoReaderTest, ReadRgbAtTimestampsAcrossFiles) {
  const std::string a = CliRgb("g2.mp4"), b = CliRgb("g30b.mp4");
  const size_t bytes = kW * kH * 3;
  // Interleaved files, duplicates, out of order, and a gap wider than the cluster threshold.
  const std::vector<TimestampTarget> targets = {
      {P("g30b.mp4"), 2.3}, {P("g2.mp4"), 0.5}, {P("g30b.mp4"), 0.1}, {P("g2.mp4"), 0.0},
      {P("g2.mp4"), 0.5},   {P("g30b.mp4"), 2.3}, {P("g2.mp4"), 1.3}, {P("g30b.mp4"), 0.0},
  };
  const std::vector<std::pair<const std::string*, int64_t>> want = {
      {&b, 69}, {&a, 15}, {&b, 3}, {&a, 0}, {&a, 15}, {&b, 69}, {&a, 39}, {&b, 0}};
  std::vector<uint8_t> out(targets.size() * bytes);
  Status st = ReadRgbAtTimestamps(targets, out, -1, 0.5);
  ASSERT_OK(st);
  for (size_t k = 0; k < targets.size(); ++k)
    EXPECT_EQ(0, std::memcmp(out.data() + k * bytes, want[k].first->data() + want[k].second * bytes, bytes))
        << "target " << k << " (" << targets[k].path << " at " << targets[k].time_s << ")";

  // A target past the end of one file fails, naming that file.
  std::vector<TimestampTarget> bad = targets;
  bad.push_back({P("g2.mp4"), 1.5});
  std::vector<uint8_t> out2(bad.size() * bytes);
  st = ReadRgbAtTimestamps(bad, out2);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), ::testing::HasSubstr("g2.mp4")) << st.message();
  EXPECT_THAT(st.message(), ::testing::HasSubstr("target 1.5 s")) << st.message();

  // A missing file fails by name.
  const TimestampTarget missing[] = {{P("none.mp4"), 0.0}};
  std::vector<uint8_t> out3(bytes);
  st = ReadRgbAtTimestamps(missing, out3);
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace reel
