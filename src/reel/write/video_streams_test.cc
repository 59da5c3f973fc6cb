// SlotStream: the timing rules (latest frame wins, repeat on a gap) and the queue
// policies, checked through the files' frame counts and the drop counters.
#include "write/video_streams.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "reel/fs.h"
#include "testing/status_matchers.h"

namespace reel::internal {
namespace {

namespace stdfs = std::filesystem;

class SlotStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = JoinPath(::testing::TempDir(), "reel_slot_stream.XXXXXX");
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { stdfs::remove_all(dir_); }

  SlotStreamOptions Options(const std::string& name, int w, int h) {
    SlotStreamOptions o;
    o.slot = "stereo_left";
    o.encoder.width = w;
    o.encoder.height = h;
    o.encoder.fps = 30;
    o.encoder.preset = "ultrafast";
    o.temp_path = JoinPath(dir_, name);
    return o;
  }

  std::string dir_;
};

// Frames in `path` by the ffprobe CLI (independent of reel's reader).
int64_t ProbeFrames(const std::string& path) {
  const std::string cmd = "ffprobe -v error -count_packets -select_streams v:0 -show_entries "
                          "stream=nb_read_packets -of csv=p=0 '" + path + "'";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return -1;
  char buf[64] = {};
  const bool got = std::fgets(buf, sizeof buf, p) != nullptr;
  ::pclose(p);
  return got ? std::atoll(buf) : -1;
}

TEST_F(SlotStreamTest, LatestFrameWinsAndGapsRepeat) {
  auto s = SlotStream::Open(Options("a.mp4", 32, 24));
  ASSERT_OK(s);
  std::vector<uint8_t> frame(32 * 24 * 3, 100);
  ASSERT_OK((*s)->Tick());  // row 0: nothing pushed yet -> black, a repeat
  for (int k = 0; k < 3; ++k) ASSERT_TRUE((*s)->PushRgb(frame).ok());
  ASSERT_OK((*s)->Tick());  // row 1: the third push; two superseded
  ASSERT_OK((*s)->Tick());  // rows 2, 3: gap
  ASSERT_OK((*s)->Tick());
  ASSERT_OK((*s)->PushRgb(frame));
  ASSERT_OK((*s)->Tick());  // row 4
  ASSERT_OK((*s)->Finish());
  EXPECT_EQ((*s)->frames_written(), 5);
  const SlotDrops d = (*s)->drops();
  EXPECT_EQ(d.repeated, 3);
  EXPECT_EQ(d.longest_gap_rows, 2);
  EXPECT_EQ(d.superseded, 2);
  EXPECT_EQ(d.queue_dropped, 0);
  EXPECT_EQ(ProbeFrames(JoinPath(dir_, "a.mp4")), 5);
}

TEST_F(SlotStreamTest, WrongFrameSizeOrKindIsInvalid) {
  auto s = SlotStream::Open(Options("b.mp4", 32, 24));
  ASSERT_OK(s);
  std::vector<uint8_t> small(10);
  Status st = (*s)->PushRgb(small);
  EXPECT_EQ(st.code(), StatusCode::kInvalid);
  EXPECT_THAT(st.message(), ::testing::HasSubstr("stereo_left")) << st.message();
  EXPECT_THAT(st.message(), ::testing::HasSubstr("2304")) << st.message();
  std::vector<uint16_t> depth(32 * 24);
  EXPECT_EQ((*s)->PushDepth(depth).code(), StatusCode::kInvalid);
}

// A slow encoder (HEVC "medium" at 320x240) and rows arriving at once: with kBlock every
// pushed frame is encoded; with kDrop the queue overflows, frames are counted as dropped,
// and the file still holds one frame per row.
TEST_F(SlotStreamTest, QueuePoliciesKeepOneFramePerRow) {
  for (QueueFullPolicy policy : {QueueFullPolicy::kBlock, QueueFullPolicy::kDrop}) {
    const bool drop = policy == QueueFullPolicy::kDrop;
    SlotStreamOptions o = Options(drop ? "drop.mp4" : "block.mp4", 320, 240);
    o.encoder.codec = "hevc";
    o.encoder.preset = "medium";
    o.queue_frames = 1;
    o.queue_full = policy;
    auto s = SlotStream::Open(o);
    ASSERT_OK(s);
    std::vector<uint8_t> frame(320 * 240 * 3);
    const int rows = 10;
    for (int i = 0; i < rows; ++i) {
      for (size_t k = 0; k < frame.size(); ++k) frame[k] = static_cast<uint8_t>((k * 7 + i * 13) & 255);
      ASSERT_OK((*s)->PushRgb(frame));
      ASSERT_OK((*s)->Tick());
    }
    ASSERT_OK((*s)->Finish());
    EXPECT_EQ((*s)->frames_written(), rows);
    EXPECT_EQ(ProbeFrames(o.temp_path), rows);
    const SlotDrops d = (*s)->drops();
    if (drop) {
      EXPECT_GT(d.queue_dropped, 0) << "the encoder kept up with 320x240 HEVC 'medium' at once";
    } else {
      EXPECT_EQ(d.queue_dropped, 0);
    }
    EXPECT_EQ(d.repeated, 0);
  }
}

TEST_F(SlotStreamTest, BadEncoderSettingsFailAtOpen) {
  SlotStreamOptions o = Options("odd.mp4", 33, 24);
  auto s = SlotStream::Open(o);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), ::testing::HasSubstr("even width and height")) << s.status().message();
  o = Options("q.mp4", 32, 24);
  o.queue_frames = 0;
  EXPECT_EQ(SlotStream::Open(o).status().code(), StatusCode::kInvalid);
}

}  // namespace
}  // namespace reel::internal
