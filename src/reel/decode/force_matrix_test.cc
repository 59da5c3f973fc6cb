// Force-matrix codec (contract §7.2.1; reference-behaviour.md "Force matrix codec").
// Expected values are computed by hand from the documented formulas.
#include <arrow/api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "reel/decode.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

constexpr int64_t kRow = kForceMatrixRowValues;  // 750

std::vector<float> Decode(const std::vector<int16_t>& in, double scale) {
  std::vector<float> out(kForceMatrixValues, -999.0f);
  DecodeRowDiffQuantized(in.data(), scale, out.data());
  return out;
}

std::vector<int16_t> Encode(const std::vector<float>& in, double scale) {
  std::vector<int16_t> out(kForceMatrixValues, 12345);
  EncodeRowDiffQuantized(in.data(), scale, out.data());
  return out;
}

TEST(DecodeRowDiffQuantized, CumulativeSumPerRowThenDivide) {
  std::vector<int16_t> d(kForceMatrixValues, 0);
  d[0] = 100, d[1] = 50, d[2] = -30, d[3] = -120;  // row 0: 100, 150, 120, 0
  d[kRow] = 7;                                     // row 1 restarts its sum: 7, 7, ...
  d[249 * kRow + 749] = -5;                        // last value of the last row
  auto out = Decode(d, 10);
  EXPECT_FLOAT_EQ(out[0], 10.0f);
  EXPECT_FLOAT_EQ(out[1], 15.0f);
  EXPECT_FLOAT_EQ(out[2], 12.0f);
  EXPECT_FLOAT_EQ(out[3], 0.0f);
  EXPECT_FLOAT_EQ(out[kRow - 1], 0.0f);
  EXPECT_FLOAT_EQ(out[kRow], 0.7f);
  EXPECT_FLOAT_EQ(out[2 * kRow - 1], 0.7f);
  EXPECT_FLOAT_EQ(out[2 * kRow], 0.0f);  // row 2 does not inherit row 1's sum
  EXPECT_FLOAT_EQ(out[249 * kRow + 748], 0.0f);
  EXPECT_FLOAT_EQ(out[249 * kRow + 749], -0.5f);
}

TEST(DecodeRowDiffQuantized, Int16WraparoundUndoneByInt32Sum) {
  // q = 30000, -30000: the diff -60000 wraps to -60000 + 65536 = 5536 in int16.
  std::vector<int16_t> d(kForceMatrixValues, 0);
  d[0] = 30000;
  d[1] = 5536;
  d[2] = -5536;  // back to 30000 (diff +60000 wraps to -5536)
  // Row 1: q alternates 32767, -32767: diffs 32767, then -65534 -> 2, then +65534 -> -2, ...
  d[kRow] = 32767;
  for (int64_t j = 1; j < kRow; ++j) d[kRow + j] = (j % 2 == 1) ? 2 : -2;
  auto out = Decode(d, 100);
  EXPECT_FLOAT_EQ(out[0], 300.0f);
  EXPECT_FLOAT_EQ(out[1], -300.0f);
  EXPECT_FLOAT_EQ(out[2], 300.0f);
  EXPECT_FLOAT_EQ(out[3], 300.0f);
  for (int64_t j = 0; j < kRow; ++j)
    ASSERT_FLOAT_EQ(out[kRow + j], (j % 2 == 0) ? 327.67f : -327.67f) << "column " << j;
}

