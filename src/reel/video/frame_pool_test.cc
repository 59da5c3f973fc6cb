// FramePool: the batch plan (PlanFrameJobs) and batch reads checked against
// VideoReader::ReadRgb of the same files (itself checked against the ffmpeg CLI in
// reader_test and reader_stats_test), on files made by the ffmpeg CLI.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "reel/video.h"
#include "testing/shell.h"
#include "video/frame_plan.h"
#include "testing/status_matchers.h"

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

// GOP 2 (keyframes at even frames): one file's targets cut into pieces at keyframes only,
// each piece's frames ascending, every target in the one piece that holds its frame, no GOP
// (so no decoded frame) in two pieces, at most `threads` pieces per file, largest first.
TEST(SplitFrameJobs, CutsAFileAtKeyframesIntoBalancedPieces) {
  const auto gop2 = [](uint32_t, int64_t frame) { return frame - frame % 2; };
  // File 0: 16 frames, among them 6 and 7 (one GOP) and 30, 31; file 1: frame 5 twice.
  const std::vector<int64_t> frames0 = {40, 2, 7, 30, 12, 6, 18, 31, 25, 9, 51, 44, 60, 14, 21, 35};
  std::vector<FrameTarget> t;
  for (int64_t f : frames0) t.push_back({0, f, 0, static_cast<int64_t>(t.size())});
  t.push_back({1, 5, 0, static_cast<int64_t>(t.size())});
  t.push_back({1, 5, 0, static_cast<int64_t>(t.size())});
  const std::vector<internal::FrameJob> jobs = internal::SplitFrameJobs(t, internal::PlanFrameJobs(t), 2, gop2);
  std::vector<int64_t> seen;
  std::vector<size_t> served;
  int pieces0 = 0;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const internal::FrameJob& job = jobs[j];
    if (j > 0) {
      EXPECT_GE(jobs[j - 1].cost, job.cost) << "largest first";
    }
    EXPECT_TRUE(std::is_sorted(job.frames.begin(), job.frames.end()));
    EXPECT_EQ(std::adjacent_find(job.frames.begin(), job.frames.end()), job.frames.end());
    for (size_t k : job.targets) {
      EXPECT_EQ(t[k].file, job.file);
      EXPECT_TRUE(std::binary_search(job.frames.begin(), job.frames.end(), t[k].index)) << "target " << k;
      served.push_back(k);
    }
    if (job.file == 0) {
      ++pieces0;
      seen.insert(seen.end(), job.frames.begin(), job.frames.end());
      // No other piece of the file has a frame in this piece's GOPs (its first frame's
      // keyframe through its last frame).
      for (const internal::FrameJob& other : jobs) {
        if (&other == &job || other.file != 0) continue;
        for (int64_t f : other.frames) {
          EXPECT_FALSE(gop2(0, f) >= gop2(0, job.frames.front()) && gop2(0, f) <= gop2(0, job.frames.back()))
              << "frame " << f << " shares a GOP with a piece from " << job.frames.front();
        }
      }
    } else {
      EXPECT_EQ(job.frames, (std::vector<int64_t>{5}));
      EXPECT_EQ(job.targets.size(), 2u);
    }
  }
  EXPECT_EQ(pieces0, 2);
  std::sort(seen.begin(), seen.end());
  std::vector<int64_t> want = frames0;
  std::sort(want.begin(), want.end());
  EXPECT_EQ(seen, want);
  std::sort(served.begin(), served.end());
  EXPECT_EQ(served.size(), t.size());
  EXPECT_EQ(std::adjacent_find(served.begin(), served.end()), served.end());
  // One thread, or a file that lists no keyframes (every frame reached from frame 0): whole files.
  EXPECT_EQ(internal::SplitFrameJobs(t, internal::PlanFrameJobs(t), 1, gop2).size(), 2u);
  EXPECT_EQ(internal::SplitFrameJobs(t, internal::PlanFrameJobs(t), 4, [](uint32_t, int64_t) { return int64_t{0}; })
                .size(),
            2u);
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
    EXPECT_OK(r);
    std::vector<uint8_t> out(indices.size() * kRgbBytes);
    for (size_t k = 0; k < indices.size(); ++k) {
      const Status st = (*r)->ReadRgb({&indices[k], 1}, {out.data() + k * kRgbBytes, kRgbBytes});
      EXPECT_OK(st);
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
  o.threads = 1;  // one job per file (threads > 1 may cut a file: ManyJobsPerFile...)
  FramePool pool(o);
  ASSERT_OK(pool.Read(files, all, outputs));
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
  ASSERT_OK((*ra)->ReadRgb(std::vector<int64_t>{0, 2, 17, 33, 39}, scratch));
  ASSERT_OK((*rb)->ReadRgb(std::vector<int64_t>{4, 11, 29}, {scratch.data(), 3 * kRgbBytes}));
  EXPECT_EQ(s.frames_decoded, (*ra)->stats().frames_decoded + (*rb)->stats().frames_decoded);
  EXPECT_EQ(pool.open_readers(), 2u);
  // A second batch reuses the readers.
  ASSERT_OK(pool.Read(files, targets, outputs));
  EXPECT_EQ(pool.open_readers(), 2u);
}

