// TaskWriter / EpisodeWriter: numbering, episode files, task-file merge, commit.
#include "reel/recorder.h"

#include <arrow/api.h>
#include <parquet/arrow/writer.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>
#include <optional>
#include <set>

#include "util/json_util.h"
#include "io/parquet_io.h"
#include "reel/file_group.h"
#include "reel/layout.h"
#include "reel/merge.h"
#include "reel/task.h"
#include "layout/journal.h"
#include "write/episode_data.h"
#include "write/task_files.h"
#include "layout/confined.h"
#include "write/transaction.h"
#include "write/episode_videos.h"

namespace reel {

using internal::Json;

// ---- FrameRow ---------------------------------------------------------------------

void FrameRow::SetFixed(const std::string& column, std::vector<float> values) {
  fixed_[column] = std::move(values);
}
void FrameRow::SetScalar(const std::string& column, int64_t value) { scalars_[column] = value; }
void FrameRow::SetStatus(const std::string& column, std::string value) {
  statuses_[column] = std::move(value);
}
void FrameRow::AddImuSample(int64_t ts_ns, const std::array<float, 6>& sample) {
  imu_.ts_ns.push_back(ts_ns);
  imu_.samples.push_back(sample);
}
void FrameRow::AddSlamPoint(const std::string& column, const std::array<double, 8>& point,
                            int64_t ns) {
  Slam& s = slam_[column];
  s.points.insert(s.points.end(), point.begin(), point.end());
  s.ns.push_back(ns);
}
void FrameRow::SetForceMatrix(const std::string& column, std::vector<float> frame, int64_t ns) {
  force_[column] = std::move(frame);
  scalars_[column + "_ns"] = ns;
}

namespace {

using internal::kInfoPath;
using internal::LoadInfo;
using internal::NowUnixSeconds;
using internal::WriteEpisodeRow;


// ---- declarations of an episode (multi-device §6) -----------------------------------

FeatureSpec FeatureFor(const std::string& column, ColumnFamily family, int32_t width,
                       const internal::EpisodeData& data, const TaskWriterOptions& options,
                       const std::map<std::string, ForceMatrixSpec>& fm_specs) {
  FeatureSpec f = internal::FamilyFeature(family, width);
  if (family == ColumnFamily::kSlamPoints) {
    for (const SlamTrajectoryOptions& s : options.slam_trajectories) {
      if (s.column != column) continue;
      if (!s.frame.empty()) f.frame = s.frame;
      f.frame_axes_json = s.frame_axes_json;
      f.time_json = s.time_json;
      f.owner_json = s.owner_json;
      if (!s.source_slot.empty()) f.source_slot = s.source_slot;
    }
  } else if (family == ColumnFamily::kForceMatrix) {
    auto it = fm_specs.find(column);
    const ForceMatrixSpec spec = it != fm_specs.end() ? it->second : *ForceMatrixSpecForTier("int16x100");
    f.dtype = spec.dtype;
    f.shape = {250, 250, 3};
    f.encoding = spec.encoding == ForceMatrixEncoding::kRowDiffQuantized ? "row_diff_quantized" : "row_flat_raw";
    f.scale = spec.scale;
  }
  return f;
}

bool IsFeatureColumn(const std::string& name, ColumnFamily family) {
  return (name == "action" || name.starts_with("observation.")) && family != ColumnFamily::kUnknown;
}

// devices[] and device_names of the declaration, with each device's column binding
// (multi-device §6.4); a column bound to two devices is refused (§5.2: "同一个
// observation.<x> 不允许两个写入方").
Status DeclareDevices(const std::vector<DeviceOptions>& devices, InfoJson* decl) {
  for (const DeviceOptions& d : devices) {
    DeviceEntry e;
    e.key = d.key;
    e.kind = d.kind;
    e.name = d.name;
    e.slots = d.slots;
    if (!d.sensor_column.empty()) e.sensor_column = d.sensor_column;
    e.sensor_columns = d.sensor_columns;
    if (d.rig != 0) e.rig = d.rig;
    for (const std::string& slot : d.slots) decl->device_names.emplace_back(slot, d.name);
    decl->devices.push_back(std::move(e));
  }
  for (const auto& [column, keys] : ColumnWriters(decl->devices))
    if (keys.size() > 1)
      return Status::Invalid("devices: column \"" + column + "\" is bound to both \"" + keys[0] + "\" and \"" +
                             keys[1] + "\"; one column has one writer (multi-device §5.2)");
  return Status::OK();
}

// calibration keys (reference-behaviour.md "info.json"): the first device with a
// stereo calibration is head_stereo; later ones <first slot without _N>_calibration.
Result<std::string> PlanCalibration(const std::vector<DeviceOptions>& devices) {
  Json plan = Json::object();
  bool first = true;
  for (const DeviceOptions& d : devices) {
    if (d.calibration_json.empty()) continue;
    REEL_ASSIGN_OR_RETURN(Json calib, internal::ParseJson(d.calibration_json,
                                                          "calibration of device " + d.key));
    std::string key = "head_stereo";
    if (!first) {
      std::string slot = d.slots.empty() ? d.kind : d.slots.front();
      const size_t us = slot.find_last_of('_');
      if (us != std::string::npos && us + 1 < slot.size() &&
          slot.find_first_not_of("0123456789", us + 1) == std::string::npos)
        slot = slot.substr(0, us);
      key = slot + "_calibration";
    }
    plan[key] = std::move(calib);
    first = false;
  }
  return internal::Dump(plan, -1);
}

}  // namespace

// ---- TaskWriter ------------------------------------------------------------------------

Result<std::unique_ptr<TaskWriter>> TaskWriter::Open(const std::string& root,
                                                     TaskWriterOptions options) {
  FileSystem* fs = options.fs ? options.fs : DefaultFileSystem();
  if (options.task_name.empty()) options.task_name = BaseName(root);
  if (!(options.fps > 0)) return Status::Invalid("fps must be positive");
  if (options.row_group_rows < 1) return Status::Invalid("row_group_rows must be >= 1");
  if (options.row_group_bytes < 1) return Status::Invalid("row_group_bytes must be >= 1");
  for (const auto& [column, tier] : options.force_matrix_tiers) {
    if (ClassifyColumn(column, {}) != ColumnFamily::kForceMatrix)
      return Status::Invalid("force_matrix_tiers: \"" + column + "\" is not a *_force_matrix column");
    REEL_RETURN_IF_ERROR(ForceMatrixSpecForTier(tier).status());
  }
  REEL_RETURN_IF_ERROR(internal::ValidateVideoOptions(options));
  {  // a column bound to two devices is refused now, not when the first episode commits
    InfoJson devices;
    REEL_RETURN_IF_ERROR(DeclareDevices(options.devices, &devices));
  }
  REEL_ASSIGN_OR_RETURN(FileInfo st, fs->Stat(JoinPath(root, kInfoPath)));
  if (st.type != FileType::kNotFound) {
    REEL_ASSIGN_OR_RETURN(DetectedFormat format, DetectFormat(fs, root));
    if (format.format != DatasetFormat::kPooledEpisodesV1)
      return Status::NotSupported(root + ": is a " + std::string(DatasetFormatName(format.format)) +
                                  " dataset; the recorder writes pooled_episodes_v1 tasks");
  }
  {
    REEL_ASSIGN_OR_RETURN(internal::TaskLock lock, internal::TaskLock::Acquire(fs, root));
    REEL_RETURN_IF_ERROR(lock.RemoveStaleTemps());
  }
  std::unique_ptr<TaskWriter> writer(new TaskWriter());
  writer->root_ = root;
  writer->options_ = std::move(options);
  writer->fs_ = fs;
  return writer;
}

TaskWriter::~TaskWriter() = default;

struct EpisodeWriter::Impl {
  TaskWriter* task = nullptr;
  FileSystem* fs = nullptr;
  int64_t n = 0;
  std::unique_ptr<internal::EpisodeTransaction> txn;  // holds N; publishes the files
  std::string data_rel, row_rel;
  double created_at = 0;
  std::map<std::string, ForceMatrixSpec> fm_specs_of_task;  // TaskWriterOptions::force_matrix_tiers
  std::unique_ptr<internal::EpisodeData> data;
  std::unique_ptr<internal::EpisodeVideos> videos;
  std::map<std::string, int64_t> drops;  // CountDrop
  bool rerecord = false;  // BeginEpisode(n, replace): N recorded again
  bool done = false;

