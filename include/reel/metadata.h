// Typed model of the task-level metadata files of pooled_episodes_v1:
// meta/info.json (contract §3, multi-device §6 and Appendix B), meta/stats.json
// (§4), meta/tasks.jsonl (§5) and the meta/episodes rows (§6.2 plus the
// proposed slam_specs column, multi-device §7.2).
//
// Parsers are strict about types (a string where a number belongs is an
// error naming the file, the key and the value) and lenient about absence
// (a missing key takes its default; the checker reports required keys).
// Serializers keep every key they do not model, in its original order.
//
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "reel/json_limits.h"
#include "reel/status.h"

namespace arrow {
class Table;
}

namespace reel {

// An ordered string-keyed list, as JSON objects are read and written.
template <typename V>
using OrderedMap = std::vector<std::pair<std::string, V>>;

template <typename V>
const V* Lookup(const OrderedMap<V>& map, std::string_view key) {
  for (const auto& [k, v] : map)
    if (k == key) return &v;
  return nullptr;
}

// One entry of info.json "features" (multi-device §6.2, §6.6).
struct FeatureSpec {
  std::string dtype;             // "float32", "int16", "int64", "float64"
  std::vector<int64_t> shape;    // shape of one element, e.g. [16,16], [250,250,3], [8]
  std::optional<std::string> encoding;  // row_diff_quantized, row_flat_raw, flat_points_8_txyz_qxyzw, ...
  std::optional<double> scale;          // force matrices: 1, 10, 100, 1000
  std::optional<std::string> frame;     // SLAM coordinate frame id
  std::optional<std::string> clock;     // e.g. host_monotonic_ns
  std::optional<std::string> source_slot;
  // Scalar `_ns` stamps: the value that means "no sample on this row" (multi-device §6 feature
  // table: {"dtype":"int64","shape":[1],"encoding":"host_monotonic_ns","missing_sentinel":0}).
  std::optional<int64_t> missing_sentinel;
  // Nested objects kept verbatim as JSON text ("" when absent).
  std::string frame_axes_json, time_json, owner_json;
  int64_t ElementCount() const;  // product of shape (1 for [])
};

struct CameraSpec {
  int64_t height = 0;
  int64_t width = 0;
  std::optional<double> fps;  // only when it differs from the task fps
};

struct DeviceEntry {
  std::string key;   // "<kind>:<stable id>"
  std::string kind;  // d435, s80m, uvc, gripper, data_ble, ble_glove, usb_glove, ...
  std::string name;
  std::vector<std::string> slots;
  // The device <-> column binding, additive keys the multi-device doc proposes (§6.4):
  // which observation columns this device writes. Names are column bodies ("left_glove",
  // "gripper_2_gripper_state"); "observation.<body>" is accepted when read.
  std::optional<std::string> sensor_column;  // a glove: its one sensor column (singular)
  std::vector<std::string> sensor_columns;   // a gripper: its columns (plural, a list)
  std::optional<int64_t> rig;                // a gripper: its rig number (1 = no column prefix)
  // "observation.<body>" of every column bound above, in order, without repeats.
  std::vector<std::string> BoundColumns() const;
};

// The binding of a devices list: each bound column -> the keys of the devices that bind it,
// in list order. More than one key breaks multi-device §5.2's one writer per column (two
// writers, or an owner that changed between episodes: devices[] is a union by key).
std::map<std::string, std::vector<std::string>> ColumnWriters(const std::vector<DeviceEntry>& devices);

struct InfoJson {
  std::string format;  // "pooled_episodes_v1"
  int64_t chunks_size = 1000;
  std::string data_path = "data/chunk-{c:03d}/episode-{f:03d}.parquet";
  std::string video_path = "videos/chunk-{c:03d}/{image_key}/episode-{f:03d}.{ext}";
  std::string episodes_path = "meta/episodes/chunk-{c:03d}/episode-{f:03d}.parquet";
  std::string codebase_version;
  std::string app_version;
  double fps = 30.0;
  bool video = false;
  std::string task_name;
  OrderedMap<FeatureSpec> features;
  OrderedMap<CameraSpec> cameras;
  OrderedMap<std::string> video_extensions;  // image_key -> "mp4" | "mkv"
  std::vector<DeviceEntry> devices;
  OrderedMap<std::string> device_names;  // slot -> display name
  std::vector<std::string> sensors;
  int64_t sensor_dim = 256;
  std::optional<double> created_at;
  std::string calibration_json = "{}";  // kept verbatim
  int64_t total_episodes = 0;
  std::optional<std::string> gripper_slam_frame;
  OrderedMap<std::string> slam_frames;

