// reel migrate: a v1.0 task (one folder per session) into pooled_episodes_v1
// (reel/maintenance.h, docs/maintenance.md "migrate"; the old layout in
// shared/docs/v1.0-layout.md).
//
// Three steps, each safe to kill:
//   1. stage   every pooled file is built in <dest>/.reel-migrate/task/ (a pooled task of
//              its own, written with the episode transaction; readers ignore dotfolders),
//              then .reel-migrate/ready.json lists it and records what it was built from
//              (SourcesOf). A staging without ready.json, with a listed file missing, or
//              built from sources that have changed since, is rebuilt from the sources.
//   2. publish ONE task-change commit of the destination: the staged files renamed into
//              place (meta/info.json last: until then the task reads as v1.0, from then on
//              as pooled, with every episode complete), then the session files moved into
//              the backup (or, with --no-backup, the videos moved into the pooled task and
//              the rest removed). A kill after the journal is written is rolled forward
//              by the next TaskLock::Acquire (the re-run's).
//   3. clean   the emptied session folders and the staging folder are removed; a re-run
//              on the pooled task does only this.
#include <arrow/api.h>

#include <algorithm>
#include <ctime>
#include <map>
#include <set>

#include "io/copy_file.h"
#include "io/parquet_io.h"
#include "maint/migrate_internal.h"
#include "maint/migrate_table.h"
#include "util/json_util.h"
#include "util/time_util.h"
#include "reel/layout.h"
#include "reel/maintenance.h"
#include "write/episode_stats.h"
#include "write/task_files.h"
#include "write/transaction.h"