  // A re-recording: every file N has now that the new recording does not publish over
  // (a slot it lacks, the other depth extension) goes in the same commit.
  Status RemoveReplacedFiles();

  Result<InfoJson> Declaration(internal::Json* fm_specs, internal::Json* slam_specs) const;
  static Result<internal::Json> SlamSpec(const std::string& column, const FeatureSpec& f, InfoJson* decl);
};

Result<std::unique_ptr<EpisodeWriter>> TaskWriter::BeginEpisode() { return Begin(std::nullopt, false); }

Result<std::unique_ptr<EpisodeWriter>> TaskWriter::BeginEpisode(int64_t n, bool replace) { return Begin(n, replace); }

Result<std::unique_ptr<EpisodeWriter>> TaskWriter::Begin(std::optional<int64_t> n, bool replace) {
  auto impl = std::make_unique<EpisodeWriter::Impl>();
  impl->task = this;
  impl->fs = fs_;
  impl->created_at = NowUnixSeconds();
  impl->rerecord = n.has_value();
  REEL_ASSIGN_OR_RETURN(InfoJson info, LoadInfo(fs_, root_));
  if (n) {
    REEL_ASSIGN_OR_RETURN(impl->txn, internal::EpisodeTransaction::ReserveNumber(fs_, root_, *n, replace));
  } else {
    REEL_ASSIGN_OR_RETURN(impl->txn,
                          internal::EpisodeTransaction::Reserve(fs_, root_, options_.progress_watermark));
  }
  impl->n = impl->txn->episode_index();
  auto tpl_data = PathTemplate::Parse(info.data_path);
  auto tpl_rows = PathTemplate::Parse(info.episodes_path);
  if (!tpl_data.ok()) return tpl_data.status();
  if (!tpl_rows.ok()) return tpl_rows.status();
  const EpisodeLocation loc = LocateEpisode(impl->n, info.chunks_size);
  PathVars vars{loc.chunk, loc.file, impl->n, std::nullopt, std::nullopt};
  REEL_ASSIGN_OR_RETURN(impl->data_rel, tpl_data->Render(vars));
  REEL_ASSIGN_OR_RETURN(impl->row_rel, tpl_rows->Render(vars));
  // Its data segments are written beside the data file from the first frame: no folder on
  // the way may be a link out of the task (layout/confined.h; videos: EpisodeVideos::Open).
  for (const std::string& rel : {impl->data_rel, impl->row_rel})
    REEL_RETURN_IF_ERROR(internal::CheckBeneath(fs_, root_, rel, root_ + ": recording episode " +
                                                                     std::to_string(impl->n) + " to " + rel));
  for (const auto& [column, tier] : options_.force_matrix_tiers)
    impl->fm_specs_of_task[column] = *ForceMatrixSpecForTier(tier);
  internal::EpisodeData::Options data_options;
  data_options.fs = fs_;
  data_options.final_path = JoinPath(root_, impl->data_rel);
  data_options.episode_index = impl->n;
  data_options.row_group_rows = options_.row_group_rows;
  data_options.row_group_bytes = options_.row_group_bytes;
  data_options.force_matrix_specs = impl->fm_specs_of_task;
  impl->data = std::make_unique<internal::EpisodeData>(std::move(data_options));
  std::unique_ptr<EpisodeWriter> episode(new EpisodeWriter(std::move(impl)));
  auto videos = internal::EpisodeVideos::Open(fs_, root_, options_, info, episode->impl_->n);
  if (!videos.ok()) {
    (void)episode->Abort();  // N is recycled, nothing of it stays
    return videos.status();
  }
  episode->impl_->videos = std::move(*videos);
  return episode;
}

// ---- EpisodeWriter -----------------------------------------------------------------------

EpisodeWriter::EpisodeWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

EpisodeWriter::~EpisodeWriter() {
  if (impl_ && !impl_->done) (void)Abort();
}

int64_t EpisodeWriter::episode_index() const { return impl_->n; }
int64_t EpisodeWriter::rows() const { return impl_->data->rows(); }

Result<VideoStream*> EpisodeWriter::Video(const std::string& slot) {
  if (impl_->done) return Status::Invalid("episode " + std::to_string(impl_->n) + " is already closed");
  return impl_->videos->Stream(slot);
}

void EpisodeWriter::CountDrop(const std::string& key, int64_t n) { impl_->drops[key] += n; }

Status EpisodeWriter::AppendFrame(const FrameRow& row) {
  if (impl_->done) return Status::Invalid("episode " + std::to_string(impl_->n) + " is already closed");
  REEL_RETURN_IF_ERROR(impl_->data->Append(row));
  if (Status st = impl_->videos->Tick(impl_->data->rows() - 1); !st.ok()) {
    (void)Abort();
    return st.WithContext("episode " + std::to_string(impl_->n) + " aborted");
  }
  return Status::OK();
}

Status EpisodeWriter::Abort() {
  if (impl_->done) return Status::OK();
  impl_->done = true;
  Status st = impl_->txn->Abort();  // the recycled marker first, then the tracked temps
  impl_->data->Discard();
  if (impl_->videos) impl_->videos->Discard();
  return st;
}

// What this episode declares (multi-device §6), and the force-matrix and SLAM specs its
// episodes row carries.
Result<InfoJson> EpisodeWriter::Impl::Declaration(Json* fm_specs, Json* slam_specs) const {
  const TaskWriterOptions& options = task->options_;
  InfoJson decl;
  decl.format = "pooled_episodes_v1";
  decl.codebase_version = "v3.0";
  decl.app_version = options.app_version;
  decl.fps = options.fps;
  videos->Declare(decl);
  decl.task_name = options.task_name;
  decl.sensor_dim = 256;
  for (const auto& [column, family] : data->Columns()) {
    if (!IsFeatureColumn(column, family)) continue;
    FeatureSpec f = FeatureFor(column, family, data->WidthOf(column), *data, options, fm_specs_of_task);
    if (family == ColumnFamily::kGlove) decl.sensors.push_back(column.substr(12));
    if (family == ColumnFamily::kForceMatrix)
      (*fm_specs)[column] = {{"dtype", f.dtype}, {"shape", f.shape}, {"encoding", *f.encoding},
                             {"scale", internal::ScaleJson(*f.scale)}};
    if (family == ColumnFamily::kSlamPoints) {
      REEL_ASSIGN_OR_RETURN(Json spec, SlamSpec(column, f, &decl));
      if (!spec.empty()) (*slam_specs)[column] = std::move(spec);
    }
    decl.features.emplace_back(column, std::move(f));
  }
  REEL_RETURN_IF_ERROR(DeclareDevices(options.devices, &decl));
  REEL_ASSIGN_OR_RETURN(decl.calibration_json, PlanCalibration(options.devices));
  return decl;
}

// The episodes-row spec of one SLAM trajectory column; records its frame in `decl`.
Result<Json> EpisodeWriter::Impl::SlamSpec(const std::string& column, const FeatureSpec& f, InfoJson* decl) {
  Json spec = Json::object();
  if (f.frame) {
    spec["frame"] = *f.frame;
    decl->slam_frames.emplace_back(column, *f.frame);
    const bool gripper = column == "observation.slam_trajectory" ||
                         (column.starts_with("observation.gripper_") && column.ends_with("_slam_trajectory"));
    if (gripper && (!decl->gripper_slam_frame || column == "observation.slam_trajectory"))
      decl->gripper_slam_frame = *f.frame;
  }
  for (const auto& [key, text] : {std::pair<const char*, const std::string&>{"frame_axes", f.frame_axes_json},
                                  {"time", f.time_json},
                                  {"owner", f.owner_json}}) {
    if (text.empty()) continue;
    REEL_ASSIGN_OR_RETURN(spec[key], internal::ParseJson(text, column + " " + key));
  }
  return spec;
}

Status EpisodeWriter::Impl::RemoveReplacedFiles() {
  REEL_ASSIGN_OR_RETURN(auto t, Task::Open(task->root_, {fs, 0}));
  auto old = t->FindEpisode(n);
  if (!old.ok()) return old.status().code() == StatusCode::kNotFound ? Status::OK() : old.status();
  std::set<std::string> published = {data_rel, row_rel};
  for (const auto& f : videos->files()) published.insert(f.final_rel);
  std::vector<std::string> files;
  if (!old->data_path.empty()) files.push_back(old->data_path);
  for (const auto& [slot, path] : old->videos) files.push_back(path);
  for (const std::string& rel : files)
    if (!published.count(rel)) txn->Remove(rel);
  return Status::OK();
}

Result<CommittedEpisode> EpisodeWriter::Commit() {
  if (impl_->done) return Status::Invalid("episode " + std::to_string(impl_->n) + " is already closed");
  Impl& m = *impl_;
  const TaskWriterOptions& options = m.task->options_;
  auto fail = [&](const Status& st) -> Status {
    (void)Abort();
    return st;
  };
  const int64_t length = m.data->rows();
  // Encoders flush before the commit takes the task lock: this is the slow part.
  if (length == 0) {
    m.videos->Discard();  // an empty episode has no data file, so no videos either
  } else if (Status st = m.videos->Finish(length); !st.ok()) {
    return fail(st);
  }
  auto data_tmp = m.data->Finish();
  if (!data_tmp.ok()) return fail(data_tmp.status());
  for (const auto& f : m.videos->files()) m.txn->Track(f.temp, f.final_rel);
  if (!data_tmp->empty()) m.txn->Track(*data_tmp, m.data_rel);

  Json fm_specs = Json::object(), slam_specs = Json::object();
  auto decl = m.Declaration(&fm_specs, &slam_specs);
  if (!decl.ok()) return fail(decl.status());
  EpisodeRow row;
  row.episode_index = m.n;
  row.length = length;
  row.end_frame_index = length - 1;
  row.created_at = m.created_at;
  row.duration_sec = static_cast<double>(length) / options.fps;
  row.calibration = decl->calibration_json;
  row.force_matrix_specs = internal::Dump(fm_specs, -1);
  row.slam_specs = internal::Dump(slam_specs, -1);
  row.video_codec = m.videos->VideoCodecJson();
  Json drop_stats = {{"imu_overflow", 0}};
  for (const auto& [key, count] : m.drops) drop_stats[key] = count;
  m.videos->AddDropStats(drop_stats);
  row.drop_stats = internal::Dump(drop_stats, -1);
  auto row_tmp = m.txn->NewTemp(m.row_rel, "commit");
  if (!row_tmp.ok()) return fail(row_tmp.status());
  if (Status st = WriteEpisodeRow(m.fs, *row_tmp, row); !st.ok()) return fail(st);

  if (m.rerecord)
    if (Status st = m.RemoveReplacedFiles(); !st.ok()) return fail(st);

  internal::TaskFilesUpdate update;
  update.declaration = std::move(*decl);
  // A re-recorded number stays counted once in stats.json, by its first recording
  // (TaskWriter::BeginEpisode(n, replace)).
  if (!m.rerecord) update.stats = m.data->Stats();
  // One line, written the way the reference's json.dumps writes it (contract §5).
  update.tasks_jsonl = "{\"task_index\": 0, \"task\": " + internal::Dump(Json(options.task_name), -1) + "}\n";
  Status st = m.txn->Commit(update);
  if (!m.txn->decided()) return fail(st);  // nothing visible: temps went, N is recycled
  // Decided: N appears (now or when the next writer rolls the journal forward) and is
  // not recycled; an error only says that durability was not confirmed.
  m.done = true;
  if (!st.ok()) return st;
  return CommittedEpisode{m.n, length, m.data_rel};
}

// ---- delete ---------------------------------------------------------------------------------

namespace {

// The auxiliary streams beside episode e's videos (contract 000 §8, AuxStreamMainStem): they
// go with the episode, or they would outlive the video they belong to.
Result<std::vector<std::string>> AuxStreamsOf(const Task& task, const EpisodeEntry& e) {
  std::vector<std::string> out;
  std::set<std::string> dirs;
  for (const auto& [slot, rel] : e.videos) dirs.insert(DirName(rel));
  for (const std::string& dir : dirs) {
    REEL_ASSIGN_OR_RETURN(auto entries, task.fs()->ListDir(task.Path(dir)));
    for (const DirEntry& d : entries) {
      std::optional<std::string> stem = AuxStreamMainStem(d.name);
      if (!stem || d.type != FileType::kFile) continue;
      for (const auto& [slot, rel] : e.videos)
        if (DirName(rel) == dir && BaseName(rel).starts_with(*stem + ".")) {
          out.push_back(JoinPath(dir, d.name));
          break;
        }
    }
  }
  return out;
}

}  // namespace

Status DeleteEpisode(const std::string& root, int64_t episode_index, FileSystem* fs) {
  if (!fs) fs = DefaultFileSystem();
  // The lock rolls forward an interrupted delete (or commit) before N is looked at.
  REEL_ASSIGN_OR_RETURN(internal::TaskLock lock, internal::TaskLock::Acquire(fs, root));
  REEL_ASSIGN_OR_RETURN(auto task, Task::Open(root, {fs, 0}));
  REEL_ASSIGN_OR_RETURN(EpisodeEntry e, task->FindEpisode(episode_index));
  // Data and videos go; the episodes row, stats.json and total_episodes stay (contract §9).
  const FileGroup group = EpisodeFileGroup(*task, e);
  if (group.present.empty()) return Status::OK();  // deleted before: nothing left to remove
  // One journaled commit: meta/.commit-N.json hides N from readers until every file is
  // gone, and the next writer's lock finishes a delete a crash interrupted, so N is
  // whole or gone, never partial.
  REEL_ASSIGN_OR_RETURN(std::vector<std::string> aux, AuxStreamsOf(*task, e));
  REEL_ASSIGN_OR_RETURN(auto txn, internal::EpisodeTransaction::Begin(&lock, episode_index));
  for (const std::string& rel : group.present) txn->Remove(rel);
  for (const std::string& rel : aux) txn->Remove(rel);
  Status st = txn->CommitFiles();
  if (!st.ok())
    return st.WithContext(root + ": deleting episode " + std::to_string(episode_index) +
                          (txn->decided() ? " (decided: the next writer finishes it)" : " (nothing removed)"));
  return Status::OK();
}

}  // namespace reel