// A hand-built frame through the vector path's corners: int16 extremes, negative diffs,
// wraparound, a carry across every 8-value step and into the 6-value tail of a row
// (750 = 93 x 8 + 6). Expected values by hand: q / scale of exactly representable q
// and scale is the float nearest the decimal quotient, so the literals are exact.
TEST(DecodeRowDiffQuantized, HandBuiltFrameInt16ExtremesExact) {
  std::vector<int16_t> d(kForceMatrixValues, 0);
  // Row 0, q = 32767, 32766, -2, -32768, 32767, 0, then 0 to the end.
  const int16_t row0[] = {32767, -1, -32768, -32766, -1, -32767};
  std::copy(std::begin(row0), std::end(row0), d.begin());
  // Row 1: every diff -1, so q[j] = -(j + 1) (the carry crosses every step and the tail).
  for (int64_t j = 0; j < kRow; ++j) d[kRow + j] = -1;
  // Row 2: every diff -32768: q alternates -32768, 0 (the int32 sum wraps each step).
  for (int64_t j = 0; j < kRow; ++j) d[2 * kRow + j] = -32768;
  // Row 3: zeros up to the tail, then 32767, 1 (-> -32768), -1 (-> 32767) in it.
  d[3 * kRow + 745] = 32767, d[3 * kRow + 746] = 1, d[3 * kRow + 747] = -1;
  // Row 249 (the last): its diffs are not continued from row 248.
  d[249 * kRow - 1] = 1234;
  d[249 * kRow] = -7;
  auto out = Decode(d, 100);
  const float row0_want[] = {327.67f, 327.66f, -0.02f, -327.68f, 327.67f, 0.0f, 0.0f, 0.0f, 0.0f};
  for (int j = 0; j < 9; ++j) EXPECT_EQ(out[j], row0_want[j]) << "row 0 column " << j;
  EXPECT_EQ(out[kRow - 1], 0.0f);
  EXPECT_EQ(out[kRow + 0], -0.01f);
  EXPECT_EQ(out[kRow + 7], -0.08f);
  EXPECT_EQ(out[kRow + 8], -0.09f);
  EXPECT_EQ(out[kRow + 743], -7.44f);
  EXPECT_EQ(out[kRow + 744], -7.45f);
  EXPECT_EQ(out[kRow + 749], -7.5f);
  for (int64_t j = 0; j < kRow; ++j)
    ASSERT_EQ(out[2 * kRow + j], j % 2 == 0 ? -327.68f : 0.0f) << "row 2 column " << j;
  EXPECT_EQ(out[3 * kRow + 744], 0.0f);
  EXPECT_EQ(out[3 * kRow + 745], 327.67f);
  EXPECT_EQ(out[3 * kRow + 746], -327.68f);
  EXPECT_EQ(out[3 * kRow + 747], 327.67f);
  EXPECT_EQ(out[3 * kRow + 749], 327.67f);
  EXPECT_EQ(out[4 * kRow], 0.0f);  // row 4 does not inherit row 3's sum
  EXPECT_EQ(out[249 * kRow - 1], 12.34f);
  EXPECT_EQ(out[249 * kRow], -0.07f);
  EXPECT_EQ(out[kForceMatrixValues - 1], -0.07f);
  auto x1 = Decode(d, 1);
  EXPECT_EQ(x1[3], -32768.0f);
  EXPECT_EQ(x1[kRow + 749], -750.0f);
}

// Every int16 value at every tier's scale, bit for bit against float32(q) /
// float32(scale), the reference collector's decode. A reciprocal multiply would fail
// here: q * (1 / scale) differs from q / scale for thousands of q at x10, x100, x1000.
TEST(DecodeRowDiffQuantized, EveryInt16ValueBitIdenticalToDivision) {
  std::vector<int16_t> q(kForceMatrixValues), d(kForceMatrixValues);
  for (int64_t i = 0; i < kForceMatrixValues; ++i)  // all 65,536 values, then again
    q[i] = static_cast<int16_t>(static_cast<uint16_t>(i * 40503));  // odd: a permutation mod 2^16
  for (int64_t r = 0; r < kForceMatrixSide; ++r)
    for (int64_t j = 0; j < kRow; ++j) {
      const int32_t prev = j == 0 ? 0 : q[r * kRow + j - 1];
      d[r * kRow + j] = static_cast<int16_t>(static_cast<uint16_t>(q[r * kRow + j] - prev));
    }
  for (double scale : {1.0, 10.0, 100.0, 1000.0, 3.7}) {
    auto out = Decode(d, scale);
    const float s = static_cast<float>(scale);
    int64_t reciprocal_differs = 0;
    for (int64_t i = 0; i < kForceMatrixValues; ++i) {
      const float want = static_cast<float>(q[i]) / s;
      ASSERT_EQ(std::memcmp(&out[i], &want, sizeof(float)), 0) << "x" << scale << " q=" << q[i];
      reciprocal_differs += static_cast<float>(q[i]) * (1.0f / s) != want;
    }
    if (scale != 1.0) EXPECT_GT(reciprocal_differs, 1000) << "x" << scale;
  }
}

