// Time alignment: every stream of an episode paired to its frames on the clock the
// contract names for it (multi-device §5.3-§5.5, §8.2.4), and the time edge cases
// (resets, repeated stamps, silent stretches) that `reel check` reports.
//
// The model. A data row is a 30 fps tick, not an instant: equal row numbers are not the
// same physical moment (§5.3). A frame's time is its hardware_ns (0 = no stamp). Each
// stream carries its own stamps:
//   - a scalar-stamped column X (force, force matrix) holds per row the latest-wins
//     sample whose time is X_ns (host monotonic); X_ns == 0 is "no new sample";
//   - a trajectory X (…slam_trajectory) holds per row 0..n points, stamped in lockstep by
//     the list X_ns; a 0 stamp cannot be paired;
//   - observation.imu holds per row 0..n samples stamped by imu_ts_ns on the device clock;
//     the frame's own device stamp is raw_hw_ns (the stamp before normalisation, §3.1), or
//     hardware_ns itself when the head camera's SDK stamps it (§4.4);
//   - other fixed-size columns (gloves, gripper state, hand pose) have no clock in the
//     contract: they belong to their row, and an all-zero row is "no sample" (§5.5).
// Pairing is nearest neighbour within a tolerance (ties go to the earlier sample), or
// linear interpolation between the samples either side of the frame (slerp for a pose's
// quaternion). A sample is paired only with frames of its own clock segment: a backward
// step of hardware_ns (a wrap or a device reset) starts a new segment, so no sample is
// paired across it.
//
// Thread safety: pure functions, and calls that only read the Task.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "reel/decode.h"
#include "reel/status.h"
#include "reel/task.h"  // (decode.h declares arrow::ChunkedArray and arrow::Table)

namespace parquet::arrow {
class FileReader;
}

