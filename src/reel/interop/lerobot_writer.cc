// LeRobot v3.0 and v2.1 export (lerobot-and-daft.md): data parquet, videos,
// episodes metadata with stats, tasks, info.json.
#include <arrow/api.h>
#include <parquet/arrow/writer.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "interop/export_internal.h"
#include "video/video_concat.h"
#include "io/scratch_dir.h"
#include "util/json_util.h"
#include "io/parquet_io.h"

namespace reel::internal {
namespace {

using OJson = nlohmann::ordered_json;

constexpr int64_t kMiB = 1024 * 1024;

// LeRobot writes an integral fps as an int.
OJson FpsJson(double fps) {
  if (std::floor(fps) == fps) return static_cast<int64_t>(fps);
  return fps;
}

OJson FeatureJson(const ExportFeature& f) {
  OJson j;
  j["dtype"] = f.dtype;
  j["shape"] = f.shape.empty() ? OJson{f.width} : OJson(f.shape);
  j["names"] = f.names.empty() ? OJson(nullptr) : OJson(f.names);
  return j;
}

OJson CameraJson(const VideoInfo& v, bool depth, double fps) {
  OJson j;
  j["dtype"] = "video";
  j["shape"] = {v.height, v.width, 3};
  j["names"] = {"height", "width", "channels"};
  OJson info;
  info["video.height"] = v.height;
  info["video.width"] = v.width;
  info["video.codec"] = v.codec;
  info["video.pix_fmt"] = v.pix_fmt;
  info["video.is_depth_map"] = depth;
  info["video.fps"] = FpsJson(fps);
  info["video.channels"] = 3;
  info["has_audio"] = false;
  j["info"] = info;
  return j;
}

OJson ScalarFeature(const char* dtype) {
  return OJson{{"dtype", dtype}, {"shape", {1}}, {"names", nullptr}};
}

// The frame table plus LeRobot's bookkeeping columns.
Result<std::shared_ptr<arrow::Table>> WithBookkeeping(const arrow::Table& features, double fps,
                                                      int64_t episode_index, int64_t first_index,
                                                      int64_t task_index) {
  const int64_t n = features.num_rows();
  arrow::FloatBuilder ts;
  arrow::Int64Builder frame, episode, index, task;
  for (int64_t i = 0; i < n; ++i) {
    (void)ts.Append(static_cast<float>(static_cast<double>(i) / fps));
    (void)frame.Append(i);
    (void)episode.Append(episode_index);
    (void)index.Append(first_index + i);
    (void)task.Append(task_index);
  }
  auto fields = features.schema()->fields();
  auto columns = features.columns();
  auto add = [&](const char* name, arrow::ArrayBuilder& b) {
    std::shared_ptr<arrow::Array> a;
    (void)b.Finish(&a);
    fields.push_back(arrow::field(name, a->type(), false));
    columns.push_back(std::make_shared<arrow::ChunkedArray>(a));
  };
  add("timestamp", ts);
  add("frame_index", frame);
  add("episode_index", episode);
  add("index", index);
  add("task_index", task);
  return arrow::Table::Make(arrow::schema(fields), columns, n);
}

// `column` (nested fixed-size lists) seen as rows of `channels` values: the last axis's
// channels of every frame and position (1 = every value alone).
Result<std::shared_ptr<arrow::Array>> PerChannel(std::shared_ptr<arrow::Array> column, int64_t channels) {
  while (column->type_id() == arrow::Type::FIXED_SIZE_LIST) {
    auto flat = static_cast<const arrow::FixedSizeListArray&>(*column).Flatten();
    if (!flat.ok()) return Status::IOError(flat.status().ToString());
    column = *flat;
  }
  if (channels <= 1) return column;
  auto made = arrow::FixedSizeListArray::FromArrays(column, static_cast<int32_t>(channels));
  if (!made.ok()) return Status::IOError(made.status().ToString());
  return std::shared_ptr<arrow::Array>(*made);
}

// Stats of every numeric column of `table` (strings are skipped, as LeRobot does): per
// element, or per channel for a feature with stats_channels (a force matrix's fx/fy/fz,
// the IMU's six axes: per-cell stats of a 250x250 plane would be 62,500 numbers a stat
// and say little; a channel's broadcast against the feature's shape normalises it).
Result<std::map<std::string, FeatureStats>> TableStats(const arrow::Table& table, const FramePlan& plan) {
  std::map<std::string, int64_t> channels;
  for (const auto& f : plan.features)
    if (f.stats_channels > 0) channels[f.key] = f.stats_channels;
  std::map<std::string, FeatureStats> out;
  for (int c = 0; c < table.num_columns(); ++c) {
    const auto& col = table.column(c);
    if (col->type()->id() == arrow::Type::STRING) continue;
    auto combined = arrow::Concatenate(col->chunks());
    if (!combined.ok()) return Status::IOError(combined.status().ToString());
    std::shared_ptr<arrow::Array> values = *combined;
    auto it = channels.find(table.field(c)->name());
    if (it != channels.end()) {
      REEL_ASSIGN_OR_RETURN(values, PerChannel(values, it->second));
    }
    REEL_ASSIGN_OR_RETURN(auto stats, ColumnStats(*values));
    stats.count = combined->get()->length();  // frames, as LeRobot counts (also per channel)
    out[table.field(c)->name()] = std::move(stats);
  }
  return out;
}

// Appends a JSON number array of any nesting to a list builder chain.
arrow::Status AppendNested(arrow::ArrayBuilder* b, const OJson& j) {
  if (!j.is_array()) {
    if (b->type()->id() == arrow::Type::INT64)
      return static_cast<arrow::Int64Builder*>(b)->Append(j.get<int64_t>());
    return static_cast<arrow::DoubleBuilder*>(b)->Append(j.get<double>());
  }
  auto* list = static_cast<arrow::ListBuilder*>(b);
  ARROW_RETURN_NOT_OK(list->Append());
  for (const auto& e : j) ARROW_RETURN_NOT_OK(AppendNested(list->value_builder(), e));
  return arrow::Status::OK();
}

std::shared_ptr<arrow::DataType> NestedType(const OJson& j) {
  if (!j.is_array()) return j.is_number_integer() ? arrow::int64() : arrow::float64();
  return arrow::list(j.empty() ? arrow::float64() : NestedType(j[0]));
}

// Builds a table from rows of JSON values (one object per row, same keys).
Result<std::shared_ptr<arrow::Table>> TableFromRows(const std::vector<OJson>& rows) {
  arrow::FieldVector fields;
  std::vector<std::shared_ptr<arrow::Array>> arrays;
  for (const auto& [key, first] : rows.front().items()) {
    std::shared_ptr<arrow::DataType> type =
        first.is_string() ? arrow::utf8()
        : first.is_array() && !first.empty() && first[0].is_string() ? arrow::list(arrow::utf8())
                                                                      : NestedType(first);
    std::unique_ptr<arrow::ArrayBuilder> builder;
    if (!arrow::MakeBuilder(arrow::default_memory_pool(), type, &builder).ok()) {
      return Status::IOError("building column " + key);
    }
    for (const auto& row : rows) {
      if (!row.contains(key)) return Status::Invalid("episodes metadata: a row lacks " + key);
      const OJson& v = row[key];
      arrow::Status st;
      if (type->id() == arrow::Type::STRING) {
        st = static_cast<arrow::StringBuilder*>(builder.get())->Append(v.get<std::string>());
      } else if (type->Equals(arrow::list(arrow::utf8()))) {
        auto* list = static_cast<arrow::ListBuilder*>(builder.get());
        st = list->Append();
        for (const auto& s : v) {
          if (st.ok()) st = static_cast<arrow::StringBuilder*>(list->value_builder())->Append(s.get<std::string>());
        }
      } else {
        st = AppendNested(builder.get(), v);
      }
      if (!st.ok()) return Status::Invalid("column " + key + ": " + st.ToString());
    }
    std::shared_ptr<arrow::Array> array;
    if (!builder->Finish(&array).ok()) return Status::IOError("finishing column " + key);
    fields.push_back(arrow::field(key, type));
    arrays.push_back(array);
  }
  return arrow::Table::Make(arrow::schema(fields), arrays);
}

// tasks.parquet: task_index plus the task string as the pandas index, which is
// how LeRobot reads it back (tasks.loc[task] / tasks.iloc[i].name).
Status WriteTasksParquet(FileSystem* fs, const std::string& path, const std::vector<std::string>& tasks) {
  arrow::Int64Builder index;
  arrow::StringBuilder text;
  for (size_t i = 0; i < tasks.size(); ++i) {
    (void)index.Append(static_cast<int64_t>(i));
    (void)text.Append(tasks[i]);
  }
  std::shared_ptr<arrow::Array> a, b;
  (void)index.Finish(&a);
  (void)text.Finish(&b);
  OJson pandas;
  pandas["index_columns"] = {"task"};
  pandas["column_indexes"] = OJson::array();
  pandas["columns"] = {
      {{"name", "task_index"}, {"field_name", "task_index"}, {"pandas_type", "int64"},
       {"numpy_type", "int64"}, {"metadata", nullptr}},
      {{"name", "task"}, {"field_name", "task"}, {"pandas_type", "unicode"},
       {"numpy_type", "object"}, {"metadata", nullptr}}};
  pandas["creator"] = {{"library", "reel"}, {"version", REEL_VERSION}};
  pandas["pandas_version"] = "2.2.3";
  auto schema = arrow::schema({arrow::field("task_index", arrow::int64()), arrow::field("task", arrow::utf8())},
                              arrow::key_value_metadata({"pandas"}, {pandas.dump()}));
  return WriteParquet(fs, path, *arrow::Table::Make(schema, {a, b}));
}

// LeRobot v3 data files: episodes appended as row groups, a new file once the
// current one passes the size limit; an episode never spans two files.
class DataFiles {
 public:
  DataFiles(FileSystem* fs, std::string dir, int64_t limit_bytes, int64_t chunks_size)
      : fs_(fs), dir_(std::move(dir)), limit_(limit_bytes), chunks_size_(chunks_size) {}

