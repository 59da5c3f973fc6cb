#include "write/task_files.h"

#include <arrow/api.h>
#include <parquet/arrow/writer.h>

#include <chrono>
#include <set>

#include "util/json_util.h"
#include "reel/merge.h"
#include "reel/task.h"
#include "write/episode_stats.h"
#include "io/parquet_io.h"
#include "io/json_file.h"

namespace reel::internal {

namespace {

// Blocks without count (v1.1.0) are rebuilt from data/ once (contract §4).
Result<StatsJson> RebuildCountlessBlocks(FileSystem* fs, const std::string& root, StatsJson stats) {
  std::vector<std::string> names;
  for (const auto& [name, b] : stats.blocks)
    if (b.needs_rebuild() && name != "action") names.push_back(name);
  if (names.empty()) return stats;
  REEL_ASSIGN_OR_RETURN(auto task, Task::Open(root, {fs, 0}));
  REEL_ASSIGN_OR_RETURN(auto episodes, task->ListEpisodes());
  for (const std::string& name : names) {
    StatsBlock total;
    total.count = 0;
    bool first = true;
    for (const EpisodeEntry& e : episodes) {
      if (e.data_path.empty()) continue;
      auto table = task->ReadData(e, {name});
      if (!table.ok()) continue;  // this episode never had the column
      REEL_ASSIGN_OR_RETURN(auto part, internal::BlockFromColumn(*(*table)->column(0)));
      if (!part) continue;
      if (first) {
        total = std::move(*part);
        first = false;
      } else {
        REEL_ASSIGN_OR_RETURN(total, MergeBlocks(total, *part));
      }
    }
    for (auto& [n, b] : stats.blocks)
      if (n == name) b = first ? EmptyBlock(static_cast<int64_t>(b.mean.size())) : total;
  }
  return stats;
}

}  // namespace

double NowUnixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The task's info.json, or a fresh one (contract §3 fixed keys) when the task is new.
Result<InfoJson> LoadInfo(FileSystem* fs, const std::string& root) {
  const std::string path = JoinPath(root, kInfoPath);
  REEL_ASSIGN_OR_RETURN(FileInfo st, fs->Stat(path));
  if (st.type == FileType::kNotFound) {
    InfoJson info;
    info.format = "pooled_episodes_v1";
    info.codebase_version = "v3.0";
    info.created_at = NowUnixSeconds();
    return info;
  }
  REEL_ASSIGN_OR_RETURN(std::string text, ReadFileBounded(fs, path, kJsonFileBytes));
  return ParseInfoJson(text, path);
}

Result<StatsJson> LoadStats(FileSystem* fs, const std::string& root) {
  const std::string path = JoinPath(root, kStatsPath);
  REEL_ASSIGN_OR_RETURN(FileInfo st, fs->Stat(path));
  if (st.type == FileType::kNotFound) return StatsJson{};
  REEL_ASSIGN_OR_RETURN(std::string text, ReadFileBounded(fs, path, kJsonFileBytes));
  REEL_ASSIGN_OR_RETURN(StatsJson parsed, ParseStatsJson(text, path));
  return RebuildCountlessBlocks(fs, root, std::move(parsed));
}

Status WriteTempFile(FileSystem* fs, const std::string& path, std::string_view contents) {
  REEL_RETURN_IF_ERROR(fs->CreateDirs(DirName(path)));
  return WriteFileSynced(fs, path, contents);
}

Status WriteEpisodeRow(FileSystem* fs, const std::string& path, const EpisodeRow& row) {
  // Each JSON cell is held to the bound its readers apply (issue 27 finding 6: a 70 MB
  // drop_stats was written past the readers' 64 MiB), before anything is written.
  for (const auto& [name, cell] : {std::pair<const char*, const std::string&>{"drop_stats", row.drop_stats},
                                   {"video_codec", row.video_codec},
                                   {"calibration", row.calibration},
                                   {"force_matrix_specs", row.force_matrix_specs},
                                   {"slam_specs", row.slam_specs}})
    REEL_RETURN_IF_ERROR(CheckJsonBounds(cell, path + ": " + name + " (as it would be written)"));
  auto i64 = [](int64_t v) { return arrow::MakeArrayFromScalar(arrow::Int64Scalar(v), 1).ValueOrDie(); };
  auto f64 = [](double v) { return arrow::MakeArrayFromScalar(arrow::DoubleScalar(v), 1).ValueOrDie(); };
  auto str = [](const std::string& v) {
    return arrow::MakeArrayFromScalar(arrow::StringScalar(v), 1).ValueOrDie();
  };
  auto schema = arrow::schema({
      arrow::field("episode_index", arrow::int64()), arrow::field("task_index", arrow::int64()),
      arrow::field("start_frame_index", arrow::int64()), arrow::field("end_frame_index", arrow::int64()),
      arrow::field("length", arrow::int64()), arrow::field("created_at", arrow::float64()),
      arrow::field("duration_sec", arrow::float64()), arrow::field("drop_stats", arrow::utf8()),
      arrow::field("video_codec", arrow::utf8()), arrow::field("calibration", arrow::utf8()),
      arrow::field("force_matrix_specs", arrow::utf8()), arrow::field("slam_specs", arrow::utf8())});
  auto table = arrow::Table::Make(
      schema, {i64(row.episode_index), i64(row.task_index), i64(row.start_frame_index),
               i64(row.end_frame_index), i64(row.length), f64(row.created_at),
               f64(row.duration_sec), str(row.drop_stats), str(row.video_codec),
               str(row.calibration), str(row.force_matrix_specs), str(row.slam_specs)});
  return WriteParquet(fs, path, *table, {.store_schema = false, .row_group_rows = 1});
}


FeatureSpec FamilyFeature(ColumnFamily family, int32_t width) {
  FeatureSpec f;
  auto set = [&](const char* dtype, std::vector<int64_t> shape) {
    f.dtype = dtype;
    f.shape = std::move(shape);
  };
  switch (family) {
    case ColumnFamily::kGlove: set("float32", {16, 16}); break;
    case ColumnFamily::kImuSamples: set("float32", {6}); break;
    case ColumnFamily::kGloveImuQuat: set("float32", {16, 4}); break;
    case ColumnFamily::kGloveImuValid: set("float32", {16}); break;
    case ColumnFamily::kStateOrForce: set("float32", {3}); break;
    case ColumnFamily::kHandPose: set("float32", {21, 3}); break;
    case ColumnFamily::kAction: set("float32", {1}); break;
    case ColumnFamily::kSlamStamps:
      set("int64", {1});
      f.encoding = "flat_parallel_to_slam_trajectory";
      f.clock = "host_monotonic_ns";
      break;
    case ColumnFamily::kScalarNs:
      set("int64", {1});
      f.encoding = "host_monotonic_ns";
      f.missing_sentinel = 0;  // a row without a sample holds 0 (multi-device §6 feature table)
      break;
    case ColumnFamily::kSlamPoints:
      set("float64", {8});
      f.encoding = "flat_points_8_txyz_qxyzw";
      break;
    case ColumnFamily::kForceMatrix: set("int16", {250, 250, 3}); break;
    default: set("float32", {width}); break;
  }
  return f;
}

}  // namespace reel::internal