TEST(DecodeRowDiffQuantizedFrames, ThreadsGiveTheFrameByFrameResult) {
  constexpr int64_t kFrames = 5;
  std::vector<int16_t> in(kFrames * kForceMatrixValues);
  uint32_t state = 99;
  for (int16_t& v : in) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<int16_t>(state >> 16);
  }
  std::vector<float> want(in.size()), got(in.size(), -1.0f);
  for (int64_t f = 0; f < kFrames; ++f)
    DecodeRowDiffQuantized(in.data() + f * kForceMatrixValues, 100, want.data() + f * kForceMatrixValues);
  for (int threads : {1, 2, 3, 8}) {
    std::fill(got.begin(), got.end(), -1.0f);
    DecodeRowDiffQuantizedFrames(in.data(), kFrames, 100, got.data(), threads);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << threads << " threads";
  }
  DecodeRowDiffQuantizedFrames(in.data(), 0, 100, got.data(), 4);  // no frames: nothing to do
}

TEST(EncodeRowDiffQuantized, ScaleOneTruncatesTowardZero) {
  std::vector<float> x(kForceMatrixValues, 0.0f);
  x[0] = 1.9f, x[1] = -1.9f, x[2] = 2.5f, x[3] = -0.99f;
  auto d = Encode(x, 1);
  // q = 1, -1, 2, 0 -> diffs 1, -2, 3, -2
  EXPECT_EQ(d[0], 1);
  EXPECT_EQ(d[1], -2);
  EXPECT_EQ(d[2], 3);
  EXPECT_EQ(d[3], -2);
  EXPECT_EQ(d[4], 0);
}

TEST(EncodeRowDiffQuantized, OtherScalesRoundHalfToEven) {
  // Each x * scale is exactly n.5 in float32.
  struct Case { double scale; float x; int16_t q; } cases[] = {
      {10, 0.25f, 2},      {10, 0.75f, 8},       {10, -0.25f, -2},  {10, 1.25f, 12},
      {100, 0.125f, 12},   {100, 0.375f, 38},    {1000, 0.0625f, 62},
      {1000, 0.1875f, 188}, {10, 0.26f, 3},       {10, -0.26f, -3}};
  for (const Case& c : cases) {
    std::vector<float> x(kForceMatrixValues, 0.0f);
    x[kRow] = c.x;  // first value of row 1: its diff is q itself
    auto d = Encode(x, c.scale);
    EXPECT_EQ(d[kRow], c.q) << c.x << " x" << c.scale;
    EXPECT_EQ(d[kRow + 1], static_cast<int16_t>(-c.q)) << c.x << " x" << c.scale;
  }
}

TEST(EncodeRowDiffQuantized, ClipsAtPlusMinus32767AndNanIsZero) {
  std::vector<float> x(kForceMatrixValues, 0.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  x[0] = 5000.0f;   // 50000 -> 32767
  x[1] = -5000.0f;  // -50000 -> -32767 (never -32768)
  x[2] = nan;       // -> 0
  x[3] = std::numeric_limits<float>::infinity();
  x[kRow] = nan;    // NaN at scale 1 as well
  auto d10 = Encode(x, 10);
  auto out = Decode(d10, 10);
  EXPECT_FLOAT_EQ(out[0], 3276.7f);
  EXPECT_FLOAT_EQ(out[1], -3276.7f);
  EXPECT_FLOAT_EQ(out[2], 0.0f);
  EXPECT_FLOAT_EQ(out[3], 3276.7f);
  EXPECT_EQ(d10[0], 32767);
  EXPECT_EQ(d10[1], static_cast<int16_t>(-65534));  // wraps to 2
  EXPECT_EQ(d10[2], 32767);                         // 0 - (-32767)
  auto d1 = Encode(x, 1);
  EXPECT_EQ(d1[kRow], 0);
}

TEST(EncodeRowDiffQuantized, WraparoundExample) {
  std::vector<float> x(kForceMatrixValues, 0.0f);
  x[0] = 3000.0f, x[1] = -3000.0f;  // q = 30000, -30000 at x10
  auto d = Encode(x, 10);
  EXPECT_EQ(d[0], 30000);
  EXPECT_EQ(d[1], 5536);
  EXPECT_EQ(d[2], 30000);
  auto out = Decode(d, 10);
  EXPECT_FLOAT_EQ(out[0], 3000.0f);
  EXPECT_FLOAT_EQ(out[1], -3000.0f);
}

TEST(EncodeRowDiffQuantized, RoundTripEqualsQuantizedValue) {
  // Deterministic pseudo-random frame in [-4000, 4000) mN.
  std::vector<float> x(kForceMatrixValues);
  uint32_t state = 12345;
  for (float& v : x) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>(state >> 8) / static_cast<float>(1 << 24) * 8000.0f - 4000.0f;
  }
  for (double scale : {1.0, 10.0, 100.0, 1000.0}) {
    auto out = Decode(Encode(x, scale), scale);
    const float s = static_cast<float>(scale);
    for (int64_t i = 0; i < kForceMatrixValues; ++i) {
      float q = scale == 1.0 ? std::trunc(x[i] * s) : std::rint(x[i] * s);
      q = std::min(32767.0f, std::max(-32767.0f, q));
      ASSERT_EQ(out[i], q / s) << "x" << scale << " at " << i << " x=" << x[i];
    }
  }
}