namespace reel {
namespace {

using internal::Json;
using internal::MigratePlan;
using internal::Session;

constexpr const char* kStagingDir = internal::kMigrateStagingDir;
constexpr const char* kStagedTask = ".reel-migrate/task";
constexpr const char* kReadyPath = ".reel-migrate/ready.json";
constexpr const char* kManifestPath = internal::kMigrateManifestPath;

std::string BackupName() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d_%H%M%S", &tm);
  return std::string("_migrate_backup_") + buf;
}

// The pooled path of episode n's file by info.json's default templates (a fresh task).
Result<std::string> PooledRel(const std::string& tpl, int64_t n, std::optional<std::string> key,
                              std::optional<std::string> ext) {
  REEL_ASSIGN_OR_RETURN(auto parsed, PathTemplate::Parse(tpl));
  const EpisodeLocation loc = LocateEpisode(n, InfoJson{}.chunks_size);
  return parsed.Render(PathVars{loc.chunk, loc.file, n, std::move(key), std::move(ext)});
}

Result<std::string> VideoRel(int64_t n, const internal::SessionVideo& v) {
  return PooledRel(InfoJson{}.video_path, n, v.slot, v.ext);
}

FeatureSpec Float32(std::vector<int64_t> shape) {
  FeatureSpec f;
  f.dtype = "float32";
  f.shape = std::move(shape);
  return f;
}

// The task-level declaration one session adds (MergeInfo unions them in N order;
// created_at and calibration are set over all sessions by FinishStagedInfo).
Result<InfoJson> Declaration(const MigratePlan& plan, const Session& s, const Json& meta, const arrow::Table& table,
                             const std::vector<std::string>& sensors, bool has_imu,
                             std::vector<std::string>* warnings) {
  InfoJson d;
  d.format = "pooled_episodes_v1";
  d.codebase_version = "v3.0";
  d.task_name = plan.task_name;
  d.fps = s.fps;
  d.sensor_dim = meta.value("sensor_dim", int64_t{256});
  const std::string app = meta.value("codebase_version", std::string());
  if (!app.empty()) d.app_version = app + "-migrated";
  for (const std::string& sn : sensors) {
    d.features.emplace_back("observation." + sn, Float32({16, 16}));
    d.sensors.push_back(sn);
  }
  if (has_imu) d.features.emplace_back("observation.imu", Float32({6}));
  for (const char* pose : {"observation.left_hand_pose", "observation.right_hand_pose"})
    if (table.GetColumnByName(pose)) d.features.emplace_back(pose, Float32({63}));
  d.features.emplace_back("action", Float32({1}));
  const Json cameras = meta.value("cameras", Json::object());
  for (const internal::SessionVideo& v : s.videos) {
    d.video_extensions.emplace_back(v.slot, v.ext);
    auto c = cameras.find(v.slot);
    if (v.ext != "mp4" || c == cameras.end() || !c->is_object()) continue;
    CameraSpec spec{c->value("height", int64_t{0}), c->value("width", int64_t{0}), std::nullopt};
    const double fps = c->value("fps", s.fps);
    if (fps != s.fps) spec.fps = fps;
    d.cameras.emplace_back(v.slot, spec);
  }
  d.video = !s.videos.empty();
  for (const Json& dev : meta.value("devices", Json::array())) {
    if (!dev.is_object()) continue;
    DeviceEntry e;
    e.key = dev.value("key", std::string());
    e.kind = dev.value("kind", std::string());
    e.name = dev.value("name", std::string());
    // v1.0 devices kept the glove's sensor_column, which the pooled compact entry keeps too
    // (multi-device §6.4's additive binding), as the sensor's name.
    if (auto sc = dev.find("sensor_column"); sc != dev.end() && sc->is_string() && !sc->get<std::string>().empty()) {
      const std::string column = sc->get<std::string>();
      e.sensor_column = column.starts_with("observation.") ? column.substr(12) : column;
    }
    for (const Json& slot : dev.value("slots", Json::array()))
      if (slot.is_string()) e.slots.push_back(slot.get<std::string>());
    if (e.key.empty()) continue;
    // Contract §6.4: a device has a kind and a name, and device_names names each of its slots.
    if (e.kind.empty() && e.key.find(':') != std::string::npos) {  // keys are "<kind>:<id>" (multi-device §1)
      e.kind = e.key.substr(0, e.key.find(':'));
      warnings->push_back(s.name + "/metadata.json: device \"" + e.key + "\" has no kind; \"" + e.kind +
                          "\" from its key");
    }
    if (e.name.empty()) {
      e.name = e.key;
      warnings->push_back(s.name + "/metadata.json: device \"" + e.key + "\" has no name; named by its key");
    }
    for (const std::string& slot : e.slots) d.device_names.emplace_back(slot, e.name);
    d.devices.push_back(std::move(e));
  }
  return d;
}

// The episodes row (contract §6): the session's metadata, verbatim, in its columns.
EpisodeRow RowOf(const Session& s, const internal::SessionMeta& m, const arrow::Table& table,
                 const std::vector<internal::LegacyFrame>& frames) {
  EpisodeRow row;
  row.episode_index = s.n;
  row.length = table.num_rows();
  row.start_frame_index = frames.empty() ? 0 : frames.front().frame_index;
  row.end_frame_index = frames.empty() ? -1 : frames.back().frame_index;
  row.created_at = s.created_at;
  double lo = 0.0, hi = 0.0;
  for (size_t i = 0; i < frames.size(); ++i) {
    lo = i == 0 ? frames[i].timestamp : std::min(lo, frames[i].timestamp);
    hi = i == 0 ? frames[i].timestamp : std::max(hi, frames[i].timestamp);
  }
  row.duration_sec = frames.empty() ? 0.0 : hi - lo + 1.0 / s.fps;
  auto verbatim = [&](const char* key) {
    auto it = m.meta.find(key);
    return it != m.meta.end() && it->is_object() ? internal::Dump(*it, -1) : std::string("{}");
  };
  row.drop_stats = verbatim("drop_stats");
  row.video_codec = verbatim("video_codec");
  row.calibration = internal::Dump(m.calibration, -1);
  return row;
}

// Session s as episode s.n of the staged task, in one transaction under `lock`. Its
// metadata is read again here (the plan keeps only the small fields) and released on return.
Status StageSession(internal::TaskLock* lock, FileSystem* fs, const MigratePlan& plan, const Session& s,
                    int64_t* frames_out, std::vector<std::string>* warnings) {
  const std::string dir = JoinPath(plan.source, s.name);
  REEL_ASSIGN_OR_RETURN(internal::SessionMeta meta, internal::ReadSessionMeta(fs, plan.source, s));
  REEL_ASSIGN_OR_RETURN(auto frames, internal::ReadLegacyFrames(fs, dir));
  REEL_ASSIGN_OR_RETURN(auto sources, internal::ReadLegacySensors(fs, dir, s));
  warnings->insert(warnings->end(), sources.warnings.begin(), sources.warnings.end());
  REEL_ASSIGN_OR_RETURN(auto table, internal::PooledTableFromLegacy(s.n, frames.frames, sources.tables));
  REEL_ASSIGN_OR_RETURN(auto txn, internal::EpisodeTransaction::Begin(lock, s.n));
  REEL_ASSIGN_OR_RETURN(std::string data_rel, PooledRel(InfoJson{}.data_path, s.n, std::nullopt, std::nullopt));
  REEL_ASSIGN_OR_RETURN(std::string row_rel, PooledRel(InfoJson{}.episodes_path, s.n, std::nullopt, std::nullopt));
  REEL_ASSIGN_OR_RETURN(std::string data_temp, txn->NewTemp(data_rel, "migrate"));
  REEL_RETURN_IF_ERROR(internal::WriteParquet(fs, data_temp, *table));
  REEL_ASSIGN_OR_RETURN(std::string row_temp, txn->NewTemp(row_rel, "migrate"));
  REEL_RETURN_IF_ERROR(internal::WriteEpisodeRow(fs, row_temp, RowOf(s, meta, *table, frames.frames)));
  for (const internal::SessionVideo& v : s.videos) {
    if (!plan.copy_videos && v.sequence.empty()) continue;  // moved by the commit (Publish)
    REEL_ASSIGN_OR_RETURN(std::string rel, VideoRel(s.n, v));
    REEL_ASSIGN_OR_RETURN(std::string temp, txn->NewTemp(rel, "migrate"));
    if (!v.sequence.empty())
      REEL_RETURN_IF_ERROR(internal::EncodeDepthSequence(fs, dir, v, table->num_rows(), temp));
    else
      REEL_RETURN_IF_ERROR(internal::CopyFileAcross(fs, JoinPath(dir, v.rel), fs, temp).status());
  }
  internal::TaskFilesUpdate update;
  REEL_ASSIGN_OR_RETURN(update.stats, internal::EpisodeStatsFromTable(*table, sources.sensors));
  REEL_ASSIGN_OR_RETURN(update.declaration, Declaration(plan, s, meta.meta, *table, sources.sensors, sources.has_imu,
                                                          warnings));
  update.tasks_jsonl = "{\"task_index\": 0, \"task\": " + internal::Dump(Json(plan.task_name), -1) + "}\n";
  Status st = txn->Commit(update);
  if (!txn->decided()) return st.WithContext(dir);
  *frames_out = table->num_rows();
  return Status::OK();
}

// The staged info.json over all sessions: created_at the earliest session's, calibration
// the union with the latest value per key (contract-decisions.md "v1.0 migration: task
// files"), video when any session had one. Each session's calibration files are read again,
// one session at a time.
Status FinishStagedInfo(FileSystem* fs, const MigratePlan& plan, const std::string& staged) {
  REEL_ASSIGN_OR_RETURN(InfoJson info, internal::LoadInfo(fs, staged));
  Json calibration = Json::object();
  std::optional<double> earliest;
  for (const Session& s : plan.sessions) {
    REEL_ASSIGN_OR_RETURN(Json own, internal::ReadSessionCalibration(fs, plan.source, s));
    for (auto it = own.begin(); it != own.end(); ++it) calibration[it.key()] = std::move(it.value());
    if (s.created_at > 0 && (!earliest || s.created_at < *earliest)) earliest = s.created_at;
    info.video = info.video || !s.videos.empty();
  }
  if (earliest) info.created_at = earliest;
  info.calibration_json = internal::Dump(calibration, -1);
  REEL_ASSIGN_OR_RETURN(std::string text, SerializeInfoJson(info));  // held to the readers' bound
  return WriteFileAtomic(fs, JoinPath(staged, internal::kInfoPath), text);
}

Json ManifestOf(const MigratePlan& plan) {
  Json sessions = Json::array();
  for (const Session& s : plan.sessions)
    sessions.push_back({{"session", s.name}, {"episode_index", s.n}, {"source_episode_index", s.source_index}});
  return {{"migrated_by", "reel migrate"},
          {"source", plan.source},
          {"in_place", plan.in_place},
          {"backup", plan.backup},
          {"sessions", sessions},
          {"files", plan.created},
          {"keypoints", internal::KeypointsJson(plan)}};
}

// What the staging of `plan` is built from, recorded in ready.json: whether videos are
// copied and, per session, every file's relative path, size and mtime_ns (FileInfo: 0 where
// the store keeps none), taken before the files are read. A staging whose record differs
// from the sources now is stale and rebuilt (issue 27 finding 7: a killed run's staging was
// published over the v1.0 files the user edited after it).
Result<Json> SourcesOf(FileSystem* fs, const MigratePlan& plan) {
  Json sessions = Json::array();
  for (const Session& s : plan.sessions) {
    Json files = Json::array();
    for (const std::string& f : s.files) {
      REEL_ASSIGN_OR_RETURN(FileInfo st, fs->Stat(JoinPath(JoinPath(plan.source, s.name), f)));
      files.push_back(Json::array({f, st.size, st.mtime_ns}));
    }
    sessions.push_back({{"session", s.name}, {"files", std::move(files)}});
  }
  return Json{{"copy_videos", plan.copy_videos}, {"sessions", std::move(sessions)}};
}

// Step 1: the staged pooled task and ready.json; returns the staged files (relative).
Result<std::vector<std::string>> Stage(FileSystem* fs, MigratePlan* plan, const MigrateOptions& options,
                                       MigrateReport* report) {
  const std::string staged = JoinPath(plan->dest, kStagedTask);
  REEL_RETURN_IF_ERROR(RemoveAll(fs, JoinPath(plan->dest, kStagingDir)));
  REEL_RETURN_IF_ERROR(fs->CreateDirs(staged));
  REEL_ASSIGN_OR_RETURN(Json sources, SourcesOf(fs, *plan));
  {
    REEL_ASSIGN_OR_RETURN(internal::TaskLock lock, internal::TaskLock::Acquire(fs, staged));
    for (size_t i = 0; i < plan->sessions.size(); ++i) {
      REEL_RETURN_IF_ERROR(StageSession(&lock, fs, *plan, plan->sessions[i], &plan->sessions[i].frames,
                                        &report->warnings));
      if (options.progress)
        options.progress({"sessions staged", static_cast<int64_t>(i + 1), static_cast<int64_t>(plan->sessions.size()),
                          plan->sessions[i].name});
    }
  }
  REEL_RETURN_IF_ERROR(FinishStagedInfo(fs, *plan, staged));
  std::vector<std::string> files;
  REEL_RETURN_IF_ERROR(internal::ListTree(fs, staged, "", &files));
  std::vector<std::string> published = {kManifestPath};
  for (const std::string& f : files)
    if (f[0] != '.' && f.find("/.") == std::string::npos) published.push_back(f);
  // What --restore removes: the published files and, with --no-backup, the moved videos.
  plan->created = published;
  for (const Session& s : plan->sessions)
    for (const internal::SessionVideo& v : s.videos)
      if (!plan->copy_videos && v.sequence.empty()) {
        REEL_ASSIGN_OR_RETURN(std::string rel, VideoRel(s.n, v));
        plan->created.push_back(rel);
      }
  REEL_RETURN_IF_ERROR(WriteFileAtomic(fs, JoinPath(staged, kManifestPath), internal::Dump(ManifestOf(*plan), 2)));
  Json ready = {{"backup", plan->backup}, {"staged", published}, {"frames", Json::array()}, {"sources", sources}};
  for (const Session& s : plan->sessions) ready["frames"].push_back(s.frames);
  REEL_RETURN_IF_ERROR(WriteFileAtomic(fs, JoinPath(plan->dest, kReadyPath), internal::Dump(ready, -1)));
  return published;
}

// A staging a killed run finished (ready.json, every listed file present) from the sources
// as they are now (SourcesOf), else nullopt; a stale one is reported in `warnings`.
Result<std::optional<std::vector<std::string>>> FinishedStaging(FileSystem* fs, MigratePlan* plan,
                                                                std::vector<std::string>* warnings) {
  const std::string path = JoinPath(plan->dest, kReadyPath);
  REEL_ASSIGN_OR_RETURN(FileInfo st, fs->Stat(path));
  if (st.type != FileType::kFile) return std::optional<std::vector<std::string>>();
  REEL_ASSIGN_OR_RETURN(Json ready, internal::ReadJsonObjectBounded(fs, path));
  std::vector<std::string> staged;
  const Json frames = ready.value("frames", Json::array());
  if (!ready.value("staged", Json()).is_array() || !frames.is_array() || frames.size() != plan->sessions.size())
    return std::optional<std::vector<std::string>>();
  REEL_ASSIGN_OR_RETURN(Json sources, SourcesOf(fs, *plan));
  if (ready.value("sources", Json()) != sources) {
    warnings->push_back(JoinPath(plan->dest, kStagingDir) + ": an interrupted run's staging was built from sources "
                        "that have changed since (or with other options); staged again");
    return std::optional<std::vector<std::string>>();
  }
  for (const Json& f : ready["staged"]) {
    if (!f.is_string()) return std::optional<std::vector<std::string>>();
    REEL_ASSIGN_OR_RETURN(FileInfo fst, fs->Stat(JoinPath(JoinPath(plan->dest, kStagedTask), f.get<std::string>())));
    if (fst.type != FileType::kFile) return std::optional<std::vector<std::string>>();
    staged.push_back(f.get<std::string>());
  }
  plan->backup = ready.value("backup", std::string());
  for (size_t i = 0; i < frames.size(); ++i) plan->sessions[i].frames = frames[i].is_number_integer() ? frames[i].get<int64_t>() : 0;
  return std::optional<std::vector<std::string>>(std::move(staged));
}

// A visible file the commit would put at `rel` that the destination already holds and the
// migration did not write (a stray data/ file in a v1.0 folder, say) would be replaced, and
// a later --restore would then delete it: refused, naming it, before anything is published.
Status RefuseReplacing(FileSystem* fs, const MigratePlan& plan, const std::string& rel) {
  if (rel.starts_with(".") || rel.find("/.") != std::string::npos) return Status::OK();  // reel's own
  REEL_ASSIGN_OR_RETURN(FileInfo st, fs->Stat(JoinPath(plan.dest, rel)));
  if (st.type == FileType::kNotFound) return Status::OK();
  return Status::AlreadyExists(plan.dest + ": migrating would replace " + rel +
                               ", which is not the migration's; move it out of the folder first");
}

// Every path the commit would create, checked by RefuseReplacing.
Status CheckNothingReplaced(FileSystem* fs, const MigratePlan& plan, const std::vector<std::string>& staged) {
  for (const std::string& f : staged) REEL_RETURN_IF_ERROR(RefuseReplacing(fs, plan, f));
  if (plan.copy_videos) return Status::OK();
  for (const Session& s : plan.sessions)
    for (const internal::SessionVideo& v : s.videos) {
      if (!v.sequence.empty()) continue;  // encoded at staging: among `staged`
      REEL_ASSIGN_OR_RETURN(std::string rel, VideoRel(s.n, v));
      REEL_RETURN_IF_ERROR(RefuseReplacing(fs, plan, rel));
    }
  return Status::OK();
}

// Step 2: one journaled task-change commit (see the file comment for its order).
Status Publish(internal::TaskLock* lock, const MigratePlan& plan, const std::vector<std::string>& staged) {
  FileSystem* fs = lock->fs();
  const std::string staged_root = JoinPath(plan.dest, kStagedTask);
  auto txn = internal::EpisodeTransaction::BeginTaskChange(lock);
  for (const std::string& f : staged)
    if (f != internal::kInfoPath) REEL_RETURN_IF_ERROR(txn->Adopt(JoinPath(staged_root, f), f));
  std::set<std::string> moved;
  if (!plan.copy_videos) {
    for (const Session& s : plan.sessions)
      for (const internal::SessionVideo& v : s.videos) {
        if (!v.sequence.empty()) continue;  // encoded at staging: its frames go with the rest
        REEL_ASSIGN_OR_RETURN(std::string rel, VideoRel(s.n, v));
        txn->Move(s.name + "/" + v.rel, rel);
        moved.insert(s.name + "/" + v.rel);
      }
  }
  REEL_RETURN_IF_ERROR(txn->Adopt(JoinPath(staged_root, internal::kInfoPath), internal::kInfoPath));
  if (plan.in_place) {
    for (const Session& s : plan.sessions)
      for (const std::string& f : s.files) {
        const std::string rel = s.name + "/" + f;
        if (moved.count(rel)) continue;
        if (plan.backup.empty()) txn->Remove(rel);
        else txn->Move(rel, plan.backup + "/" + rel);
      }
  }
  Status st = txn->CommitFiles();
  if (!txn->decided()) return st.WithContext(plan.dest + ": publishing the migrated task");
  (void)fs;
  return Status::OK();
}

// Step 3: removes the session folders the commit emptied and the staging folder; a
// session folder that still holds a file is kept and reported.
Status Clean(FileSystem* fs, const std::string& dest, bool in_place, std::vector<std::string>* warnings) {
  REEL_RETURN_IF_ERROR(RemoveAll(fs, JoinPath(dest, kStagingDir)));
  if (!in_place) return Status::OK();
  REEL_ASSIGN_OR_RETURN(auto entries, fs->ListDir(dest));
  for (const DirEntry& e : entries) {
    if (e.type != FileType::kDirectory || e.symlink || !IsLegacySessionFolderName(e.name)) continue;
    REEL_ASSIGN_OR_RETURN(bool empty, internal::RemoveEmptyTree(fs, JoinPath(dest, e.name)));
    if (!empty) warnings->push_back(JoinPath(dest, e.name) + ": still holds files after the migration; left as it is");
  }
  return Status::OK();
}

void Report(const MigratePlan& plan, MigrateReport* report) {
  report->backup = plan.backup;
  for (const Session& s : plan.sessions) {
    MigratedSession m{s.name, s.n, s.frames, {}};
    for (const internal::SessionVideo& v : s.videos) m.videos.push_back(v.slot);
    report->frames += s.frames;
    report->sessions.push_back(std::move(m));
  }
}

// After the commit: the keypoints mirror re-keyed as the published manifest records
// (migrate_mirror.cc); a no-op once done.
Status FinishKeypoints(FileSystem* fs, const std::string& dest, const std::string& explicit_dir,
                       MigrateReport* report) {
  REEL_ASSIGN_OR_RETURN(FileInfo st, fs->Stat(JoinPath(dest, kManifestPath)));
  if (st.type != FileType::kFile) return Status::OK();
  REEL_ASSIGN_OR_RETURN(Json manifest, internal::ReadManifest(fs, JoinPath(dest, kManifestPath)));
  REEL_ASSIGN_OR_RETURN(report->keypoints_moved, internal::MoveKeypoints(fs, dest, explicit_dir, manifest, false,
                                                                         &report->keypoints, &report->warnings));
  return Status::OK();
}

// Under the destination's lock: stage (unless a finished staging is there), publish, clean.
Status MigrateLocked(FileSystem* fs, MigratePlan* plan, const MigrateOptions& options, MigrateReport* report) {
  REEL_ASSIGN_OR_RETURN(internal::TaskLock lock, internal::TaskLock::Acquire(fs, plan->dest));
  REEL_RETURN_IF_ERROR(lock.RemoveStaleTemps());  // temps of a publish killed before its journal was written
  REEL_ASSIGN_OR_RETURN(bool pooled, internal::MigratedAlready(fs, *plan));
  if (pooled) {
    report->already_pooled = true;
    REEL_RETURN_IF_ERROR(FinishKeypoints(fs, plan->dest, options.keypoints, report));
    return Clean(fs, plan->dest, plan->in_place, &report->warnings);
  }
  REEL_RETURN_IF_ERROR(internal::FindSessions(fs, plan));
  REEL_ASSIGN_OR_RETURN(auto staged, FinishedStaging(fs, plan, &report->warnings));
  if (!staged) {
    plan->backup = plan->in_place && !options.no_backup ? BackupName() : "";
    REEL_RETURN_IF_ERROR(internal::PlanKeypoints(fs, options.keypoints, plan, &report->warnings));
    auto built = Stage(fs, plan, options, report);
    if (!built.ok()) {  // a source reel cannot convert: leave no staging behind
      (void)RemoveAll(fs, JoinPath(plan->dest, kStagingDir));
      return built.status();
    }
    staged = std::move(*built);
  }
  if (Status refused = CheckNothingReplaced(fs, *plan, *staged); !refused.ok()) {
    (void)RemoveAll(fs, JoinPath(plan->dest, kStagingDir));  // nothing was published
    return refused;
  }
  REEL_RETURN_IF_ERROR(Publish(&lock, *plan, *staged));
  Report(*plan, report);
  REEL_RETURN_IF_ERROR(FinishKeypoints(fs, plan->dest, options.keypoints, report));
  return Clean(fs, plan->dest, plan->in_place, &report->warnings);
}

}  // namespace

