// Recorder: writes multi-device episodes into a pooled_episodes_v1 task.
//
//   auto writer = TaskWriter::Open("data/recordings/pick", options);   // creates the task if new
//   auto episode = (*writer)->BeginEpisode();                          // chooses N under the lock
//   FrameRow row;  row.timestamp = ...; row.SetFixed("observation.gripper_state", {...}); ...
//   (*episode)->AppendFrame(row);                                      // any number of rows
//   (*episode)->Commit();   // or Abort(): nothing of N becomes visible, N is recycled
//
// Commit protocol (contract-decisions.md "durability"): every file of the episode
// and the new info.json / stats.json (and tasks.jsonl when absent) are written as
// dotfile temps and fsynced; a journal meta/.commit-<N>.json listing the renames
// is written and fsynced; the renames are done and each directory fsynced; the
// journal is removed. A crash before the journal exists leaves only dotfiles
// (ignored by readers, removed by the next Open); a crash after it is rolled
// forward by the next TaskWriter::Open. Readers hide an episode whose journal is
// still present, so they see all of N or none of it.
//
// Numbering: next N = max(highest N among data/video file groups, highest N among
// episodes rows, options.progress_watermark - 1) + 1; a recycled marker's number
// wins when it is free. meta/episodes/.lock (flock) is held while choosing N and
// while committing, so two recorders never share a number.
//
// Thread safety: a TaskWriter may begin one episode at a time; an EpisodeWriter
// is used from one thread.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "reel/fs.h"
#include "reel/metadata.h"
#include "reel/status.h"
#include "reel/video.h"

namespace reel {

// One device of the rig (multi-device §6.4): devices[] entry plus its calibration.
struct DeviceOptions {
  std::string key;   // "<kind>:<stable id>", e.g. "gripper:CC:BA:97:25:B4:44"
  std::string kind;  // d435, s80m, uvc, gripper, data_ble, usb_glove, ...
  std::string name;  // display name
  std::vector<std::string> slots;  // every slot the device registers
  // StereoCalibration dict as JSON ("" = none). The first device with one becomes
  // calibration["head_stereo"], later ones "<first slot without _N>_calibration".
  std::string calibration_json;
  // The device <-> column binding written into its devices[] entry (multi-device §6.4's
  // additive keys; DeviceEntry): a glove's sensor column ("left_glove"), a gripper's
  // columns ("gripper_state", ...) and rig number (0 = none). One column has one writer:
  // a column bound to two devices is refused.
  std::string sensor_column;
  std::vector<std::string> sensor_columns;
  int64_t rig = 0;
};

// Declaration of one SLAM trajectory column (multi-device §6.6).
struct SlamTrajectoryOptions {
  std::string column;            // e.g. "observation.slam_trajectory", "observation.ego_slam_trajectory"
  std::string frame;             // e.g. "down_left_forward"
  std::string frame_axes_json;   // {"+X": "down", ...}
  std::string time_json;         // {"t": "sensor_s", "clock": "camera_sensor", "epoch": "enter_press"}
  std::string owner_json;        // {"role": "gripper", "rig": 1, "device_key": ...}
  std::string source_slot;       // slot whose frames stamp the _ns column
};

// One video slot (image_key) of the rig. A slot at the task's fps writes one frame per
// data row (row i = frame i). A slot with its own fps (a 15 fps UVC camera in a 30 fps
// task, multi-device §4.2 cameras[slot].fps) takes its frame k at the first row whose
// time reaches k / fps, so the file holds SlotFramesForRows(rows) frames (reel/metadata.h)
// and readers show at row i its frame round_half_up(i * fps / task fps) (SlotFrameOfRow).
struct VideoSlotOptions {
  std::string slot;  // image_key, e.g. "stereo_left", "d435_depth"; listed in a device's slots
  int width = 0;
  int height = 0;
  bool depth = false;
  // Depth slots: the RGB slot whose frames this one follows (contract §2.3: a depth
  // frame is written at every frame of its master, the last one repeated on a gap).
  std::string master_slot;
  // RGB slots: frames per second, 0 = the task's; at most the task's (rows are the
  // ticks a frame is taken at). Declared as cameras[slot].fps when it differs. A depth
  // slot runs at its master's rate; readers find it through the device's slots
  // (InfoJson::SlotFps), so a master with its own fps is its device's first RGB slot.
  double fps = 0;
};

// What the recorder does when a slot's encoder falls behind and its queue is full.
enum class QueueFullPolicy {
  kBlock,  // AppendFrame waits for the encoder (no frame lost; the caller slows down)
  kDrop,   // the row's new frame is dropped, the previous one repeated, and counted in
           // drop_stats as "queue:<slot>" (the caller never waits)
};

struct VideoOptions {
  std::vector<VideoSlotOptions> slots;
  // RGB encoding (kind, size and fps are taken from the slot and the task).
  VideoEncoderOptions rgb;
  // Depth as FFV1 gray16le .mkv (lossless mm) instead of 12-bit log-code HEVC .mp4.
  // Chosen automatically when this FFmpeg has no 12-bit HEVC encoder.
  bool depth_ffv1 = false;
  // Without depth_ffv1, a depth slot the task already records as .mkv stays FFV1, so one
  // task does not mix .mp4 and .mkv episodes by accident (readers accept the mix, and
  // `check` warns: video.extension_mix). False: 12-bit HEVC whatever the task holds.
  // The episodes row's video_codec.depth[slot].selected_by says which rule decided.
  bool keep_task_depth_codec = true;
  // x265 preset of 12-bit HEVC depth: "fast" as the reference collector; "ultrafast"
  // costs about a third of the CPU (see docs/benchmarks.md).
  std::string depth_preset = "fast";
  QueueFullPolicy queue_full = QueueFullPolicy::kBlock;
  // Frames a slot may hold waiting for its encoder: bounds the recorder's memory.
  int queue_frames = 8;
};

struct TaskWriterOptions {
  std::string task_name;        // default: the directory's name
  double fps = 30.0;
  std::string app_version = "reel-" REEL_VERSION;
  std::vector<DeviceOptions> devices;
  // Force-matrix column -> tier: int16, int16x10, int16x100 (default), int16x1000, float32.
  std::map<std::string, std::string> force_matrix_tiers;
  std::vector<SlamTrajectoryOptions> slam_trajectories;
  // The caller's progress watermark (completed recordings + 1, possibly synced from a
  // server); 0 = none.
  int64_t progress_watermark = 0;
  // A parquet row group ends after row_group_rows rows or once its rows hold about
  // row_group_bytes of values, whichever comes first: this bounds the recorder's memory
  // (force matrices are 375 KB a row at the int16 tiers, and writing a row group takes
  // about three times its size again for parquet's list levels).
  int64_t row_group_rows = 256;
  int64_t row_group_bytes = 16 << 20;
  VideoOptions video;
  FileSystem* fs = nullptr;  // null = DefaultFileSystem()
};

// One frame row. Key columns are fields; every other column is set by name and
// typed by its name as the contract's writer does (reference-behaviour.md "data
// parquet"); a column that was never set in the episode is not written at all,
// and rows without a sample get [0]*d, [] or 0 (status.*: "connected").
class FrameRow {
 public:
  double timestamp = 0;      // session-relative seconds (stored float32)
  double wall_time = 0;      // absolute Unix seconds
  int64_t hardware_ns = 0;   // frame capture time
  std::optional<int64_t> raw_hw_ns;

