// The pairing core of reel/align.h, on hand-made stamps.
#include "reel/align.h"

#include <gtest/gtest.h>

#include "reel/decode.h"

namespace reel {
namespace {

std::vector<int64_t> Sample(const std::vector<FramePairing>& p) {
  std::vector<int64_t> out;
  for (const auto& x : p) out.push_back(x.a);
  return out;
}

TEST(ClockSegments, ABackwardStepStartsASegmentAndZeroStampsAreSkipped) {
  EXPECT_EQ(ClockSegments({100, 0, 200, 200, 50, 0, 60, 10}), (std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1, 2}));
  EXPECT_TRUE(ClockSegments({}).empty());
}

TEST(PairFrames, NearestWithinToleranceTiesGoToTheEarlierSample) {
  // Frames every 100; samples at 140 and 160: frame 150 would tie, frame 100 and 200 pick.
  const std::vector<int64_t> frames = {100, 150, 200, 400};
  const std::vector<int64_t> ns = {140, 160};
  auto p = PairFrames(frames, ns, {0, 2}, 50, AlignMethod::kNearest);
  EXPECT_EQ(Sample(p), (std::vector<int64_t>{0, 0, 1, -1}));
  EXPECT_EQ(p[0].dt_ns, 40);
  EXPECT_EQ(p[1].dt_ns, -10);
  EXPECT_EQ(p[2].dt_ns, -40);
}

TEST(PairFrames, ToleranceEdgeIsInclusive) {
  auto p = PairFrames({1000}, {1050}, {0}, 50, AlignMethod::kNearest);
  EXPECT_EQ(p[0].a, 0);
  p = PairFrames({1000}, {1051}, {0}, 50, AlignMethod::kNearest);
  EXPECT_EQ(p[0].a, -1);
}

TEST(PairFrames, ZeroStampsNeverPairAndRepeatedStampsAreOneSample) {
  // Sample 1 has no stamp; sample 3 repeats sample 2's stamp (the same sample twice).
  auto p = PairFrames({100, 200, 0}, {0, 0, 190, 190}, {0, 1, 1, 2}, 30, AlignMethod::kNearest);
  EXPECT_EQ(Sample(p), (std::vector<int64_t>{-1, 2, -1}));
}

TEST(PairFrames, InterpolationBetweenTheSamplesEitherSide) {
  auto p = PairFrames({100, 130, 300}, {90, 140, 290, 400}, {0, 1, 2, 2}, 50, AlignMethod::kInterpolate);
  // Frame 100: 90..140 (50 apart <= 100): w = 10/50. Frame 130: w = 40/50, nearer is 140.
  EXPECT_EQ(p[0].a, 0);
  EXPECT_EQ(p[0].b, 1);
  EXPECT_DOUBLE_EQ(p[0].w, 0.2);
  EXPECT_EQ(p[0].dt_ns, -10);
  EXPECT_DOUBLE_EQ(p[1].w, 0.8);
  EXPECT_EQ(p[1].dt_ns, 10);
  // Frame 300: 290..400 are 110 apart (> 2 x 50): nearest within tolerance instead.
  EXPECT_EQ(p[2].a, 2);
  EXPECT_EQ(p[2].b, -1);
  EXPECT_EQ(p[2].dt_ns, -10);
}

TEST(PairFrames, AnExactStampIsTakenAsItIs) {
  auto p = PairFrames({100}, {50, 100, 150}, {0, 0, 0}, 100, AlignMethod::kInterpolate);
  EXPECT_EQ(p[0].a, 1);
  EXPECT_EQ(p[0].b, -1);
  EXPECT_EQ(p[0].dt_ns, 0);
}

TEST(PairFrames, NoSampleIsPairedAcrossAReset) {
  // hardware_ns wraps at row 2; the sample hung on row 3 (ns 17) is of the new segment and the
  // sample of row 0 (ns 12) is of the old one even though its stamp is within 2 of frame 2.
  const std::vector<int64_t> frames = {1000, 1010, 10, 20};
  auto p = PairFrames(frames, {12, 17}, {0, 3}, 5, AlignMethod::kNearest);
  EXPECT_EQ(Sample(p), (std::vector<int64_t>{-1, -1, -1, 1}));
}

TEST(NearestFrames, AtAnyDistanceWithinTheSegmentTiesEarlier) {
  EXPECT_EQ(NearestFrames({100, 200, 300}, {90, 100, 149, 150, 151, 250, 251, 300, 1000}, std::vector<int64_t>(9, 0)),
            (std::vector<int64_t>{0, 0, 0, 0, 1, 1, 2, 2, 2}));
  EXPECT_EQ(NearestFrames({0, 200, 0, 400}, {0, 10, 299, 300, 301, 5000}, std::vector<int64_t>(6, 1)),
            (std::vector<int64_t>{-1, 1, 1, 1, 3, 3}));
  EXPECT_EQ(NearestFrames({0, 0}, {10, 20}, {0, 1}), (std::vector<int64_t>{-1, -1}));
  EXPECT_EQ(NearestFrames({100, 100, 200}, {100}, {0}), (std::vector<int64_t>{0}));
  // After a reset, a sample hung on row 2 pairs within rows 2..3 only.
  EXPECT_EQ(NearestFrames({1000, 1010, 10, 20}, {1005, 1005}, {0, 2}), (std::vector<int64_t>{0, 3}));
}

TEST(MapImuClock, RawDeviceStampsCarryTheImuToTheFrameClock) {
  // Frames on the host clock, raw_hw_ns on the device clock (with 3 ns of jitter on row 1).
  const std::vector<int64_t> frames = {5000, 5100, 5200};
  const std::vector<int64_t> raw = {70, 173, 270};
  auto m = MapImuClock(frames, raw, {60, 80, 170, 0, 300}, {0, 0, 1, 1, 2});
  EXPECT_EQ(m.source, "raw_hw_ns");
  EXPECT_EQ(m.ns, (std::vector<int64_t>{4990, 5010, 5097, 0, 5230}));
}

TEST(MapImuClock, WithoutRawStampsHardwareNsIsTheDeviceClockWhenTheyOverlap) {
  auto m = MapImuClock({1'000'000'000, 1'033'000'000}, {}, {1'001'000'000, 0}, {0, 1});
  EXPECT_EQ(m.source, "hardware_ns");
  EXPECT_EQ(m.ns, (std::vector<int64_t>{1'001'000'000, 0}));
}

TEST(MapImuClock, UnrelatedClocksFallBackToTheMedianRowOffsetAndSayIt) {
  // hardware_ns (and raw_hw_ns) near 9e12, IMU near 7e9: hardware_ns minus each row's last IMU
  // stamp is F-D+5, F-D+7, F-D+5; the median is F-D+5.
  const int64_t F = 9'000'000'000'000, D = 7'000'000'000;
  const std::vector<int64_t> frames = {F, F + 100, F + 200};
  auto m = MapImuClock(frames, {F + 1, F + 101, F + 201}, {D - 10, D - 5, D + 93, D + 195},
                       {0, 0, 1, 2});
  EXPECT_EQ(m.source, "row_offset");
  const int64_t off = F - D + 5;
  EXPECT_EQ(m.ns, (std::vector<int64_t>{D - 10 + off, D - 5 + off, D + 93 + off, D + 195 + off}));
}

TEST(FindTimeEvents, ResetsRepeatsAndSilences) {
  // Stamps in ms: a sample every 10 ms, repeated at row 2, a reset at row 4, then a stop.
  const int64_t ms = 1'000'000;
  std::vector<std::vector<int64_t>> rows = {{0}, {10 * ms}, {10 * ms}, {20 * ms}, {5 * ms}, {15 * ms}, {0}};
  auto e = FindTimeEvents("observation.x_ns", rows, 0, 0);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].kind, TimeEventKind::kRepeated);
  EXPECT_EQ(e[0].row, 2);
  EXPECT_EQ(e[1].kind, TimeEventKind::kReset);
  EXPECT_EQ(e[1].row, 4);
  EXPECT_EQ(e[1].from_ns, 20 * ms);
  EXPECT_EQ(e[1].to_ns, 5 * ms);
  // The same stream measured against frames that end 2 s after its last sample: it stopped.
  e = FindTimeEvents("observation.x_ns", {{10 * ms}, {20 * ms}, {30 * ms}, {0}}, 10 * ms, 2030 * ms);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].kind, TimeEventKind::kSilence);
  EXPECT_EQ(e[0].row, 2);
  EXPECT_EQ(e[0].to_row, 4);
  // A gap of 11 median intervals (> 1 s) inside the stream.
  std::vector<std::vector<int64_t>> slow;
  for (int i = 0; i < 10; ++i) slow.push_back({i * 200 * ms + 1});
  slow.push_back({9 * 200 * ms + 1 + 2200 * ms});
  e = FindTimeEvents("s", slow, 0, 0);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].kind, TimeEventKind::kSilence);
  EXPECT_EQ(e[0].row, 9);
  EXPECT_EQ(e[0].to_row, 10);
  // 10 intervals of 200 ms and one of 1.9 s: under 10 x median, no event.
  slow.back() = {9 * 200 * ms + 1 + 1900 * ms};
  EXPECT_TRUE(FindTimeEvents("s", slow, 0, 0).empty());
}