  // Top-level keys present in the file, in file order.
  std::vector<std::string> present_keys;
  // The document as read; SerializeInfoJson keeps its unknown keys and order.
  std::string source_json;

  bool Has(std::string_view key) const;
  const FeatureSpec* Feature(std::string_view column) const { return Lookup(features, column); }
  // The frame rate of a video slot (multi-device §4.2, §6.3): cameras[slot].fps where
  // declared, else the task's. A depth slot is never in cameras and follows its master's
  // frames (contract §2.3): it takes the rate of the first slot of its device's `slots`
  // that cameras declares (the collector's D435 [d435_rgb, d435_depth], stereo
  // [stereo_left, stereo_right, stereo_depth]), else the task's.
  double SlotFps(std::string_view slot) const;
};

// Which frame of a slot running at `slot_fps` a data row shows (the task's rows tick at
// `task_fps`): round_half_up(row * slot_fps / task_fps), the reference reader's rule
// (collector ui/playback_dialog.py `_seek`); at equal rates row i is frame i. Not clamped:
// a reader clamps to the file's last frame, as the reference does.
int64_t SlotFrameOfRow(int64_t row, double task_fps, double slot_fps);
// The frames a writer gives a slot over `rows` rows: those whose nominal times
// k / slot_fps fall within the rows' span, floor((rows - 1) * slot_fps / task_fps) + 1
// (0 for no rows; `rows` at equal rates). Frame k is taken at the first row whose time
// reaches k / slot_fps, when a camera at that rate has delivered it. The reader's rounding
// may ask for one frame more at the last row; it is clamped, as the reference does.
int64_t SlotFramesForRows(int64_t rows, double task_fps, double slot_fps);

// `path` only labels error messages.
Result<InfoJson> ParseInfoJson(std::string_view text, const std::string& path);
// Indent 2, UTF-8 without \u escapes; keys in source order, new keys appended.
// Invalid when a verbatim JSON field (calibration_json, a feature's
// frame_axes/time/owner) does not parse.
Result<std::string> SerializeInfoJson(const InfoJson& info);

// One block of stats.json: {count, mean, std, min, max}. Nested arrays (LeRobot
// image stats) are flattened; `shape` records their nesting.
struct StatsBlock {
  std::optional<int64_t> count;  // absent = v1.1.0 block: needs a rebuild from data/
  std::vector<double> mean, std, min, max;
  std::vector<int64_t> shape;
  bool needs_rebuild() const { return !count.has_value(); }
};

struct StatsJson {
  OrderedMap<StatsBlock> blocks;
  std::string source_json;
};

Result<StatsJson> ParseStatsJson(std::string_view text, const std::string& path);
// Doubles in shortest round-trip form; unknown blocks kept.
std::string SerializeStatsJson(const StatsJson& stats);

// One line of tasks.jsonl.
struct TaskEntry {
  int64_t task_index = 0;
  std::string task;
};

// Parses line by line (contract §5). A line that is not one complete JSON
// object (e.g. a pretty-printed file) is Invalid, naming the line number.
// Blank lines are skipped.
Result<std::vector<TaskEntry>> ParseTasksJsonl(std::string_view text, const std::string& path);

// One meta/episodes row: the 11 columns of contract §6.2 plus slam_specs.
struct EpisodeRow {
  int64_t episode_index = 0;
  int64_t task_index = 0;
  int64_t start_frame_index = 0;
  int64_t end_frame_index = -1;
  int64_t length = 0;
  double created_at = 0.0;
  double duration_sec = 0.0;
  std::string drop_stats = "{}";  // the five JSON-string columns, verbatim
  std::string video_codec = "{}";
  std::string calibration = "{}";
  std::string force_matrix_specs = "{}";
  std::string slam_specs = "{}";
  // Columns the file lacked; they hold their defaults above.
  std::vector<std::string> missing_columns;
  bool HasColumn(std::string_view name) const;
};

// The episodes columns in contract order; slam_specs (optional) last.
extern const char* const kEpisodeColumns[12];

// Rows of an episodes table (one row per episode file, many in a legacy
// shard). episode_index is required; other missing columns take their
// defaults; a column of the wrong type is Invalid naming `path`, the column and
// the type found.
Result<std::vector<EpisodeRow>> EpisodeRowsFromTable(const arrow::Table& table,
                                                     const std::string& path);

}  // namespace reel