  // fixed_size_list<float32>[n] families: glove [256], *_imu_quat [64], *_imu_valid [16],
  // *_hand_pose [63], *_state / *_force [3], action [1].
  void SetFixed(const std::string& column, std::vector<float> values);
  // Scalars: *_ns int64; D435 forensic depth_ns/host_ns int64, rgb_dup/depth_dup/ts_src
  // int8, rgb_gap/depth_gap int32 (stored at their types).
  void SetScalar(const std::string& column, int64_t value);
  // status.<id>
  void SetStatus(const std::string& column, std::string value);
  // IMU samples on this row: observation.imu (6 floats each) + imu_ts_ns, in lockstep.
  void AddImuSample(int64_t ts_ns, const std::array<float, 6>& sample);
  // SLAM points on this row: 8 doubles [t,x,y,z,qx,qy,qz,qw] + host ns (0 = no stamp).
  void AddSlamPoint(const std::string& column, const std::array<double, 8>& point, int64_t ns);
  // One force-matrix frame (250*250*3 float32, mN); encoded at the column's tier.
  void SetForceMatrix(const std::string& column, std::vector<float> frame, int64_t ns);

  struct Imu {
    std::vector<int64_t> ts_ns;
    std::vector<std::array<float, 6>> samples;
  };
  struct Slam {
    std::vector<double> points;
    std::vector<int64_t> ns;
  };
  // Read access for the writer.
  const std::map<std::string, std::vector<float>>& fixed() const { return fixed_; }
  const std::map<std::string, int64_t>& scalars() const { return scalars_; }
  const std::map<std::string, std::string>& statuses() const { return statuses_; }
  const Imu& imu() const { return imu_; }
  const std::map<std::string, Slam>& slam() const { return slam_; }
  const std::map<std::string, std::vector<float>>& force_matrices() const { return force_; }