TEST(ForceMatrixSpecForTier, FiveTiers) {
  struct Case { const char* tier; ForceMatrixEncoding enc; const char* dtype; double scale; } cases[] = {
      {"int16", ForceMatrixEncoding::kRowDiffQuantized, "int16", 1},
      {"int16x10", ForceMatrixEncoding::kRowDiffQuantized, "int16", 10},
      {"int16x100", ForceMatrixEncoding::kRowDiffQuantized, "int16", 100},
      {"int16x1000", ForceMatrixEncoding::kRowDiffQuantized, "int16", 1000},
      {"float32", ForceMatrixEncoding::kRowFlatRaw, "float32", 1}};
  for (const Case& c : cases) {
    auto spec = ForceMatrixSpecForTier(c.tier);
    ASSERT_OK(spec) << c.tier;
    EXPECT_EQ(spec->encoding, c.enc) << c.tier;
    EXPECT_EQ(spec->dtype, c.dtype) << c.tier;
    EXPECT_EQ(spec->scale, c.scale) << c.tier;
  }
  for (const char* bad : {"int8", "int16x10000", "", "INT16"}) {
    auto spec = ForceMatrixSpecForTier(bad);
    EXPECT_FALSE(spec.ok()) << bad;
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalid) << bad;
  }
}

// ---- ResolveForceMatrixSpec -------------------------------------------------

constexpr const char* kCol = "observation.gripper_left_force_matrix";

InfoJson InfoWithScale(std::optional<double> scale, const char* dtype = "int16",
                       const char* encoding = "row_diff_quantized") {
  InfoJson info;
  FeatureSpec f;
  f.dtype = dtype;
  f.shape = {250, 250, 3};
  f.encoding = encoding;
  f.scale = scale;
  info.features.emplace_back(kCol, f);
  return info;
}

EpisodeRow RowWithSpecs(std::string specs) {
  EpisodeRow row;
  row.episode_index = 4;
  row.force_matrix_specs = std::move(specs);
  return row;
}

TEST(ResolveForceMatrixSpec, EpisodeRowWinsOverInfoFeatures) {
  // The contract's scenario: x10 recorded first, then a float32 episode overwrote info.json.
  auto row = RowWithSpecs(
      R"({"observation.gripper_left_force_matrix": {"dtype": "int16", "shape": [250, 250, 3],)"
      R"( "encoding": "row_diff_quantized", "scale": 10}})");
  auto r = ResolveForceMatrixSpec(kCol, row, InfoWithScale(1, "float32", "row_flat_raw"), "int16");
  ASSERT_OK(r);
  EXPECT_EQ(r->spec.scale, 10);
  EXPECT_EQ(r->spec.encoding, ForceMatrixEncoding::kRowDiffQuantized);
  EXPECT_EQ(r->spec.dtype, "int16");
  EXPECT_EQ(r->source, ScaleSource::kEpisodeRow);
  EXPECT_STREQ(ScaleSourceName(r->source), "episode_row");
}

TEST(ResolveForceMatrixSpec, InfoFeaturesWhenRowLacksColumnOrEntry) {
  EpisodeRow no_column = RowWithSpecs("{}");
  no_column.missing_columns = {"force_matrix_specs"};
  EpisodeRow empty = RowWithSpecs("{}");
  EpisodeRow other = RowWithSpecs(R"({"observation.gripper_right_force_matrix": {"scale": 1000}})");
  for (const EpisodeRow* row : {&no_column, &empty, &other}) {
    auto r = ResolveForceMatrixSpec(kCol, *row, InfoWithScale(100), "int16");
    ASSERT_OK(r);
    EXPECT_EQ(r->spec.scale, 100);
    EXPECT_EQ(r->spec.encoding, ForceMatrixEncoding::kRowDiffQuantized);
    EXPECT_EQ(r->source, ScaleSource::kInfoFeature);
    EXPECT_STREQ(ScaleSourceName(r->source), "info_features");
  }
}