namespace reel {
namespace internal {
struct ParquetSource;
}

enum class AlignMethod { kNearest, kInterpolate };
// "nearest", "interpolate"; Invalid otherwise.
Result<AlignMethod> ParseAlignMethod(const std::string& name);

struct AlignOptions {
  // Data columns to align; empty = every observation.* column of the episode (a
  // trajectory's or a stamped column's own _ns column is not listed separately).
  std::vector<std::string> columns;
  // Largest |sample time - frame time| a pairing may have, in seconds; 0 = half a frame
  // period of info.json's fps (anything nearer is unambiguously that frame's).
  double tolerance_s = 0;
  AlignMethod method = AlignMethod::kNearest;
  // Left-glove frames in the canonical order (multi-device §4.5); false keeps the
  // firmware's channel order as stored.
  bool canonical_gloves = true;
};

// How a column is put on the frame clock.
enum class StreamClock {
  kScalarNs,   // latest-wins sample per row, stamped by the scalar int64 <column>_ns
  kSlamNs,     // points in per-row lists, stamped by the list<int64> <column>_ns
  kImuDevice,  // observation.imu, stamped by imu_ts_ns on the device clock
  kRow,        // a fixed-size column without a clock: its row's; all zeros = no sample
  kNone,       // not a stream: key columns, status.*, stamps, variable lists without stamps
};
const char* StreamClockName(StreamClock clock);  // "scalar_ns", "slam_ns", "imu_device", "row", "none"
StreamClock StreamClockOf(const std::string& column, const arrow::Schema& schema);

// ---- The pairing core (vectors in, indices out) --------------------------------------

// Clock segments of the frames: segment[r] starts at 0 and grows by one at each row whose
// stamp is below the last non-zero stamp before it (a wrap or reset).
std::vector<int32_t> ClockSegments(const std::vector<int64_t>& frame_ns);

// One frame's pairing: sample `a` (and, interpolating, `b` with weight w: value =
// (1-w)*a + w*b), and dt = the nearer contributing sample's stamp minus the frame's.
struct FramePairing {
  int64_t a = -1;  // index into the samples; -1 = no sample within tolerance
  int64_t b = -1;  // -1 unless interpolating
  double w = 0.0;
  int64_t dt_ns = 0;
};

// Pairs every frame with the samples of its segment (a sample's segment is its row's).
// `sample_ns[i]` == 0 is "no stamp" (never paired); a stamp repeated within a segment is
// the same sample again and only its first occurrence is used. Interpolation uses the
// samples just before and after the frame when they are at most 2 * tolerance apart,
// otherwise the nearest one within tolerance. Frames with stamp 0 get no sample.
std::vector<FramePairing> PairFrames(const std::vector<int64_t>& frame_ns,
                                     const std::vector<int64_t>& sample_ns,
                                     const std::vector<int64_t>& sample_row, int64_t tolerance_ns,
                                     AlignMethod method);

// Shortest-path spherical interpolation of two unit quaternions (qx, qy, qz, qw) at w in
// [0, 1] (w = 0: qa), normalised; linear then normalised when they are within ~1.8 degrees.
void SlerpQuaternion(const double* qa, const double* qb, double w, double* out);

// The nearest frame of each sample within its segment, at any distance (-1 without a
// stamp on either side): the frame a sample "belongs to" (Task.imu_table, Task.slam).
std::vector<int64_t> NearestFrames(const std::vector<int64_t>& frame_ns,
                                   const std::vector<int64_t>& sample_ns,
                                   const std::vector<int64_t>& sample_row);

// IMU device time to the frame clock. `source`: "raw_hw_ns" (the frames' raw device
// stamps share the IMU's clock: t = hardware_ns[f] + (imu - raw_hw_ns[f]) with f the
// nearest frame by device stamp), "hardware_ns" (hardware_ns itself is on the IMU's clock:
// t = imu), or "row_offset" (neither overlaps the IMU stamps: t = imu + the median over
// rows of hardware_ns minus the row's last IMU stamp, an estimate). 0 stays 0.
struct ImuClockMap {
  std::string source;
  std::vector<int64_t> ns;  // per sample, on the frame clock; 0 = not mappable
};
ImuClockMap MapImuClock(const std::vector<int64_t>& frame_ns, const std::vector<int64_t>& raw_hw_ns,
                        const std::vector<int64_t>& imu_ns, const std::vector<int64_t>& imu_row);

// ---- Time edge cases ---------------------------------------------------------------------

enum class TimeEventKind {
  kReset,      // a stamp below the previous one: a wrap or a device reset
  kRepeated,   // a row repeats the previous stamp: the same frame or sample twice
  kSilence,    // no sample for longer than max(1 s, 10 x the stream's median interval)
};
struct TimeEvent {
  TimeEventKind kind;
  std::string column;  // hardware_ns, X_ns, imu_ts_ns
  int64_t row = 0;     // where it happens (silence: the last row with a sample)
  int64_t to_row = 0;  // silence: the next row with a sample, or the episode's length
  int64_t from_ns = 0, to_ns = 0;  // the stamps on either side
};
// The events of one stream from its per-row stamps (a row's stamps in order; 0 = none).
// `start_ns` / `end_ns`: the first and last frames' stamps when the stream shares their
// clock, so that a stream starting late or stopping early is a silence too (0 = not
// measured: row = 0 for a late start, to_row = the episode's length for an early stop).
std::vector<TimeEvent> FindTimeEvents(const std::string& column,
                                      const std::vector<std::vector<int64_t>>& row_stamps,
                                      int64_t start_ns, int64_t end_ns);
// Every stream of a data table: hardware_ns, each scalar X_ns of an observation column,
// each trajectory's X_ns, imu_ts_ns.
Result<std::vector<TimeEvent>> FindEpisodeTimeEvents(const arrow::Table& data);

// ---- Episode-level calls ---------------------------------------------------------------

// Episode N aligned to its frames: frame_index, hardware_ns (null where 0), then per
// column X: X (the paired value, null where none), and for columns with a clock X_ns (the
// sample's stamp on the frame clock) and X_dt_ns (X_ns - hardware_ns), null where
// unpaired. Trajectories give fixed_size_list<float64>[8] [t,x,y,z,qx,qy,qz,qw], the IMU
// fixed_size_list<float32>[6]; force matrices are always nearest (their cells are
// encoded). The schema's metadata holds reel.method, reel.tolerance_ns, reel.imu_clock
// and reel.clock_resets (rows where hardware_ns steps back). Errors: NotFound for an
// episode or column that does not exist, Invalid for a column that is not a stream.
Result<std::shared_ptr<arrow::Table>> AlignEpisode(const Task& task, int64_t episode_index,
                                                   const AlignOptions& options);

// One row per IMU sample of episode N: row (the frame row it hangs on), imu_ts_ns (device
// clock), ns (on the frame clock, null where not mappable), frame (the nearest frame by
// time in its segment, null without stamps), dt_ns (ns - that frame's hardware_ns) and
// imu (fixed_size_list<float32>[6]). Metadata reel.imu_clock names the mapping.
Result<std::shared_ptr<arrow::Table>> ImuTable(const Task& task, int64_t episode_index);

// Episode N's trajectory `column` declaration (ResolveSlamSpec over its episodes row, or over
// info.json alone when the episode has no row).
Result<ResolvedSlamSpec> SlamSpecOf(const Task& task, int64_t episode_index, const std::string& column);

// Every row of a glove column (fixed_size_list<float32>[256]) as rows x 256 floats, the left
// glove in canonical order when `canonical` (CanonicalLeftGlove); null rows are zeros. Invalid
// for another type, naming the file and column.
Result<std::vector<float>> GloveFrames(const Task& task, int64_t episode_index, const std::string& column,
                                       bool canonical);

// A causal window of IMU samples per frame: the `window` newest samples whose time on the
// frame clock is at or before the frame's (and, when max_age_s > 0, not older than that),
// oldest first, from the frame's own clock segment. Slots without a sample are zeros with
// valid = 0 (padding comes first). Frames without a stamp get an empty window.
struct ImuWindows {
  int64_t window = 0;
  std::vector<float> values;     // rows x window x 6
  std::vector<int64_t> ns;       // rows x window, on the frame clock (0 in padding)
  std::vector<uint8_t> valid;    // rows x window
  std::string clock;             // ImuClockMap::source
};
Result<ImuWindows> ImuWindowsOf(const Task& task, int64_t episode_index, int64_t window, double max_age_s = 0);

// A force-matrix column of episode N paired with each frame by its scalar _ns (nearest
// within tolerance_s, 0 = half a frame period), decoded with the episode's own scale
// (ResolveForceMatrixSpec's authority order) to mN: per frame (height, width, channels)
// float32, where plane kFz keeps channel 2 (fz) only and `downsample` (a divisor of 250)
// averages downsample x downsample cells. Frames without a paired sample are zeros with
// valid = 0.
enum class ForcePlane { kFull, kFz };
struct AlignedForceMatrices {
  int64_t height = 0, width = 0, channels = 0;
  std::vector<float> values;   // rows x height x width x channels
  std::vector<uint8_t> valid;  // rows
  std::vector<int64_t> dt_ns;  // rows: sample stamp - frame stamp (0 where not valid)
};
// The same from columns already read: `values` the force-matrix column, `stamps` its _ns per
// row, `frame_ns` hardware_ns per row, `spec` the episode's (ResolveForceMatrixSpec). The one
// pairing and decode behind AlignForceMatrices and the LeRobot export's matrix features.
Result<AlignedForceMatrices> PairForceMatrices(const arrow::ChunkedArray& values, const std::vector<int64_t>& stamps,
                                               const std::vector<int64_t>& frame_ns, const ForceMatrixSpec& spec,
                                               ForcePlane plane, int downsample, int64_t tolerance_ns);
Result<AlignedForceMatrices> AlignForceMatrices(const Task& task, int64_t episode_index, const std::string& column,
                                                ForcePlane plane, int downsample, double tolerance_s = 0);

// The same pairing, decoded on demand: Open reads the stamps, hardware_ns and the episode's
// spec (no matrix values); Decode reads only the samples its frames pair with
// (Task::ReadDataRows: the pages holding them), each once. What the training loader holds
// per episode, so a batch costs its own frames, not the episode's. Holds the data file open
// (not the Task); Decode may be called from several threads.
class ForceMatrixFrames {
 public:
  static Result<std::unique_ptr<ForceMatrixFrames>> Open(const Task& task, int64_t episode_index,
                                                         const std::string& column, ForcePlane plane, int downsample,
                                                         double tolerance_s = 0);
  int64_t rows() const { return static_cast<int64_t>(pairing_.size()); }
  // Per frame: whether a sample's stamp is within tolerance. Decode may still find that
  // sample's cell empty (no sample: valid 0 there).
  const std::vector<FramePairing>& pairing() const { return pairing_; }
  // Frames `frames` (rows of the episode, any order, repeats allowed) as frames.size() rows.
  Result<AlignedForceMatrices> Decode(const std::vector<int64_t>& frames) const;

 private:
  ForceMatrixFrames() = default;
  std::shared_ptr<parquet::arrow::FileReader> file_;  // the episode's data file, opened once
  std::shared_ptr<internal::ParquetSource> source_;   // its bytes, for page reads
  std::unique_ptr<std::mutex> reading_;               // one Decode reads it at a time
  std::string column_, where_;
  ForceMatrixSpec spec_;
  ForcePlane plane_ = ForcePlane::kFull;
  int downsample_ = 1;
  std::vector<FramePairing> pairing_;
};

}  // namespace reel
