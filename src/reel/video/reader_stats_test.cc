// How VideoReader serves a read, counted (VideoReadStats): the seeks and decoded frames
// of a random frame, of a sequential read and of a timestamp batch, against files made by
// the ffmpeg CLI with known keyframes and counts worked out from ffprobe's packet list,
// independently of reel. Every frame read is also compared with the CLI's, byte for byte.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
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
constexpr size_t kRgbBytes = size_t{kW} * kH * 3;

using ::reel::testing::Shell;

// One packet of ffprobe's list, in decode order.
struct Packet {
  int64_t pts = 0;
  bool key = false;
};

class VideoReadStatsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/reel_video_stats_test_XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    const std::string ff = "ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=size=96x64:rate=30 -frames:v 75 ";
    // Keyframes exactly every 30 frames (no scene-cut keyframes); without and with B-frames.
    Shell(ff + "-c:v libx264 -pix_fmt yuv420p -g 30 -sc_threshold 0 -bf 0 " + P("nob.mp4"));
    Shell(ff + "-c:v libx264 -pix_fmt yuv420p -g 30 -sc_threshold 0 -bf 3 " + P("b3.mp4"));
    // 12-bit gray HEVC as the recorder writes depth (no B-frames), a keyframe every 10.
    if (HaveHevc12Encoder())
      Shell(ff + "-c:v libx265 -pix_fmt gray12le -preset fast -tag:v hvc1 -x265-params "
                 "qp=6:range=full:bframes=0:keyint=10:min-keyint=10:scenecut=0:log-level=error " +
            P("depth.mp4"));
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static std::string P(const std::string& name) { return dir_ + "/" + name; }

  static std::string CliFrames(const std::string& file, const std::string& pix_fmt) {
    return Shell("ffmpeg -nostdin -v error -i " + P(file) + " -f rawvideo -pix_fmt " + pix_fmt + " -");
  }

  // The stream's packets in decode order, from ffprobe.
  static std::vector<Packet> Packets(const std::string& file) {
    std::istringstream in(Shell("ffprobe -v error -select_streams v:0 -show_entries packet=pts,flags "
                                "-of csv=p=0 " + P(file)));
    std::vector<Packet> out;
    std::string line;
    while (std::getline(in, line)) {
      const size_t comma = line.find(',');
      if (comma == std::string::npos) continue;
      out.push_back({std::stoll(line.substr(0, comma)), line.find('K', comma) != std::string::npos});
    }
    return out;
  }

  static std::unique_ptr<VideoReader> Open(const std::string& file, int threads = 0) {
    VideoReaderOptions o;
    o.threads = threads;
    auto r = VideoReader::Open(P(file), o);
    EXPECT_OK(r);
    return r.ok() ? std::move(r).value() : nullptr;
  }

  static void ExpectRgb(VideoReader& r, const std::string& cli, const std::vector<int64_t>& indices,
                        const std::string& what) {
    std::vector<uint8_t> out(indices.size() * kRgbBytes);
    const Status st = r.ReadRgb(indices, out);
    ASSERT_OK(st) << what;
    for (size_t k = 0; k < indices.size(); ++k)
      EXPECT_EQ(0, std::memcmp(out.data() + k * kRgbBytes, cli.data() + indices[k] * kRgbBytes, kRgbBytes))
          << what << ": frame " << indices[k] << " differs from ffmpeg's";
  }

  static std::string dir_;
};

std::string VideoReadStatsTest::dir_;

// Frame k of a GOP-30 stream without B-frames: one seek, to the keyframe before it, and
// exactly the frames from that keyframe to k decoded (the decoder drained after k, so no
// frame past it); on frame threads when that is 6 frames or more, else on one thread.
TEST_F(VideoReadStatsTest, RandomFrameDecodesFromItsKeyframeToIt) {
  const std::string cli = CliFrames("nob.mp4", "rgb24");
  auto r = Open("nob.mp4");
  ASSERT_TRUE(r);
  for (int64_t k : {74, 45, 30, 29, 17, 1, 0, 59}) {
    r->ResetStats();
    ExpectRgb(*r, cli, {k}, "frame " + std::to_string(k));
    const int64_t key = k / 30 * 30;
    const VideoReadStats& s = r->stats();
    EXPECT_EQ(s.requests, 1) << k;
    EXPECT_EQ(s.seeks, 1) << k;
    EXPECT_EQ(s.threaded_seeks, k - key + 1 >= 6 ? 1 : 0) << "frame " << k << ": threads by the frames decoded";
    EXPECT_EQ(s.frames_decoded, k - key + 1) << k;
    EXPECT_EQ(s.packets_read, k - key + 1) << k;
    EXPECT_EQ(s.frames_converted, 1) << k;
    EXPECT_EQ(s.drains, 1) << k;
  }
}