TEST(CanonicalLeftGlove, AntiTransposeAndItsOwnInverse) {
  std::vector<float> raw(256), canon(256), back(256);
  for (int i = 0; i < 256; ++i) raw[i] = static_cast<float>(i);
  CanonicalLeftGlove(raw.data(), canon.data());
  // values[::-1, ::-1].T: out[i][j] = in[15-j][15-i].
  EXPECT_EQ(canon[0], raw[15 * 16 + 15]);
  EXPECT_EQ(canon[1], raw[14 * 16 + 15]);
  EXPECT_EQ(canon[16], raw[15 * 16 + 14]);
  EXPECT_EQ(canon[3 * 16 + 5], raw[(15 - 5) * 16 + (15 - 3)]);
  CanonicalLeftGlove(canon.data(), back.data());
  EXPECT_EQ(back, raw);
  EXPECT_TRUE(IsLeftGlove("observation.left_glove"));
  EXPECT_TRUE(IsLeftGlove("observation.LEFT_hand"));
  EXPECT_FALSE(IsLeftGlove("observation.right_glove"));
}

TEST(ParseAlignMethod, NamesOnly) {
  EXPECT_EQ(*ParseAlignMethod("nearest"), AlignMethod::kNearest);
  EXPECT_EQ(*ParseAlignMethod("interpolate"), AlignMethod::kInterpolate);
  EXPECT_FALSE(ParseAlignMethod("linear").ok());
}

}  // namespace
}  // namespace reel