// Four threads over one file's 16 frames: the file is read by several jobs (cut at its
// keyframes), and the slots hold exactly the frames ReadRgb returns, as uint8 and as float32
// (value / 255 in both layouts); the jobs together decode no frame more often than one ReadRgb
// of the distinct frames does.
TEST_F(FramePoolTest, ManyJobsPerFileSameBytesNoFrameDecodedTwice) {
  const std::vector<std::string> files = {P("a.mp4")};
  const std::vector<int64_t> frames = {37, 3, 20, 8, 21, 30, 1, 14, 26, 11, 33, 5, 17, 39, 24, 3};
  const std::vector<uint8_t> ref = Reference("a.mp4", frames);
  const int64_t n = static_cast<int64_t>(frames.size());
  std::vector<FrameTarget> targets;
  for (uint32_t out = 0; out < 3; ++out)
    for (int64_t s = 0; s < n; ++s) targets.push_back({0, frames[s], out, s});
  std::vector<uint8_t> hwc(n * kRgbBytes);
  std::vector<float> chw(n * kRgbBytes), hwcf(n * kRgbBytes);
  const std::vector<FrameOutput> outputs = {{hwc.data(), n, kW, kH, FrameLayout::kHwc, FrameDtype::kUint8},
                                            {chw.data(), n, kW, kH, FrameLayout::kChw, FrameDtype::kFloat32},
                                            {hwcf.data(), n, kW, kH, FrameLayout::kHwc, FrameDtype::kFloat32}};
  FramePoolOptions o;
  o.threads = 4;
  FramePool pool(o);
  for (int round = 0; round < 2; ++round) {  // the second with the readers the first left open
    pool.ResetStats();
    ASSERT_OK(pool.Read(files, targets, outputs));
    EXPECT_EQ(0, std::memcmp(hwc.data(), ref.data(), hwc.size()));
    for (size_t s = 0; s < frames.size(); ++s)
      for (size_t i = 0; i < kPixels; ++i)
        for (size_t c = 0; c < 3; ++c) {
          const float want = static_cast<float>(ref[s * kRgbBytes + i * 3 + c]) / 255.0f;
          ASSERT_EQ(chw[s * kRgbBytes + c * kPixels + i], want) << "slot " << s << " pixel " << i;
          ASSERT_EQ(hwcf[s * kRgbBytes + i * 3 + c], want) << "slot " << s << " pixel " << i;
        }
    const VideoReadStats st = pool.stats();
    EXPECT_GT(st.requests, 1) << "one file, several jobs";
    EXPECT_LE(st.requests, 4);
    EXPECT_EQ(st.frames_converted, 15);
    auto r = VideoReader::Open(P("a.mp4"));
    ASSERT_OK(r);
    std::vector<int64_t> distinct = frames;
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    std::vector<uint8_t> scratch(distinct.size() * kRgbBytes);
    ASSERT_OK((*r)->ReadRgb(distinct, scratch));
    EXPECT_EQ(st.frames_decoded, (*r)->stats().frames_decoded);
    EXPECT_LE(pool.open_readers(), 4u);
  }
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
  EXPECT_THAT(size.message(), ::testing::HasSubstr("small.mp4")) << size.ToString();
  const Status range = pool.Read(files, std::vector<FrameTarget>{{0, 40, 0, 0}}, out);
  EXPECT_EQ(range.code(), StatusCode::kInvalid) << range.ToString();
  const Status missing = pool.Read(files, std::vector<FrameTarget>{{0, 3, 0, 0}, {2, 0, 0, 1}}, out);
  EXPECT_FALSE(missing.ok());
  EXPECT_THAT(missing.message(), ::testing::HasSubstr("missing.mp4")) << missing.ToString();
  // The good file of that batch was still read.
  const std::vector<uint8_t> ref = Reference("a.mp4", {3});
  EXPECT_EQ(0, std::memcmp(buf.data(), ref.data(), kRgbBytes));
}

}  // namespace
}  // namespace reel