 private:
  std::map<std::string, std::vector<float>> fixed_;
  std::map<std::string, int64_t> scalars_;
  std::map<std::string, std::string> statuses_;
  Imu imu_;
  std::map<std::string, Slam> slam_;
  std::map<std::string, std::vector<float>> force_;
};

struct CommittedEpisode {
  int64_t episode_index = 0;
  int64_t length = 0;
  std::string data_path;  // relative to the task
};

class EpisodeWriter;

// The frame source of one video slot during an episode. Push() may be called from
// any thread (a camera's capture thread), concurrently with AppendFrame(). At each
// AppendFrame the slot writes one frame: the latest pushed since the previous row,
// or, when none came, the previous frame again (counted in drop_stats as
// "ext:<slot>", the longest such gap as "<slot>_gap_ms"). Frames pushed and then
// superseded before a row are counted as "superseded:<slot>".
class VideoStream {
 public:
  virtual ~VideoStream() = default;
  virtual const std::string& slot() const = 0;
  // RGB slots: width*height*3 bytes of packed RGB24.
  virtual Status PushRgb(std::span<const uint8_t> rgb) = 0;
  // Depth slots: width*height millimetres (0 = no depth).
  virtual Status PushDepth(std::span<const uint16_t> mm) = 0;
};

class TaskWriter {
 public:
  // Opens (creating if new) the task at `root`; rolls forward an interrupted commit
  // and removes stale temp dotfiles. Errors: Invalid options (bad names), or the
  // task's info.json not being a pooled_episodes_v1 task.
  static Result<std::unique_ptr<TaskWriter>> Open(const std::string& root,
                                                  TaskWriterOptions options);
  ~TaskWriter();

  // Chooses N (under the lock) and starts an episode.
  Result<std::unique_ptr<EpisodeWriter>> BeginEpisode();
  // Records the number `n` again (contract §6.1 "同号重录"; docs/recorder.md "Re-recording a
  // number"): one whose data was deleted, or, with `replace`, a live one (its data or video
  // files exist) whose recording is being redone. Refused: AlreadyExists for a live N
  // without `replace` or one another writer is recording; Invalid for a number never
  // recorded (new numbers come from BeginEpisode()). The commit publishes the new files
  // over the old ones and removes, in the same journaled commit, every old file of N the
  // new recording does not write (a video slot it lacks, a depth file of the other codec).
  // stats.json is left as it is: a re-recorded number stays counted once, by its first
  // recording (deleting never rolled it back, contract §4), and cannot be subtracted
  // exactly; `reel stats --rebuild` recomputes it from the data. info.json merges as usual.
  // Aborting does not offer N to the next recording.
  Result<std::unique_ptr<EpisodeWriter>> BeginEpisode(int64_t n, bool replace);

  const std::string& root() const { return root_; }
  const TaskWriterOptions& options() const { return options_; }

 private:
  friend class EpisodeWriter;

  TaskWriter() = default;
  Result<std::unique_ptr<EpisodeWriter>> Begin(std::optional<int64_t> n, bool replace);
  std::string root_;
  TaskWriterOptions options_;
  FileSystem* fs_ = nullptr;
};

class EpisodeWriter {
 public:
  ~EpisodeWriter();  // aborts when neither Commit nor Abort was called

  int64_t episode_index() const;
  int64_t rows() const;

  // The stream of a slot declared in TaskWriterOptions::video (NotFound otherwise).
  // Valid until the episode is committed or aborted.
  Result<VideoStream*> Video(const std::string& slot);

  // Counts `n` samples the caller had to drop into drop_stats[key] (for example
  // "imu_overflow" when a device's queue overflowed).
  void CountDrop(const std::string& key, int64_t n);

  // Validates and appends one row, and writes one frame to every video slot.
  // Invalid for a column name the contract forbids (upper case, non-ASCII, retired
  // slam_pose / gripper_1_*, observation.images.*), a wrong vector length, or a
  // force-matrix column whose dtype would change; the row is then not written.
  // An encoder failure aborts the episode (its number is recycled) and is returned.
  Status AppendFrame(const FrameRow& row);

  // Writes every file of the episode and the task files, atomically (see above).
  Result<CommittedEpisode> Commit();
  // Discards the episode: writes the recycled marker, removes its temp files.
  Status Abort();

  struct Impl;

 private:
  friend class TaskWriter;
  explicit EpisodeWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Deletes episode N as the contract says (§9 "上传删除"): its file group goes (the data
// parquet and every video file: EpisodeFileGroup's `present`, reel/file_group.h); the
// episodes row, stats.json and total_episodes stay; N is never reused. One journaled
// commit of the episode transaction under the task lock: a crash at any point leaves N
// whole or gone (readers hide N while its journal is present; the next writer rolls it
// forward). The keypoints mirror (contract §10) is outside the task and not part of the
// file group: it stays. OK for an episode deleted before (its row alone); NotFound for
// one the task lacks.
Status DeleteEpisode(const std::string& root, int64_t episode_index, FileSystem* fs = nullptr);

}  // namespace reel