// With B-frames the packets up to the target's, in decode order, are read and sent (the
// count from ffprobe's packet list), none after it; frames nothing refers to are skipped,
// so at most those packets' frames are decoded.
TEST_F(VideoReadStatsTest, RandomFrameWithBFramesReadsUpToItsPacket) {
  const std::string cli = CliFrames("b3.mp4", "rgb24");
  const std::vector<Packet> packets = Packets("b3.mp4");
  ASSERT_EQ(packets.size(), 75u);
  std::vector<int64_t> pts;
  for (const Packet& p : packets) pts.push_back(p.pts);
  std::sort(pts.begin(), pts.end());
  auto r = Open("b3.mp4");
  ASSERT_TRUE(r);
  int64_t read = 0, decoded = 0;
  for (int64_t k : {73, 44, 31, 30, 29, 2, 0, 61}) {
    // Decode order: from the last keyframe presented at or before k to k's own packet.
    size_t first = 0, last = 0;
    for (size_t d = 0; d < packets.size(); ++d) {
      if (packets[d].key && packets[d].pts <= pts[k]) first = d;
      if (packets[d].pts == pts[k]) last = d;
    }
    r->ResetStats();
    ExpectRgb(*r, cli, {k}, "frame " + std::to_string(k));
    const VideoReadStats& s = r->stats();
    EXPECT_EQ(s.seeks, 1) << k;
    EXPECT_EQ(s.packets_read, static_cast<int64_t>(last - first + 1)) << k;
    EXPECT_LE(s.frames_decoded, s.packets_read) << k;
    EXPECT_GE(s.frames_decoded, 1) << k;
    EXPECT_EQ(s.drains, 1) << k;
    read += s.packets_read;
    decoded += s.frames_decoded;
  }
  EXPECT_LT(decoded, read) << "no non-reference B-frame was skipped";
}

// A sequential read, in batches or a frame at a time, never seeks after positioning the
// demuxer and decodes every frame once; batches run on the reader's threads.
TEST_F(VideoReadStatsTest, SequentialReadsNeverSeek) {
  const std::string cli = CliFrames("b3.mp4", "rgb24");
  for (int threads : {0, 1, 3}) {
    auto r = Open("b3.mp4", threads);
    ASSERT_TRUE(r);
    for (int64_t a = 0; a < 75; a += 15) {
      std::vector<int64_t> batch;
      for (int64_t i = a; i < a + 15; ++i) batch.push_back(i);
      ExpectRgb(*r, cli, batch, "batch at " + std::to_string(a));
    }
    const VideoReadStats& s = r->stats();
    EXPECT_EQ(s.requests, 5);
    EXPECT_EQ(s.seeks, 1) << "threads " << threads << ": only the first read positions the demuxer";
    EXPECT_EQ(s.threaded_seeks, threads == 1 ? 0 : 1) << threads;
    EXPECT_EQ(s.packets_read, 75) << threads;
    EXPECT_EQ(s.frames_decoded, 75) << threads;
    EXPECT_EQ(s.frames_converted, 75) << threads;
    EXPECT_EQ(s.drains, 0) << threads;
    // An empty read does nothing.
    ASSERT_OK(r->ReadRgb({}, {}));
    EXPECT_EQ(r->stats().requests, 5);
  }
  // A frame per call: the first read looks random (one thread, drained); the second one
  // continues it, so it seeks once more, to the threaded decoder, and no read after that seeks.
  auto r = Open("b3.mp4");
  ASSERT_TRUE(r);
  for (int64_t i = 0; i < 75; ++i) ExpectRgb(*r, cli, {i}, "single " + std::to_string(i));
  EXPECT_EQ(r->stats().seeks, 2);
  EXPECT_EQ(r->stats().threaded_seeks, 1);
  EXPECT_EQ(r->stats().frames_converted, 75);
  EXPECT_LE(r->stats().frames_decoded, 75 + 2);
}