TEST(ResolveForceMatrixSpec, MissingColumnIsNotParsed) {
  // A column listed in missing_columns holds no data of this file; its text is never read.
  EpisodeRow row = RowWithSpecs("not json");
  row.missing_columns = {"force_matrix_specs"};
  auto r = ResolveForceMatrixSpec(kCol, row, InfoWithScale(1000), "int16");
  ASSERT_OK(r);
  EXPECT_EQ(r->spec.scale, 1000);
  EXPECT_EQ(r->source, ScaleSource::kInfoFeature);
}

TEST(ResolveForceMatrixSpec, DefaultScaleOneWithEncodingFromColumnType) {
  InfoJson none;
  auto r = ResolveForceMatrixSpec(kCol, RowWithSpecs("{}"), none, "int16");
  ASSERT_OK(r);
  EXPECT_EQ(r->spec.scale, 1);
  EXPECT_EQ(r->spec.encoding, ForceMatrixEncoding::kRowDiffQuantized);
  EXPECT_EQ(r->source, ScaleSource::kDefault);
  EXPECT_STREQ(ScaleSourceName(r->source), "default");
  // A feature without scale declares no scale either.
  r = ResolveForceMatrixSpec(kCol, RowWithSpecs("{}"), InfoWithScale(std::nullopt), "int16");
  ASSERT_OK(r);
  EXPECT_EQ(r->spec.scale, 1);
  EXPECT_EQ(r->source, ScaleSource::kDefault);
  r = ResolveForceMatrixSpec(kCol, RowWithSpecs("{}"), none, "float32");
  ASSERT_OK(r);
  EXPECT_EQ(r->spec.encoding, ForceMatrixEncoding::kRowFlatRaw);
  EXPECT_EQ(r->spec.scale, 1);
}

TEST(ResolveForceMatrixSpec, InfoOfAnotherTierDoesNotApply) {
  // An old int16 episode without force_matrix_specs in a task whose latest episode is float32:
  // info.json describes the float32 tier, so it says nothing about this episode's scale.
  auto r = ResolveForceMatrixSpec(kCol, RowWithSpecs("{}"), InfoWithScale(1, "float32", "row_flat_raw"),
                                  "int16");
  ASSERT_OK(r);
  EXPECT_EQ(r->spec.encoding, ForceMatrixEncoding::kRowDiffQuantized);
  EXPECT_EQ(r->spec.scale, 1);
  EXPECT_EQ(r->source, ScaleSource::kDefault);
  // And a float32 episode under an int16x100 declaration is raw, scale 1.
  r = ResolveForceMatrixSpec(kCol, RowWithSpecs("{}"), InfoWithScale(100), "float32");
  ASSERT_OK(r);
  EXPECT_EQ(r->spec.encoding, ForceMatrixEncoding::kRowFlatRaw);
  EXPECT_EQ(r->spec.scale, 1);
  EXPECT_EQ(r->source, ScaleSource::kDefault);
}

TEST(ResolveForceMatrixSpec, MalformedRowSpecsAreInvalid) {
  for (const char* bad : {"{\"observation.gripper_left_force_matrix\": {\"scale\": 10",
                          "[1, 2]",
                          R"({"observation.gripper_left_force_matrix": {"scale": "10"}})",
                          R"({"observation.gripper_left_force_matrix": {"encoding": "zip", "scale": 10}})"}) {
    auto r = ResolveForceMatrixSpec(kCol, RowWithSpecs(bad), InfoWithScale(100), "int16");
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalid) << bad;
  }
}

// ---- DecodeForceMatrixCell ------------------------------------------------------

template <typename Builder, typename T>
std::shared_ptr<arrow::Array> ListArray(const std::vector<std::vector<T>>& cells) {
  auto values = std::make_shared<Builder>();
  arrow::ListBuilder list(arrow::default_memory_pool(), values);
  for (const auto& cell : cells) {
    EXPECT_OK(list.Append());
    EXPECT_OK(values->AppendValues(cell));
  }
  std::shared_ptr<arrow::Array> out;
  EXPECT_OK(list.Finish(&out));
  return out;
}

// A row-diff cell whose every row starts with `k` and is flat: decodes to k / scale everywhere.
std::vector<int16_t> FlatCell(int16_t k) {
  std::vector<int16_t> d(kForceMatrixValues, 0);
  for (int64_t r = 0; r < kForceMatrixSide; ++r) d[r * kRow] = k;
  return d;
}

