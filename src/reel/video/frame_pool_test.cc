// FramePool: the batch plan (PlanFrameJobs) and batch reads checked against
// VideoReader::ReadRgb of the same files (itself checked against the ffmpeg CLI in
// reader_test and reader_stats_test), on files made by the ffmpeg CLI.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "reel/video.h"
#include "testing/shell.h"
#include "video/frame_plan.h"

namespace reel {
namespace {

namespace fs = std::filesystem;

constexpr int kW = 96, kH = 64;
constexpr size_t kPixels = size_t{kW} * kH;
constexpr size_t kRgbBytes = kPixels * 3;

TEST(PlanFrameJobs, GroupsByFileDistinctAscendingLargestFirst) {
  // file 1: frames 9, 3, 9, 5 (3 distinct); file 0: 7, 7 (1 distinct); file 2: 1, 0 (2).
  const std::vector<FrameTarget> t = {{1, 9, 0, 0}, {0, 7, 0, 1}, {1, 3, 0, 2}, {2, 1, 1, 0},
                                      {1, 9, 0, 3}, {0, 7, 0, 4}, {2, 0, 1, 1}, {1, 5, 0, 5}};
  const std::vector<internal::FrameJob> jobs = internal::PlanFrameJobs(t);
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[0].file, 1u);
  EXPECT_EQ(jobs[0].frames, (std::vector<int64_t>{3, 5, 9}));
  EXPECT_EQ(jobs[0].targets, (std::vector<size_t>{0, 2, 4, 7}));
  EXPECT_EQ(jobs[1].file, 2u);
  EXPECT_EQ(jobs[1].frames, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(jobs[1].targets, (std::vector<size_t>{3, 6}));
  EXPECT_EQ(jobs[2].file, 0u);
  EXPECT_EQ(jobs[2].frames, (std::vector<int64_t>{7}));
  EXPECT_EQ(jobs[2].targets, (std::vector<size_t>{1, 5}));
  EXPECT_TRUE(internal::PlanFrameJobs({}).empty());
}

class FramePoolTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/reel_frame_pool_test_XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    // Two files with different content, GOP 2 as the recorder writes; one of another size.
    const std::string ff = "ffmpeg -nostdin -v error -y -f lavfi -i ";
    testing::Shell(ff + "testsrc2=size=96x64:rate=30 -frames:v 40 -c:v libx264 -pix_fmt yuv420p -g 2 " + P("a.mp4"));
    testing::Shell(ff + "mandelbrot=size=96x64:rate=30 -frames:v 30 -c:v libx264 -pix_fmt yuv420p -g 2 " + P("b.mp4"));
    testing::Shell(ff + "testsrc2=size=64x48:rate=30 -frames:v 10 -c:v libx264 -pix_fmt yuv420p " + P("small.mp4"));
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static std::string P(const std::string& name) { return dir_ + "/" + name; }

  // The frames as VideoReader::ReadRgb returns them, one read per frame.
  static std::vector<uint8_t> Reference(const std::string& file, const std::vector<int64_t>& indices) {
    auto r = VideoReader::Open(P(file));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    std::vector<uint8_t> out(indices.size() * kRgbBytes);
    for (size_t k = 0; k < indices.size(); ++k) {
      const Status st = (*r)->ReadRgb({&indices[k], 1}, {out.data() + k * kRgbBytes, kRgbBytes});
      EXPECT_TRUE(st.ok()) << st.ToString();
    }
    return out;
  }