  // Writes the episode; returns (chunk_index, file_index) of the file it went to.
  Result<std::pair<int64_t, int64_t>> Write(const arrow::Table& table) {
    if (writer_ && sink_->Tell().ValueOr(0) >= limit_) {
      REEL_RETURN_IF_ERROR(Close());
      ++counter_;
    }
    if (!writer_) REEL_RETURN_IF_ERROR(OpenFile(*table.schema()));
    arrow::Status st = writer_->WriteTable(table, 64 * 1024);
    if (!st.ok()) return Status::IOError(path_ + ": " + st.ToString());
    return std::make_pair(counter_ / chunks_size_, counter_ % chunks_size_);
  }

  Status Close() {
    if (!writer_) return Status::OK();
    arrow::Status st = writer_->Close();
    if (st.ok()) st = sink_->Close();
    writer_.reset();
    if (!st.ok()) return Status::IOError(path_ + ": " + st.ToString());
    return Status::OK();
  }

 private:
  Status OpenFile(const arrow::Schema& schema) {
    path_ = JoinPath(dir_, "data/chunk-" + Pad(counter_ / chunks_size_, 3) + "/file-" +
                               Pad(counter_ % chunks_size_, 3) + ".parquet");
    REEL_RETURN_IF_ERROR(fs_->CreateDirs(DirName(path_)));
    REEL_ASSIGN_OR_RETURN(auto file, fs_->NewWritableFile(path_));
    sink_ = std::make_shared<FsOutputStream>(std::move(file), path_);
    const internal::ParquetWriteOptions o;
    auto w = parquet::arrow::FileWriter::Open(schema, arrow::default_memory_pool(), sink_,
                                              internal::ParquetWriterProperties(o), internal::ParquetArrowProperties(o));
    if (!w.ok()) return Status::IOError(path_ + ": " + w.status().ToString());
    writer_ = std::move(w).ValueOrDie();
    return Status::OK();
  }