// ReadRgbAtTimestamps: one seek per cluster of nearby targets (gaps <= cluster_gap_s), also
// for a cluster that spans a keyframe, in any order asked, per file.
TEST_F(VideoReadStatsTest, TimestampBatchSeeksOncePerCluster) {
  const std::string nob = CliFrames("nob.mp4", "rgb24"), b3 = CliFrames("b3.mp4", "rgb24");
  struct Case {
    std::vector<TimestampTarget> targets;
    std::vector<std::pair<const std::string*, int64_t>> frames;
    int64_t seeks;
  };
  const std::vector<Case> cases = {
      // Two clusters in one file: frames 3, 6, 9 and 60, 63 (gap 1.7 s > 1 s).
      {{{P("nob.mp4"), 2.1}, {P("nob.mp4"), 0.1}, {P("nob.mp4"), 0.3}, {P("nob.mp4"), 2.0}, {P("nob.mp4"), 0.2}},
       {{&nob, 63}, {&nob, 3}, {&nob, 9}, {&nob, 60}, {&nob, 6}},
       2},
      // One cluster across the keyframe at 30: frames 15..45 by 0.2 s steps.
      {{{P("nob.mp4"), 0.5}, {P("nob.mp4"), 0.7}, {P("nob.mp4"), 0.9}, {P("nob.mp4"), 1.1}, {P("nob.mp4"), 1.3},
        {P("nob.mp4"), 1.5}},
       {{&nob, 15}, {&nob, 21}, {&nob, 27}, {&nob, 33}, {&nob, 39}, {&nob, 45}},
       1},
      // Two files, one cluster each, interleaved.
      {{{P("b3.mp4"), 2.3}, {P("nob.mp4"), 0.0}, {P("b3.mp4"), 1.9}, {P("nob.mp4"), 0.4}},
       {{&b3, 69}, {&nob, 0}, {&b3, 57}, {&nob, 12}},
       2},
  };
  for (size_t c = 0; c < cases.size(); ++c) {
    const Case& cs = cases[c];
    std::vector<uint8_t> out(cs.targets.size() * kRgbBytes);
    VideoReadStats s;
    const Status st = ReadRgbAtTimestamps(cs.targets, out, -1, 1.0, &s);
    ASSERT_OK(st);
    EXPECT_EQ(s.seeks, cs.seeks) << "case " << c;
    EXPECT_EQ(s.frames_converted, static_cast<int64_t>(cs.targets.size())) << "case " << c;
    for (size_t k = 0; k < cs.targets.size(); ++k)
      EXPECT_EQ(0, std::memcmp(out.data() + k * kRgbBytes, cs.frames[k].first->data() + cs.frames[k].second * kRgbBytes,
                               kRgbBytes))
          << "case " << c << " target " << k;
  }
  // Without B-frames every frame is a reference: the cluster across the keyframe decodes
  // frames 0..45 once each.
  std::vector<uint8_t> out(6 * kRgbBytes);
  VideoReadStats s;
  ASSERT_OK(ReadRgbAtTimestamps(cases[1].targets, out, -1, 1.0, &s));
  EXPECT_EQ(s.frames_decoded, 46);
}

// 12-bit log-code depth decodes like RGB: frame k from its keyframe (every 10 frames).
TEST_F(VideoReadStatsTest, DepthRandomFrameDecodesFromItsKeyframe) {
  if (!HaveHevc12Encoder()) GTEST_SKIP() << "no 12-bit HEVC encoder";
  const std::string cli = CliFrames("depth.mp4", "gray12le");
  auto r = Open("depth.mp4");
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->info().depth);
  const size_t pixels = size_t{kW} * kH;
  for (int64_t k : {57, 23, 20, 9, 0}) {
    r->ResetStats();
    std::vector<uint16_t> mm(pixels);
    const int64_t one[] = {k};
    ASSERT_OK(r->ReadDepth(one, mm));
    const auto* codes = reinterpret_cast<const uint16_t*>(cli.data()) + k * pixels;
    for (size_t p = 0; p < pixels; ++p) ASSERT_EQ(mm[p], DepthCodeToMm(codes[p])) << "frame " << k << " pixel " << p;
    EXPECT_EQ(r->stats().seeks, 1) << k;
    EXPECT_EQ(r->stats().frames_decoded, k - k / 10 * 10 + 1) << k;
    EXPECT_EQ(r->stats().threaded_seeks, k - k / 10 * 10 + 1 >= 6 ? 1 : 0) << k;
  }
}

}  // namespace
}  // namespace reel