  static std::string dir_;
};

std::string FramePoolTest::dir_;

// Unsorted targets with repeats across two files land in their slots, equal to ReadRgb's
// frames; CHW float32 holds the same values / 255 in planes R, G, B; no frame is decoded
// more often than one ReadRgb of each file's distinct frames decodes it.
TEST_F(FramePoolTest, SlotsInTheOrderAskedLayoutsAndTypes) {
  const std::vector<std::string> files = {P("a.mp4"), P("b.mp4")};
  const std::vector<int64_t> a_frames = {33, 2, 17, 2, 39, 0}, b_frames = {29, 4, 4, 11};
  const std::vector<uint8_t> ref_a = Reference("a.mp4", a_frames), ref_b = Reference("b.mp4", b_frames);
  // Interleave the files; slot s of both outputs gets target s.
  std::vector<FrameTarget> targets;
  std::vector<const uint8_t*> want;
  for (size_t k = 0; k < a_frames.size() || k < b_frames.size(); ++k) {
    if (k < a_frames.size()) targets.push_back({0, a_frames[k], 0, static_cast<int64_t>(targets.size())});
    if (k < a_frames.size()) want.push_back(ref_a.data() + k * kRgbBytes);
    if (k < b_frames.size()) targets.push_back({1, b_frames[k], 0, static_cast<int64_t>(targets.size())});
    if (k < b_frames.size()) want.push_back(ref_b.data() + k * kRgbBytes);
  }
  std::vector<FrameTarget> chw_targets = targets;
  for (FrameTarget& t : chw_targets) t.output = 1;
  std::vector<FrameTarget> all = targets;
  all.insert(all.end(), chw_targets.begin(), chw_targets.end());

  std::vector<uint8_t> hwc(targets.size() * kRgbBytes);
  std::vector<float> chw(targets.size() * kRgbBytes);
  const std::vector<FrameOutput> outputs = {
      {hwc.data(), static_cast<int64_t>(targets.size()), kW, kH, FrameLayout::kHwc, FrameDtype::kUint8},
      {chw.data(), static_cast<int64_t>(targets.size()), kW, kH, FrameLayout::kChw, FrameDtype::kFloat32}};
  FramePoolOptions o;
  o.threads = 2;
  FramePool pool(o);
  ASSERT_TRUE(pool.Read(files, all, outputs).ok());
  for (size_t s = 0; s < targets.size(); ++s) {
    EXPECT_EQ(0, std::memcmp(hwc.data() + s * kRgbBytes, want[s], kRgbBytes)) << "slot " << s;
    for (size_t i = 0; i < kPixels; ++i)
      for (size_t c = 0; c < 3; ++c)
        ASSERT_EQ(chw[s * kRgbBytes + c * kPixels + i], static_cast<float>(want[s][i * 3 + c]) / 255.0f)
            << "slot " << s << " pixel " << i << " channel " << c;
  }
  // Each file read once (one request) for its distinct frames, both outputs from one decode.
  const VideoReadStats s = pool.stats();
  EXPECT_EQ(s.requests, 2);
  EXPECT_EQ(s.frames_converted, 5 + 3);
  auto ra = VideoReader::Open(P("a.mp4"));
  auto rb = VideoReader::Open(P("b.mp4"));
  ASSERT_TRUE(ra.ok() && rb.ok());
  std::vector<uint8_t> scratch(5 * kRgbBytes);
  ASSERT_TRUE((*ra)->ReadRgb(std::vector<int64_t>{0, 2, 17, 33, 39}, scratch).ok());
  ASSERT_TRUE((*rb)->ReadRgb(std::vector<int64_t>{4, 11, 29}, {scratch.data(), 3 * kRgbBytes}).ok());
  EXPECT_EQ(s.frames_decoded, (*ra)->stats().frames_decoded + (*rb)->stats().frames_decoded);
  EXPECT_EQ(pool.open_readers(), 2u);
  // A second batch reuses the readers.
  ASSERT_TRUE(pool.Read(files, targets, outputs).ok());
  EXPECT_EQ(pool.open_readers(), 2u);
}

TEST_F(FramePoolTest, RefusesBadTargetsAndReportsFileErrors) {
  const std::vector<std::string> files = {P("a.mp4"), P("small.mp4"), P("missing.mp4")};
  std::vector<uint8_t> buf(2 * kRgbBytes, 7);
  const std::vector<FrameOutput> out = {{buf.data(), 2, kW, kH, FrameLayout::kHwc, FrameDtype::kUint8}};
  FramePool pool;
  EXPECT_EQ(pool.Read(files, std::vector<FrameTarget>{{0, 1, 0, 2}}, out).code(), StatusCode::kInvalid);
  EXPECT_EQ(pool.Read(files, std::vector<FrameTarget>{{3, 1, 0, 0}}, out).code(), StatusCode::kInvalid);
  EXPECT_EQ(pool.Read(files, std::vector<FrameTarget>{{0, 1, 1, 0}}, out).code(), StatusCode::kInvalid);
  const Status size = pool.Read(files, std::vector<FrameTarget>{{1, 1, 0, 0}}, out);
  EXPECT_EQ(size.code(), StatusCode::kInvalid);
  EXPECT_NE(size.message().find("small.mp4"), std::string::npos) << size.ToString();
  const Status range = pool.Read(files, std::vector<FrameTarget>{{0, 40, 0, 0}}, out);
  EXPECT_EQ(range.code(), StatusCode::kInvalid) << range.ToString();
  const Status missing = pool.Read(files, std::vector<FrameTarget>{{0, 3, 0, 0}, {2, 0, 0, 1}}, out);
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("missing.mp4"), std::string::npos) << missing.ToString();
  // The good file of that batch was still read.
  const std::vector<uint8_t> ref = Reference("a.mp4", {3});
  EXPECT_EQ(0, std::memcmp(buf.data(), ref.data(), kRgbBytes));
}

}  // namespace
}  // namespace reel