Result<MigrateReport> MigrateTask(const std::string& task_root, const MigrateOptions& options) {
  FileSystem* fs = options.fs ? options.fs : DefaultFileSystem();
  MigratePlan plan;
  plan.source = task_root;
  plan.in_place = options.to.empty();
  plan.dest = plan.in_place ? task_root : options.to;
  plan.copy_videos = !plan.in_place || !options.no_backup;
  plan.task_name = BaseName(task_root);
  MigrateReport report;
  report.task = plan.dest;
  report.dry_run = options.dry_run;
  if (options.restore) {
    if (!options.to.empty() || options.no_backup)
      return Status::Invalid("reel migrate --restore takes the migrated task (no --to or --no-backup: the "
                             "manifest names the backup); --keypoints names its mirror when it is not beside it");
    if (!options.keypoints.empty()) {  // checked before anything is restored
      REEL_ASSIGN_OR_RETURN(FileInfo mirror, fs->Stat(options.keypoints));
      if (mirror.type != FileType::kDirectory)
        return Status::Invalid(options.keypoints + ": --keypoints names no folder (the keypoints mirror to move back)");
    }
    REEL_RETURN_IF_ERROR(internal::RestoreTask(fs, task_root, options, &report));
    return report;
  }
  if (!plan.in_place && !options.keypoints.empty())
    return Status::Invalid("--keypoints re-keys the mirror of an in-place migration; --to leaves the source and its "
                           "mirror as they are");
  REEL_ASSIGN_OR_RETURN(FileInfo restoring, fs->Stat(JoinPath(task_root, internal::kRestoreRecordPath)));
  if (restoring.type != FileType::kNotFound)
    return Status::Invalid(JoinPath(task_root, internal::kRestoreRecordPath) +
                           ": a restore of this task was interrupted; run reel migrate --restore to finish it first");
  // Read-only first: a re-run after success, or a dry run, writes nothing.
  REEL_ASSIGN_OR_RETURN(bool pooled, internal::MigratedAlready(fs, plan));
  if (pooled && options.dry_run) {
    report.already_pooled = true;
    return report;
  }
  if (!pooled) {
    REEL_RETURN_IF_ERROR(internal::CheckSource(fs, plan));
    REEL_RETURN_IF_ERROR(internal::FindSessions(fs, &plan));
    if (options.dry_run) {
      plan.backup = plan.in_place && !options.no_backup ? BackupName() : "";
      REEL_RETURN_IF_ERROR(internal::PlanKeypoints(fs, options.keypoints, &plan, &report.warnings));
      report.keypoints = plan.keypoints_mirror;
      report.keypoints_moved = static_cast<int64_t>(plan.keypoints_moves.size());
      Report(plan, &report);
      return report;
    }
  }
  if (!plan.in_place) REEL_RETURN_IF_ERROR(fs->CreateDirs(plan.dest));
  REEL_RETURN_IF_ERROR(MigrateLocked(fs, &plan, options, &report));
  return report;
}

}  // namespace reel