const ForceMatrixSpec kX10{ForceMatrixEncoding::kRowDiffQuantized, "int16", 10};
const ForceMatrixSpec kRaw{ForceMatrixEncoding::kRowFlatRaw, "float32", 1};

TEST(DecodeForceMatrixCell, ChunkedInt16Column) {
  using Cells = std::vector<std::vector<int16_t>>;
  arrow::ChunkedArray column({ListArray<arrow::Int16Builder>(Cells{{}, FlatCell(10)}),
                              ListArray<arrow::Int16Builder>(Cells{FlatCell(20),
                                                                   std::vector<int16_t>(10, 1), {}})});
  std::vector<float> out(kForceMatrixValues, -1.0f);
  auto empty = DecodeForceMatrixCell(column, 0, kX10, out.data());
  ASSERT_OK(empty);
  EXPECT_FALSE(*empty);

  auto r1 = DecodeForceMatrixCell(column, 1, kX10, out.data());
  ASSERT_OK(r1);
  EXPECT_TRUE(*r1);
  for (int64_t i = 0; i < kForceMatrixValues; i += 997) ASSERT_FLOAT_EQ(out[i], 1.0f) << i;
  EXPECT_FLOAT_EQ(out[kForceMatrixValues - 1], 1.0f);

  auto r2 = DecodeForceMatrixCell(column, 2, kX10, out.data());  // chunk 1, local row 0
  ASSERT_OK(r2);
  EXPECT_TRUE(*r2);
  EXPECT_FLOAT_EQ(out[0], 2.0f);
  EXPECT_FLOAT_EQ(out[kForceMatrixValues - 1], 2.0f);

  auto short_cell = DecodeForceMatrixCell(column, 3, kX10, out.data());
  EXPECT_FALSE(short_cell.ok());
  EXPECT_EQ(short_cell.status().code(), StatusCode::kInvalid);

  auto r4 = DecodeForceMatrixCell(column, 4, kX10, out.data());
  ASSERT_OK(r4);
  EXPECT_FALSE(*r4);

  EXPECT_FALSE(DecodeForceMatrixCell(column, 5, kX10, out.data()).ok());
  EXPECT_FALSE(DecodeForceMatrixCell(column, -1, kX10, out.data()).ok());
}

TEST(DecodeForceMatrixCell, Float32RawIsCopied) {
  std::vector<float> cell(kForceMatrixValues);
  for (int64_t i = 0; i < kForceMatrixValues; ++i) cell[i] = static_cast<float>(i % 1000) * 0.5f;
  using Cells = std::vector<std::vector<float>>;
  arrow::ChunkedArray column({ListArray<arrow::FloatBuilder>(Cells{{}}),
                              ListArray<arrow::FloatBuilder>(Cells{cell})});
  std::vector<float> out(kForceMatrixValues, -1.0f);
  auto r = DecodeForceMatrixCell(column, 1, kRaw, out.data());
  ASSERT_OK(r);
  EXPECT_TRUE(*r);
  EXPECT_EQ(out, cell);
  auto e = DecodeForceMatrixCell(column, 0, kRaw, out.data());
  ASSERT_OK(e);
  EXPECT_FALSE(*e);
}

TEST(DecodeForceMatrixCell, ColumnTypeMustMatchSpec) {
  using F = std::vector<std::vector<float>>;
  using I = std::vector<std::vector<int16_t>>;
  arrow::ChunkedArray floats(ListArray<arrow::FloatBuilder>(F{std::vector<float>(kForceMatrixValues)}));
  arrow::ChunkedArray ints(ListArray<arrow::Int16Builder>(I{FlatCell(1)}));
  std::vector<float> out(kForceMatrixValues);
  auto a = DecodeForceMatrixCell(floats, 0, kX10, out.data());
  EXPECT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kInvalid);
  auto b = DecodeForceMatrixCell(ints, 0, kRaw, out.data());
  EXPECT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalid);
  // Wrong length is Invalid for float columns too.
  arrow::ChunkedArray long_cell(
      ListArray<arrow::FloatBuilder>(F{std::vector<float>(kForceMatrixValues + 1)}));
  auto c = DecodeForceMatrixCell(long_cell, 0, kRaw, out.data());
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalid);
}

}  // namespace
}  // namespace reel
