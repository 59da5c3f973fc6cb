// Decoders for the column families whose values need more than a cast:
// force matrices (contract §7.2.1), IMU samples (§7.2), SLAM trajectories
// (multi-device §4.6/§5.3) and glove pressure frames (§4.5). Pairing them with
// frames by time is reel/align.h.
//
// Thread safety: pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "reel/metadata.h"
#include "reel/status.h"

namespace arrow {
class ChunkedArray;
class Table;
}  // namespace arrow

namespace reel {

// ---- Force matrices --------------------------------------------------------
// One frame is (250, 250, 3) = fx, fy, fz per pixel in mN, flattened row-major:
// 187,500 values, or 250 rows of 750 when row-differenced.
inline constexpr int64_t kForceMatrixSide = 250;
inline constexpr int64_t kForceMatrixRowValues = 750;
inline constexpr int64_t kForceMatrixValues = 187500;

enum class ForceMatrixEncoding { kRowFlatRaw, kRowDiffQuantized };

struct ForceMatrixSpec {
  ForceMatrixEncoding encoding = ForceMatrixEncoding::kRowFlatRaw;
  std::string dtype = "float32";  // "int16" with row_diff_quantized, "float32" with row_flat_raw
  double scale = 1.0;
};

// The five tiers of the recorder: int16 (x1), int16x10, int16x100, int16x1000, float32.
Result<ForceMatrixSpec> ForceMatrixSpecForTier(const std::string& tier);

enum class ScaleSource { kEpisodeRow, kInfoFeature, kDefault };
const char* ScaleSourceName(ScaleSource source);  // "episode_row", "info_features", "default"

struct ResolvedForceMatrixSpec {
  ForceMatrixSpec spec;
  ScaleSource source = ScaleSource::kDefault;
};

// Authority order (contract §7.2.1): the episode row's force_matrix_specs,
// then info.json features[column].scale/encoding, then scale 1. info.json
// holds the latest episode's tier only, so it is used only when its dtype and
// encoding match this column's physical type (`column_dtype`: "int16" or
// "float32"); otherwise the encoding follows the physical type and the scale
// is 1 (source kDefault: uncalibrated).
Result<ResolvedForceMatrixSpec> ResolveForceMatrixSpec(const std::string& column,
                                                       const EpisodeRow& row,
                                                       const InfoJson& info,
                                                       const std::string& column_dtype);

// Decodes one row_diff_quantized frame: per row of 750, an int32 cumulative sum
// cast back to int16 (wraparound), then float32(value) / float32(scale).
// `in` and `out` hold kForceMatrixValues values.
void DecodeRowDiffQuantized(const int16_t* in, double scale, float* out);
// The same for `frames` consecutive frames (in: frames x 187,500 int16, out: frames x
// 187,500 float32), spread over up to `threads` threads (one frame per task; the calling
// thread alone when threads <= 1 or frames <= 1). Output bit-identical to
// DecodeRowDiffQuantized frame by frame.
void DecodeRowDiffQuantizedFrames(const int16_t* in, int64_t frames, double scale, float* out,
                                  int threads);
// The inverse, as the reference encoder does it: q = clip(rint(x * scale),
// -32767, 32767), except scale 1 which truncates toward zero; then row diffs
// with int16 wraparound.
void EncodeRowDiffQuantized(const float* in, double scale, int16_t* out);

// Decodes the cell at `row` of a force-matrix column (list<int16> or
// list<float32>) into `out` (kForceMatrixValues floats). Returns false for an
// empty cell ([] = no sample on that row). Invalid when the cell length is not
// 187,500 or the column type disagrees with the spec.
Result<bool> DecodeForceMatrixCell(const arrow::ChunkedArray& column, int64_t row,
                                   const ForceMatrixSpec& spec, float* out);

// ---- SLAM frame and time --------------------------------------------------------------
// A trajectory's coordinate frame and time declaration, by the authority order of
// multi-device §7.3 / §8.2.5: the episode row's slam_specs[column], then info.json's
// features[column], then info.json's slam_frames[column] (frame only), then, for rig 1's
// observation.slam_trajectory, gripper_slam_frame; with none of them the old frame
// "right_forward_up" ("no frame key = the old frame", not a default to guess).
enum class SlamSpecSource { kEpisodeRow, kInfoFeature, kInfoSlamFrames, kGripperSlamFrame, kOldFrame };
const char* SlamSpecSourceName(SlamSpecSource source);  // "episode_row", "info_features", ...
inline constexpr const char* kOldSlamFrame = "right_forward_up";
struct ResolvedSlamSpec {
  std::string frame = kOldSlamFrame;
  // The declaration's frame_axes, time and owner objects as JSON text ("{}" when absent).
  std::string frame_axes_json = "{}", time_json = "{}", owner_json = "{}";
  SlamSpecSource source = SlamSpecSource::kOldFrame;
};
// Invalid when the episode row's slam_specs is not a JSON object (naming the row).
Result<ResolvedSlamSpec> ResolveSlamSpec(const std::string& column, const EpisodeRow& row, const InfoJson& info);

// ---- IMU samples -------------------------------------------------------------
// observation.imu list<fixed_size_list<float32>[6]> with imu_ts_ns list<int64>
// in lockstep; samples hang on frame rows.
struct ImuSamples {
  std::vector<int64_t> row_offsets;  // size rows+1: samples of row r are [off[r], off[r+1])
  std::vector<int64_t> ts_ns;
  std::vector<std::array<float, 6>> values;
};
// `ts_ns` may be null when the episode has no imu_ts_ns column (then ts_ns is
// left empty). Invalid when the per-row lengths differ.
Result<ImuSamples> DecodeImu(const arrow::ChunkedArray& imu, const arrow::ChunkedArray* ts_ns);

// ---- SLAM trajectories -------------------------------------------------------
struct SlamPoint {
  double t, x, y, z, qx, qy, qz, qw;  // t: camera sensor clock seconds
  int64_t ns = 0;                    // host monotonic ns; 0 = no stamp
  int64_t row = 0;                   // frame row the point hangs on
};
// `points` is list<float64> (8 values per point); `ns` the parallel list<int64>
// column or null when the episode has none. Invalid when a row's length is not
// a multiple of 8 or the _ns row has a different number of entries.
Result<std::vector<SlamPoint>> DecodeSlam(const arrow::ChunkedArray& points,
                                          const arrow::ChunkedArray* ns);

// ---- Glove pressure frames ---------------------------------------------------------
// observation.<sensor>: a 16x16 pressure frame flattened, in the firmware's channel order.
inline constexpr int kGloveSide = 16;
// True for a left-hand glove column: "left" in its name, case-insensitive (the
// reference's glove_side_of; a right glove is the default).
bool IsLeftGlove(const std::string& column);
// The canonical [x, y] order of a left glove's frame (multi-device §4.5, the reference's
// canonical_pressure_matrix): the firmware stores the left hand as the anti-transpose of
// the canonical frame, so out[i][j] = in[15-j][15-i]. Its own inverse; `in` and `out`
// hold 256 values and must not overlap. A right glove's frame is already canonical.
void CanonicalLeftGlove(const float* in, float* out);

}  // namespace reel