  FileSystem* fs_;
  std::string dir_, path_;
  int64_t limit_, chunks_size_, counter_ = 0;
  std::shared_ptr<FsOutputStream> sink_;
  std::unique_ptr<parquet::arrow::FileWriter> writer_;
};

// LeRobot v3 video files of one camera: episodes appended by stream copy, a new
// file past the size limit or when the stream parameters change.
struct CameraFiles {
  std::unique_ptr<StreamConcat> concat;
  std::string path;
  int64_t counter = -1;
  std::vector<std::string> written;
};

std::string VideoFilePath(const std::string& dir, const std::string& key, int64_t counter,
                          int64_t chunks_size) {
  return JoinPath(dir, "videos/" + key + "/chunk-" + Pad(counter / chunks_size, 3) + "/file-" +
                           Pad(counter % chunks_size, 3) + ".mp4");
}

// LeRobot v3.0: one episode's camera `k` appended to the camera's current concatenated
// file (a new file when the stream parameters change or the size limit is reached), and
// its span recorded in the episodes row.
Status AppendCameraV3(const ExportSource& src, size_t k, const std::string& source, int64_t n, const std::string& dir,
                      const ExportOptions& options, const std::string& scratch, CameraFiles* camera, OJson* episode_row,
                      ExportReport* report) {
  FileSystem* fs = src.out_fs;
  const double fps = src.task->info().fps;
  const int64_t chunks = options.chunks_size;
  const auto& cam = src.plan.cameras[k];
  OJson& row = *episode_row;
  // The stream is appended from the task, or from its re-encoded copy in `scratch`.
  std::string input = source;
  FileSystem* input_fs = src.task_fs;
  const std::vector<int64_t> retime = RetimedFrames(src.task->info(), cam.slot, n);
  bool copyable = false;
  if (retime.empty()) {
    REEL_ASSIGN_OR_RETURN(copyable, CopyableToMp4(source, src.task_fs));
  }
  if (!copyable) {
    input = JoinPath(scratch, "reencoded-" + std::to_string(k) + ".mp4");
    input_fs = fs;
    REEL_RETURN_IF_ERROR(ReencodeToMp4(src.task_fs, source, fs, input, fps, retime));
    ++report->videos_reencoded;
  } else {
    ++report->videos_copied;
  }
  CameraFiles& files = *camera;
  bool roll = !files.concat;
  if (files.concat) {
    REEL_ASSIGN_OR_RETURN(bool same, files.concat->Accepts(input_fs, input));
    roll = !same || files.concat->bytes() >= options.video_files_size_in_mb * kMiB;
  }
  if (roll) {
    if (files.concat) REEL_RETURN_IF_ERROR(files.concat->Finish());
    ++files.counter;
    files.path = VideoFilePath(dir, cam.key, files.counter, chunks);
    REEL_RETURN_IF_ERROR(fs->CreateDirs(DirName(files.path)));
    REEL_ASSIGN_OR_RETURN(files.concat, StreamConcat::Open(fs, files.path, input_fs, input));
    files.written.push_back(files.path);
  }
  REEL_ASSIGN_OR_RETURN(EpisodeSpan span, files.concat->Append(input_fs, input));
  if (span.frames != n) {
    return Status::Invalid(source + ": " + std::to_string(span.frames) + " frames, but the data has " +
                           std::to_string(n) + " rows (contract §8: row i = frame i)");
  }
  const std::string prefix = "videos/" + cam.key + "/";
  row[prefix + "chunk_index"] = files.counter / chunks;
  row[prefix + "file_index"] = files.counter % chunks;
  row[prefix + "from_timestamp"] = span.from_s;
  row[prefix + "to_timestamp"] = span.to_s;
  return Status::OK();
}

// meta/info.json of a LeRobot export.
OJson LeRobotInfoJson(const ExportSource& src, const ExportOptions& options, int64_t total_frames,
                      int64_t total_tasks) {
  const bool v3 = options.format == ExportFormat::kLeRobotV30;
  const double fps = src.task->info().fps;
  const int64_t chunks = options.chunks_size;
  const int64_t episodes = static_cast<int64_t>(src.episodes.size());
  OJson info;
  info["codebase_version"] = v3 ? "v3.0" : "v2.1";
  info["robot_type"] = options.robot_type;
  info["total_episodes"] = episodes;
  info["total_frames"] = total_frames;
  info["total_tasks"] = total_tasks;
  if (!v3) {
    info["total_videos"] = episodes * static_cast<int64_t>(src.plan.cameras.size());
    info["total_chunks"] = (episodes + chunks - 1) / chunks;
  }
  info["chunks_size"] = chunks;
  if (v3) {
    info["data_files_size_in_mb"] = options.data_files_size_in_mb;
    info["video_files_size_in_mb"] = options.video_files_size_in_mb;
  }
  info["fps"] = FpsJson(fps);
  info["splits"] = {{"train", "0:" + std::to_string(episodes)}};
  info["data_path"] = v3 ? "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
                         : "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet";
  info["video_path"] =
      src.plan.cameras.empty() ? OJson(nullptr)
      : v3 ? OJson("videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4")
           : OJson("videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4");
  OJson features;
  for (const auto& f : src.plan.features) features[f.key] = FeatureJson(f);
  for (size_t k = 0; k < src.plan.cameras.size(); ++k) {
    features[src.plan.cameras[k].key] = CameraJson(src.cameras[k], src.plan.cameras[k].depth, fps);
  }
  features["timestamp"] = ScalarFeature("float32");
  for (const char* name : {"frame_index", "episode_index", "index", "task_index"}) {
    features[name] = ScalarFeature("int64");
  }
  info["features"] = features;
  info["reel"] = ReelBlock(src);
  return info;
}

// v3.0: meta/tasks.parquet and the episodes file.
Status WriteV3EpisodeMeta(FileSystem* fs, const std::string& dir, const std::vector<std::string>& tasks,
                          const std::vector<OJson>& episode_rows) {
  REEL_RETURN_IF_ERROR(WriteTasksParquet(fs, JoinPath(dir, "meta/tasks.parquet"), tasks));
  REEL_ASSIGN_OR_RETURN(auto episodes_table, TableFromRows(episode_rows));
  return WriteParquet(fs, JoinPath(dir, "meta/episodes/chunk-000/file-000.parquet"), *episodes_table);
}

// v2.1: meta/tasks.jsonl, episodes.jsonl and episodes_stats.jsonl.
Status WriteV21EpisodeMeta(FileSystem* fs, const std::string& dir, const std::vector<std::string>& tasks,
                           const std::string& episodes_jsonl, const std::string& stats_jsonl) {
  std::string tasks_jsonl;
  for (size_t t = 0; t < tasks.size(); ++t)
    tasks_jsonl += OJson{{"task_index", static_cast<int64_t>(t)}, {"task", tasks[t]}}.dump() + "\n";
  REEL_RETURN_IF_ERROR(WriteFileSynced(fs, JoinPath(dir, "meta/tasks.jsonl"), tasks_jsonl));
  REEL_RETURN_IF_ERROR(WriteFileSynced(fs, JoinPath(dir, "meta/episodes.jsonl"), episodes_jsonl));
  return WriteFileSynced(fs, JoinPath(dir, "meta/episodes_stats.jsonl"), stats_jsonl);
}

}  // namespace

Status WriteLeRobot(const ExportSource& src, const std::string& dir, const ExportOptions& options,
                    ExportReport* report) {
  const bool v3 = options.format == ExportFormat::kLeRobotV30;
  const double fps = src.task->info().fps;
  if (std::floor(fps) != fps) {
    report->warnings.push_back("fps " + std::to_string(fps) +
                               " is not an integer; LeRobot expects an integer fps");
  }
  FileSystem* fs = src.out_fs;
  // Re-encoded streams, written and read back through the output's file system.
  REEL_ASSIGN_OR_RETURN(auto scratch, ScratchDir::Create("reel-export", "", fs));
  const int64_t chunks = options.chunks_size;

  std::vector<std::string> tasks;  // exported task strings, by first appearance
  std::map<std::string, int64_t> task_index;
  DataFiles data(fs, dir, options.data_files_size_in_mb * kMiB, chunks);
  std::vector<CameraFiles> cameras(src.plan.cameras.size());
  std::vector<OJson> episode_rows;
  std::vector<std::map<std::string, FeatureStats>> all_stats;
  std::string v21_episodes, v21_stats;
  int64_t total_frames = 0;

  for (size_t i = 0; i < src.episodes.size(); ++i) {
    ReportExported(options, src, i);
    const auto& entry = src.episodes[i];
    const int64_t ep = static_cast<int64_t>(i);
    const std::string task = TaskStringOf(src, i);
    auto [it, inserted] = task_index.emplace(task, static_cast<int64_t>(tasks.size()));
    if (inserted) tasks.push_back(task);

    REEL_ASSIGN_OR_RETURN(auto frames, ReadEpisodeFrames(src, i, &report->warnings));
    const int64_t n = frames.features->num_rows();
    REEL_ASSIGN_OR_RETURN(auto table, WithBookkeeping(*frames.features, fps, ep, total_frames, it->second));
    REEL_ASSIGN_OR_RETURN(auto stats, TableStats(*table, src.plan));
    REEL_RETURN_IF_ERROR(WriteSidecar(src, *frames.pooled,
                                      JoinPath(dir, "reel/sidecar/chunk-" + Pad(ep / chunks, 3) + "/episode_" +
                                                        Pad(ep, 6) + ".parquet")));

    OJson row;
    row["episode_index"] = ep;
    row["tasks"] = {task};
    row["length"] = n;
    if (v3) {
      REEL_ASSIGN_OR_RETURN(auto where, data.Write(*table));
      row["data/chunk_index"] = where.first;
      row["data/file_index"] = where.second;
      row["dataset_from_index"] = total_frames;
      row["dataset_to_index"] = total_frames + n;
    } else {
      REEL_RETURN_IF_ERROR(WriteParquet(fs, JoinPath(dir, "data/chunk-" + Pad(ep / chunks, 3) + "/episode_" +
                                                          Pad(ep, 6) + ".parquet"),
                                        *table));
    }

    for (size_t k = 0; k < src.plan.cameras.size(); ++k) {
      const auto& cam = src.plan.cameras[k];
      const std::string source = src.task->Path(*Lookup(entry.videos, cam.slot));
      REEL_ASSIGN_OR_RETURN(stats[cam.key], CameraStats(src.task_fs, source, n));
      if (!v3) {
        const std::string out = JoinPath(dir, "videos/chunk-" + Pad(ep / chunks, 3) + "/" + cam.key +
                                                  "/episode_" + Pad(ep, 6) + ".mp4");
        REEL_ASSIGN_OR_RETURN(bool reencoded,
                              CopyEpisodeVideo(src.task_fs, source, fs, out, fps, scratch->path(),
                                               {.retime = RetimedFrames(src.task->info(), cam.slot, n)}));
        ++(reencoded ? report->videos_reencoded : report->videos_copied);
        REEL_RETURN_IF_ERROR(fs->SyncFile(out));
        continue;
      }
      REEL_RETURN_IF_ERROR(AppendCameraV3(src, k, source, n, dir, options, scratch->path(), &cameras[k], &row, report));
    }

    if (v3) {
      for (const auto& [key, s] : stats) {
        OJson j = FeatureStatsJson(s, true);
        for (const auto& [stat, value] : j.items()) row["stats/" + key + "/" + stat] = value;
      }
      row["meta/episodes/chunk_index"] = 0;
      row["meta/episodes/file_index"] = 0;
      episode_rows.push_back(row);
    } else {
      OJson line{{"episode_index", ep}, {"tasks", {task}}, {"length", n}};
      v21_episodes += line.dump() + "\n";
      OJson stats_json = OJson::object();
      for (const auto& [key, s] : stats) stats_json[key] = FeatureStatsJson(s, false);
      v21_stats += OJson{{"episode_index", ep}, {"stats", stats_json}}.dump() + "\n";
    }
    all_stats.push_back(std::move(stats));
    total_frames += n;
  }
  REEL_RETURN_IF_ERROR(data.Close());
  for (auto& files : cameras) {
    if (files.concat) REEL_RETURN_IF_ERROR(files.concat->Finish());
    for (const auto& p : files.written) REEL_RETURN_IF_ERROR(fs->SyncFile(p));
  }

  // meta/stats.json: the episodes' stats aggregated.
  OJson global = OJson::object();
  for (const auto& [key, first] : all_stats.front()) {
    std::vector<const FeatureStats*> parts;
    for (const auto& s : all_stats) parts.push_back(&s.at(key));
    global[key] = FeatureStatsJson(Aggregate(parts), v3);
  }
  REEL_RETURN_IF_ERROR(WriteJsonFile(fs, JoinPath(dir, "meta/stats.json"), global));

  const int64_t episodes = static_cast<int64_t>(src.episodes.size());
  const OJson info = LeRobotInfoJson(src, options, total_frames, static_cast<int64_t>(tasks.size()));
  REEL_RETURN_IF_ERROR(WriteJsonFile(fs, JoinPath(dir, "meta/info.json"), info));

  REEL_RETURN_IF_ERROR(v3 ? WriteV3EpisodeMeta(fs, dir, tasks, episode_rows)
                          : WriteV21EpisodeMeta(fs, dir, tasks, v21_episodes, v21_stats));
  report->episodes = episodes;
  report->frames = total_frames;
  return Status::OK();
}

}  // namespace reel::internal
