// The rule catalog: every finding the checker can produce. docs/check-rules.md
// is generated from this table (`reel check --list-rules --markdown`).
#include "reel/check.h"

namespace reel {


namespace {

using S = Severity;

// The catalog, in documentation order (a table, not code).
const std::vector<RuleInfo> kRules = {
      // Format and info.json
      {"format.unknown", S::kError, "contract §1, §12.1",
       "meta/info.json format must be \"pooled_episodes_v1\"; an unknown format is refused, not guessed"},
      {"info.json", S::kError, "contract §3",
       "meta/info.json exists and is one JSON object"},
      {"info.required_key", S::kError, "contract §3; multi-device §6.1",
       "every required top-level key of info.json is present"},
      {"info.key_type", S::kError, "contract §3; multi-device §6.1",
       "each info.json key has the JSON type the contract gives it"},
      {"info.template", S::kError, "contract §2, §12.2",
       "data_path, video_path and episodes_path parse and contain the placeholders they need; "
       "chunks_size is a positive integer"},
      {"info.codebase_version", S::kWarning, "contract §3, 000 §4; decisions",
       "codebase_version is \"v3.0\"; another value (the collector's migration writes its app version, "
       "\"1.0.14\") is informational: the task is read by its format"},
      {"info.sensors", S::kWarning, "multi-device §6.4",
       "every glove column observation.<sensor> has its sensor listed in sensors"},
      {"devices.entry", S::kError, "multi-device §6.4",
       "each devices[] entry has key, kind, name and slots"},
      {"devices.names", S::kWarning, "multi-device §6.4",
       "device_names maps every slot of every device"},
      {"devices.binding", S::kWarning, "multi-device §5.2, §6.4; decisions",
       "a column bound to a device (sensor_column / sensor_columns, additive keys) is declared in features, "
       "and no column is bound to two devices (two writers, or an owner that changed between episodes)"},
      // Layout
      {"layout.legacy_leftover", S::kError, "contract §1",
       "no v1.0 leftovers in a pooled task: calibration/, metadata.json, timestamps.json, "
       "<task>_NNNNNN session folders"},
      {"layout.stray_file", S::kWarning, "contract §2, §11",
       "every file under data/, videos/ and meta/episodes/ matches its info.json template or is a "
       "known non-data file"},
      {"layout.symlink", S::kError, "contract §2, §11; issue 27",
       "no symbolic link inside the task (top folder, meta/, data/, videos/, meta/episodes/): a task is "
       "copied from elsewhere and its files are its own; reel's writers refuse to write through a link"},
      {"layout.pending_commit", S::kWarning, "contract §9; reel's commit journal",
       "no interrupted commit or push journal (meta/.commit-<N>.json, .push-<N>.json, .commit-task.json, "
       ".push-change.json): readers hide the episode until the next writer finishes it"},
      {"nondata.obsolete", S::kWarning, "contract §11",
       "obsolete leftovers (meta/.stats_state.json, _trash/) should be removed"},
      {"episode.file_group", S::kError, "contract §2, §9, §7.5",
       "an episode's files are whole or gone: no videos without the data parquet, and no data "
       "parquet without a video slot its episodes row declares (video_codec depth slots and their "
       "master_slot); a deleted episode keeps only its row"},
      // Numbering
      {"numbering.episode_index", S::kError, "contract §2, §7.1",
       "the episode_index column of the data parquet and of the episodes row equals the N given by "
       "the file's (chunk, file)"},
      {"numbering.total_episodes", S::kError, "contract §3, §6; decisions",
       "total_episodes is at least the highest committed episode number (it never decreases)"},
      // stats.json
      {"stats.missing", S::kError, "contract §4", "meta/stats.json exists when the task has episodes"},
      {"stats.malformed", S::kError, "contract §4",
       "meta/stats.json is one JSON object of {count, mean, std, min, max} blocks"},
      {"stats.count", S::kError, "contract §4",
       "every stats block has count (a block without it is v1.1.0 and needs a rebuild from data/)"},
      {"stats.shape", S::kError, "contract §4",
       "mean, std, min and max of a block have the column's dimension; std is not negative"},
      {"stats.action", S::kWarning, "contract §4",
       "the action block is the placeholder {count:0, mean:[0.0], std:[1.0], min:[0.0], max:[0.0]}"},
      // tasks.jsonl
      {"tasks.missing", S::kError, "contract §5", "meta/tasks.jsonl exists"},
      {"tasks.jsonl", S::kError, "contract §5",
       "each line of tasks.jsonl is one complete JSON object with task_index and task "
       "(pretty-printed files break first-line readers)"},
      // meta/episodes
      {"episodes.row_missing", S::kError, "contract §6.1",
       "every episode with data or videos has a meta/episodes row"},
      {"episodes.row_count", S::kError, "contract §6.1",
       "a per-episode meta/episodes file holds exactly one row"},
      {"episodes.legacy_shard", S::kInfo, "contract §2, §6.1",
       "rows found in a legacy multi-row shard (readers locate them by episode_index)"},
      {"episodes.column_type", S::kError, "contract §6.2",
       "the episodes row has the 11 columns with their types (int64, float64, JSON string); "
       "force_matrix_specs and slam_specs may be absent in old rows"},
      {"episodes.json_column", S::kError, "contract §6.2",
       "drop_stats, video_codec, calibration, force_matrix_specs and slam_specs hold JSON objects"},
      {"episodes.values", S::kError, "contract §6.2",
       "duration_sec and created_at are finite, duration_sec is not negative, task_index is not "
       "negative"},
      {"episodes.length", S::kError, "contract §6.2, §7.1",
       "length equals the data parquet's rows, start_frame_index is 0 and end_frame_index is "
       "length-1"},
      // data parquet
      {"data.unreadable", S::kError, "contract §7", "the data parquet is a readable parquet file"},
      {"data.compression", S::kWarning, "contract §7",
       "data parquet column chunks are zstd-compressed"},
      {"data.key_column", S::kError, "contract §7.1; multi-device §3",
       "key columns exist with their types: episode_index int64, frame_index int64, timestamp "
       "float32, task_index int64, wall_time float64, hardware_ns int64 (raw_hw_ns int64 if present); "
       "task_index is not negative"},
      {"data.frame_index", S::kError, "contract §7.1", "frame_index is 0..length-1 without gaps"},
      {"data.time_order", S::kError, "contract §7.1; multi-device §3.1",
       "timestamp and wall_time are finite and never decrease within an episode (rows are "
       "written in time order)"},
      {"time.clock_reset", S::kWarning, "multi-device §3.1, §5.4, §8.2.4",
       "hardware_ns, a sample's _ns, a trajectory's _ns and imu_ts_ns never step back within an "
       "episode (a wrap or a device reset); reel pairs samples with frames within each stretch"},
      {"time.repeated_stamp", S::kWarning, "multi-device §5.3, §5.5",
       "no row repeats the previous stamp of a stream (the same frame or sample twice; a row "
       "without a new sample holds 0)"},
      {"time.stream_gap", S::kWarning, "multi-device §5.5",
       "no stream is silent for longer than max(1 s, 10 x its median interval), from the first "
       "frame to the last (a stream that stopped or was disconnected)"},
      {"data.column_type", S::kError, "contract §7.2; multi-device App. C",
       "each column family has its Arrow type: fixed_size_list for list<T, N>, variable list "
       "for force matrices, SLAM, IMU samples"},
      {"data.row_width", S::kError, "reel (docs/reliability.md, bounds)",
       "no fixed-width column holds more than 65,536 values in a row (reel's writers refuse wider ones)"},
      {"data.finite", S::kWarning, "reel; multi-device §5.5",
       "value columns hold no NaN or infinity (stats.json's mean and std would become NaN; a row "
       "without a sample holds zeros or [])"},
      {"data.null_list", S::kError, "reference behaviour; multi-device §5.5",
       "list columns hold [] or zeros for rows without a sample, never null"},
      {"data.undeclared_column", S::kError, "multi-device §6.8",
       "every observation.* column has a feature in info.json"},
      {"data.column_renamed", S::kWarning, "multi-device §2.4",
       "a column keeps its name across episodes: two observation columns of one dtype and shape that never "
       "share an episode, one ending before the other begins and not bound to different devices, look renamed"},
      {"data.column_name", S::kError, "multi-device §2.4",
       "column names use lower-case ASCII [a-z0-9_] segments; retired names (gripper_1_*, "
       "observation.images.*) are not written; slam_pose is legacy (warning)"},
      {"data.slam_lockstep", S::kError, "multi-device §4.6, §8.1.3",
       "each slam_trajectory row has 8 values per point and its _ns row one stamp per point"},
      {"data.imu_lockstep", S::kError, "contract §7.2, §12",
       "imu_ts_ns has one stamp per observation.imu sample on every row"},
      {"data.force_matrix", S::kError, "contract §7.2.1; multi-device §8.1.4",
       "force-matrix rows have 0 or 187,500 values and the column dtype matches its encoding "
       "(int16 row_diff_quantized, float32 row_flat_raw)"},
      // features
      {"features.declaration", S::kError, "multi-device §6.2, §6.8",
       "every feature has dtype and shape; status.*, key columns and video streams are not "
       "features"},
      {"features.shape", S::kWarning, "multi-device §6.2; decisions",
       "a feature's shape matches its column (glove [16,16], IMU [6], state/force [3], ...)"},
      {"features.force_matrix_spec", S::kError, "contract §7.2.1; multi-device §8.1.4",
       "force-matrix features and force_matrix_specs entries carry encoding and scale"},
      {"features.slam_frame", S::kError, "multi-device §6.6, §8.1.6",
       "gripper_slam_frame only when a gripper trajectory exists; each trajectory declares "
       "frame/frame_axes (warning when absent); slam_frames agrees with features"},
      // videos
      {"video.extension", S::kError, "contract §8, §12.6; multi-device §6.3",
       "every video file's extension is video_extensions[slot]; every slot on disk and every "
       "camera is in video_extensions; extensions are mp4 or mkv"},
      {"video.extension_mix", S::kWarning, "contract §3; decisions",
       "a slot's files are all of its video_extensions type; a file of the other allowed type "
       "(mp4/mkv: a task whose depth codec changed between episodes) is read, and reported"},
      {"video.depth_in_cameras", S::kError, "contract §3; multi-device §4.8",
       "depth slots are never listed in cameras"},
      {"video.unreadable", S::kError, "contract §8",
       "every video file opens (FFmpeg demuxer and packet index) and holds a video stream with a "
       "decoder; a depth .mkv is read by its FFV1 stream"},
      {"video.stream_kind", S::kError, "contract §3, §8; multi-device §4.8",
       "a depth slot holds a depth stream (12-bit HEVC or FFV1 gray16le) and an RGB slot does not"},
      {"video.resolution", S::kWarning, "contract §3; reference behaviour",
       "a video's width and height are those of its cameras entry (the latest episode's value "
       "wins, so older episodes may differ)"},
      {"video.frame_count", S::kError, "contract §7.3, §8",
       "every video of an episode has exactly as many frames as its data parquet has rows "
       "(row i = frame i); a slot with its own fps (cameras[slot].fps, multi-device §4.2) has "
       "floor((rows - 1) * fps / task fps) + 1, one either way allowed"},
      // LeRobot v2.x / v3.x and bundle datasets (docs/foreign-read.md)
      {"foreign.episode_order", S::kError, "foreign-read.md; LeRobot",
       "row / line i of the episode index is episode_index i: no gap, no reorder"},
      {"foreign.index_contiguous", S::kError, "foreign-read.md; LeRobot v3",
       "dataset_from_index follows the previous episode's dataset_to_index, to - from = length, a "
       "data file's episodes are consecutive, and each data row's index is dataset_from_index + row"},
      {"foreign.data_rows", S::kError, "foreign-read.md; LeRobot",
       "a data file holds exactly the rows its episodes claim, each with its episode's episode_index"},
      {"foreign.file_missing", S::kError, "foreign-read.md",
       "every data and video file the path templates (or a bundle) name exists"},
      {"foreign.video_span", S::kError, "foreign-read.md; LeRobot v3",
       "to_timestamp - from_timestamp = length / fps within half a frame; spans in one file do not "
       "overlap"},
      {"foreign.video_frames", S::kError, "foreign-read.md",
       "a per-episode video has exactly length frames; a shared v3 video reaches its last "
       "to_timestamp"},
      {"foreign.bundle_episode", S::kError, "foreign-read.md; bundle",
       "every manifest episode has its directory and episode.json"},
      {"foreign.length", S::kError, "foreign-read.md; bundle",
       "length agrees between manifest.json, episode.json and data.parquet's rows"},
      {"foreign.step", S::kError, "foreign-read.md; bundle", "data.parquet's step is 0..n-1"},
      {"foreign.overlay", S::kError, "foreign-read.md; bundle; seed 004",
       "every overlays/<name>/<id>.parquet names a manifest episode and keeps the overlay rules (dense: "
       "step 0..length-1; spans: 0 <= start_step < end_step <= length; one kind and value columns per "
       "overlay)"},
      {"foreign.totals", S::kWarning, "foreign-read.md",
       "total_episodes / total_frames (episode_count) agree with the episode index"},
      {"foreign.unreadable", S::kError, "foreign-read.md", "every data and video file can be decoded"},
      {"foreign.metadata", S::kError, "foreign-read.md",
       "the episode index can be built (episodes files readable, required columns present)"},
};

}  // namespace

const std::vector<RuleInfo>& Rules() { return kRules; }

}  // namespace reel
