// Task-level rules: info.json, layout, stats.json, tasks.jsonl, features; then
// the per-episode rules of episode_rules.cc over every episode in parallel.
#include <algorithm>
#include <mutex>
#include <optional>
#include <set>

#include "check/context.h"
#include "layout/confined.h"
#include "layout/journal.h"
#include "util/json_util.h"
#include "io/parquet_io.h"
#include "util/parallel.h"
#include "reel/dataset.h"
#include "reel/decode.h"
#include "reel/index_list.h"
#include "io/json_file.h"

namespace reel {
namespace internal {

void FindingSink::Add(const char* rule, std::string path, std::string message) {
  Severity severity = Severity::kError;
  for (const RuleInfo& r : Rules())
    if (std::string_view(r.id) == rule) severity = r.severity;
  Add(rule, severity, std::move(path), std::move(message));
}

void FindingSink::Add(const char* rule, Severity severity, std::string path, std::string message) {
  findings_.push_back({rule, severity, std::move(path), std::move(message)});
}

bool IsKeyColumn(const std::string& name) {
  static const std::set<std::string> keys = {"episode_index", "frame_index", "timestamp",
                                             "task_index",    "wall_time",   "hardware_ns",
                                             "raw_hw_ns"};
  return keys.count(name) > 0;
}

namespace {

constexpr const char* kInfo = "meta/info.json";

// Required top-level keys (contract §3, multi-device §6.1) and their JSON types.
enum class JType { kString, kInt, kNumber, kBool, kObject, kList };
struct KeySpec {
  const char* key;
  JType type;
};
const KeySpec kRequiredKeys[] = {
    {"format", JType::kString},          {"chunks_size", JType::kInt},
    {"data_path", JType::kString},       {"video_path", JType::kString},
    {"episodes_path", JType::kString},   {"codebase_version", JType::kString},
    {"app_version", JType::kString},     {"fps", JType::kNumber},
    {"video", JType::kBool},             {"task_name", JType::kString},
    {"features", JType::kObject},        {"cameras", JType::kObject},
    {"video_extensions", JType::kObject}, {"devices", JType::kList},
    {"device_names", JType::kObject},    {"sensors", JType::kList},
    {"sensor_dim", JType::kInt},         {"created_at", JType::kNumber},
    {"calibration", JType::kObject},     {"total_episodes", JType::kInt},
};
const KeySpec kOptionalKeys[] = {{"gripper_slam_frame", JType::kString},
                                 {"slam_frames", JType::kObject}};

bool HasType(const Json& v, JType t) {
  switch (t) {
    case JType::kString: return v.is_string();
    case JType::kInt: return v.is_number_integer();
    case JType::kNumber: return v.is_number();
    case JType::kBool: return v.is_boolean();
    case JType::kObject: return v.is_object();
    case JType::kList: return v.is_array();
  }
  return false;
}

const char* TypeWord(JType t) {
  switch (t) {
    case JType::kString: return "a string";
    case JType::kInt: return "an integer";
    case JType::kNumber: return "a number";
    case JType::kBool: return "true/false";
    case JType::kObject: return "a JSON object";
    case JType::kList: return "a list";
  }
  return "?";
}

void CheckInfoKeys(const Json& doc, FindingSink& sink) {
  for (const KeySpec& k : kRequiredKeys) {
    auto it = doc.find(k.key);
    if (it == doc.end()) {
      sink.Add("info.required_key", kInfo, std::string("required key \"") + k.key + "\" is missing");
    } else if (!HasType(*it, k.type)) {
      sink.Add("info.key_type", kInfo,
               std::string("key \"") + k.key + "\" must be " + TypeWord(k.type) + ", found " +
                   JsonTypeName(*it) + " " + Brief(*it));
    }
  }
  for (const KeySpec& k : kOptionalKeys) {
    auto it = doc.find(k.key);
    if (it != doc.end() && !HasType(*it, k.type))
      sink.Add("info.key_type", kInfo,
               std::string("key \"") + k.key + "\" must be " + TypeWord(k.type) + ", found " +
                   JsonTypeName(*it) + " " + Brief(*it));
  }
  auto version = doc.find("codebase_version");
  if (version != doc.end() && version->is_string() && version->get<std::string>() != "v3.0")
    sink.Add("info.codebase_version", kInfo,
             "codebase_version " + Brief(*version) + " is not \"v3.0\"; it is informational (000 §4) and the task "
             "is read by its format; the collector's v1.0 migration writes its app version there");
}

void CheckTemplates(const InfoJson& info, FindingSink& sink) {
  struct T {
    const char* key;
    const std::string& text;
    bool video;
  } templates[] = {{"data_path", info.data_path, false},
                   {"video_path", info.video_path, true},
                   {"episodes_path", info.episodes_path, false}};
  for (const T& t : templates) {
    auto parsed = PathTemplate::Parse(t.text);
    if (!parsed.ok()) {
      sink.Add("info.template", kInfo, std::string(t.key) + ": " + parsed.status().message());
      continue;
    }
    PathVars probe{3, 7, 3007, std::string("slot"), std::string("mp4")};
    auto rendered = parsed->Render(probe);
    auto back = rendered.ok() ? parsed->Match(*rendered) : std::nullopt;
    bool numbered = back && ((back->chunk && back->file) || back->episode_index);
    bool keyed = !t.video || (back && back->image_key && back->ext);
    if (!numbered || !keyed)
      sink.Add("info.template", kInfo,
               std::string(t.key) + " \"" + t.text + "\" lacks " +
                   (!numbered ? "the {c:03d} and {f:03d} placeholders"
                              : "the {image_key} and {ext} placeholders"));
  }
}

bool IsGripperTrajectory(const std::string& column) {
  // observation.slam_trajectory (rig 1) and observation.gripper_<k>_slam_trajectory.
  if (column == "observation.slam_trajectory") return true;
  const std::string prefix = "observation.gripper_";
  const std::string suffix = "_slam_trajectory";
  return column.starts_with(prefix) && column.size() > prefix.size() + suffix.size() &&
         column.compare(column.size() - suffix.size(), suffix.size(), suffix) == 0;
}


void CheckFeatures(const InfoJson& info, FindingSink& sink) {
  bool gripper_trajectory = false;
  for (const auto& [name, f] : info.features) {
    const std::string where = "features[\"" + name + "\"]";
    if (f.dtype.empty() || f.shape.empty())
      sink.Add("features.declaration", kInfo, where + " must declare dtype and shape");
    if (name.starts_with("status.") || IsKeyColumn(name) ||
        name.starts_with("observation.images."))
      sink.Add("features.declaration", kInfo,
               where + ": status.*, key columns and video streams are not declared as features");
    if (name.ends_with("_force_matrix") && (!f.encoding || !f.scale))
      sink.Add("features.force_matrix_spec", kInfo,
               where + " must carry encoding and scale (a reader cannot infer the scale)");
    if (name.ends_with("slam_trajectory")) {
      if (IsGripperTrajectory(name)) gripper_trajectory = true;
      if (!f.frame || f.frame_axes_json.empty())
        sink.Add("features.slam_frame", Severity::kWarning, kInfo,
                 where + " has no frame/frame_axes: readers must assume the old frame "
                         "right_forward_up");
      if (const std::string* mapped = Lookup(info.slam_frames, name); mapped && f.frame &&
                                                                      *mapped != *f.frame)
        sink.Add("features.slam_frame", kInfo,
                 "slam_frames[\"" + name + "\"] = \"" + *mapped + "\" disagrees with " + where +
                     ".frame = \"" + *f.frame + "\"");
    }
    const bool glove = name.starts_with("observation.") &&
                       std::find(info.sensors.begin(), info.sensors.end(), name.substr(12)) !=
                           info.sensors.end();
    if (glove && f.shape != std::vector<int64_t>{16, 16})
      sink.Add("features.shape", kInfo, where + " should have shape [16, 16] (the parquet column "
                                                "stays fixed_size_list<float32>[256])");
  }
  if (info.gripper_slam_frame && !gripper_trajectory)
    sink.Add("features.slam_frame", kInfo,
             "gripper_slam_frame is set but no gripper trajectory (observation.slam_trajectory or "
             "observation.gripper_N_slam_trajectory) is declared");
}


// The device <-> column binding (multi-device §6.4 proposal): info.devices is the union over
// the task's episodes by key, so a column bound to two devices had two writers, or changed
// its owner from one episode to another; both are worth a look, neither corrupts the data.
void CheckDeviceBinding(const InfoJson& info, FindingSink& sink) {
  for (const auto& [column, keys] : ColumnWriters(info.devices)) {
    if (!info.Feature(column))
      sink.Add("devices.binding", kInfo,
               "device \"" + keys[0] + "\" is bound to column \"" + column + "\", which features does not declare");
    for (size_t k = 1; k < keys.size(); ++k)
      sink.Add("devices.binding", kInfo,
               "column \"" + column + "\" is bound to devices \"" + keys[0] + "\" and \"" + keys[k] +
                   "\": two writers, or its owner changed between episodes (one column has one writer)");
  }
}

void CheckDevicesAndVideo(const InfoJson& info, FindingSink& sink) {
  std::set<std::string> named;
  for (const auto& [slot, name] : info.device_names) named.insert(slot);
  for (size_t i = 0; i < info.devices.size(); ++i) {
    const DeviceEntry& d = info.devices[i];
    if (d.key.empty() || d.kind.empty() || d.name.empty())
      sink.Add("devices.entry", kInfo,
               "devices[" + std::to_string(i) + "] must have non-empty key, kind and name");
    for (const std::string& slot : d.slots)
      if (!named.count(slot))
        sink.Add("devices.names", kInfo,
                 "device_names has no entry for slot \"" + slot + "\" of device \"" + d.key + "\"");
  }
  CheckDeviceBinding(info, sink);
  for (const auto& [slot, ext] : info.video_extensions)
    if (ext != "mp4" && ext != "mkv")
      sink.Add("video.extension", kInfo,
               "video_extensions[\"" + slot + "\"] = \"" + ext + "\"; expected mp4 or mkv");
  for (const auto& [slot, cam] : info.cameras) {
    if (IsDepthSlot(slot))
      sink.Add("video.depth_in_cameras", kInfo,
               "cameras lists the depth slot \"" + slot + "\"; depth slots appear only in "
               "video_extensions");
    if (!Lookup(info.video_extensions, slot))
      sink.Add("video.extension", kInfo,
               "camera \"" + slot + "\" has no video_extensions entry; readers cannot find its files");
  }
}

constexpr const char* kLinkMessage =
    "a symbolic link inside the task: reel's writers refuse to write through it and never follow one a journal "
    "or manifest names (a task's files are its own; replace it with what it points to)";

// Symbolic links in the task's top folder and meta/ (those below data/, videos/ and
// meta/episodes/ are found by CheckStrayFiles' walk), and journals of interrupted commits.
Status CheckLinksAndJournals(FileSystem* fs, const std::string& root, const std::vector<DirEntry>& top,
                             FindingSink& sink) {
  const auto links = [&](const std::vector<DirEntry>& entries, const std::string& prefix) {
    for (const DirEntry& e : entries)
      if (e.symlink) sink.Add("layout.symlink", prefix + e.name, kLinkMessage);
  };
  links(top, "");
  auto meta = fs->ListDir(JoinPath(root, "meta"));
  if (!meta.ok() && meta.status().code() != StatusCode::kNotFound) return meta.status();
  if (meta.ok()) links(*meta, "meta/");
  REEL_ASSIGN_OR_RETURN(std::vector<int64_t> commits, internal::CommitJournals(fs, root));
  for (int64_t n : commits)
    sink.Add("layout.pending_commit", "meta/.commit-" + std::to_string(n) + ".json",
             "an interrupted commit of episode " + std::to_string(n) + ": readers hide it until the next writer "
             "rolls the journal forward (any writer, e.g. reel stats --rebuild; one it refuses names why)");
  REEL_ASSIGN_OR_RETURN(std::vector<int64_t> pushes, internal::PushJournals(fs, root));
  for (int64_t n : pushes)
    sink.Add("layout.pending_commit", "meta/.push-" + std::to_string(n) + ".json",
             "an interrupted push of episode " + std::to_string(n) + ": readers hide it until that push is run again");
  for (const char* rel : {"meta/.commit-task.json", "meta/.push-change.json"}) {
    REEL_ASSIGN_OR_RETURN(FileInfo journal, fs->Stat(JoinPath(root, rel)));
    if (journal.type != FileType::kNotFound)
      sink.Add("layout.pending_commit", rel,
               "an interrupted change of the task as a whole: the next writer (or push) finishes it");
  }
  return Status::OK();
}

Status CheckLayout(FileSystem* fs, const std::string& root, FindingSink& sink) {
  REEL_ASSIGN_OR_RETURN(auto entries, fs->ListDir(root));
  for (const DirEntry& e : entries) {
    const bool session = e.type == FileType::kDirectory && IsLegacySessionFolderName(e.name);
    if ((e.name == "calibration" && e.type == FileType::kDirectory) || e.name == "metadata.json" ||
        e.name == "timestamps.json" || session)
      sink.Add("layout.legacy_leftover", e.name,
               "v1.0 leftover \"" + e.name + "\" must not exist in a pooled_episodes_v1 task "
               "(migrate it with a backup, then remove it)");
    if (e.name == "_trash")
      sink.Add("nondata.obsolete", e.name, "_trash/ is a v1.1.1 leftover; delete is final since v1.1.2");
  }
  REEL_RETURN_IF_ERROR(CheckLinksAndJournals(fs, root, entries, sink));
  REEL_ASSIGN_OR_RETURN(FileInfo sidecar, fs->Stat(JoinPath(root, "meta/.stats_state.json")));
  if (sidecar.type != FileType::kNotFound)
    sink.Add("nondata.obsolete", "meta/.stats_state.json",
             "obsolete v1.1.0 stats sidecar; stats.json is the accumulator now");
  return Status::OK();
}

// The episode video "<dir>/<stem>.<mp4|mkv>" an auxiliary stream in `dir` belongs to, when
// it exists and the video template matches it; else nullopt (contract 000 §8).
Result<std::optional<std::string>> AuxStreamMain(const Task& task, const std::string& dir, const std::string& stem) {
  REEL_ASSIGN_OR_RETURN(auto video_path, PathTemplate::Parse(task.info().video_path));
  for (const char* ext : {".mp4", ".mkv"}) {
    const std::string rel = dir + "/" + stem + ext;
    if (!video_path.Match(rel)) continue;
    REEL_ASSIGN_OR_RETURN(FileInfo st, task.fs()->Stat(task.Path(rel)));
    if (st.type == FileType::kFile) return std::optional<std::string>(rel);
  }
  return std::optional<std::string>();
}

// Files under data/, videos/, meta/episodes/ that no template explains.
Status CheckStrayFiles(const Task& task, FindingSink& sink) {
  std::vector<PathTemplate> templates;
  for (const std::string* t : {&task.info().data_path, &task.info().video_path,
                               &task.info().episodes_path})
    if (auto p = PathTemplate::Parse(*t); p.ok()) templates.push_back(std::move(*p));
  templates.push_back(*PathTemplate::Parse("meta/episodes/chunk-{c:03d}/file-{f:03d}.parquet"));
  // Symbolic links to directories are not followed (a link to an ancestor is a loop) and
  // the depth is bounded: the templates are a few levels deep.
  constexpr int kMaxDepth = 8;
  std::function<Status(const std::string&, int)> walk = [&](const std::string& rel, int depth) -> Status {
    auto entries = task.fs()->ListDir(task.Path(rel));
    if (!entries.ok())
      return entries.status().code() == StatusCode::kNotFound ? Status::OK() : entries.status();
    for (const DirEntry& e : *entries) {
      if (IsNonDataName(e.name)) continue;
      const std::string child = rel + "/" + e.name;
      if (e.symlink) {  // to a file or a folder: followed by no one (layout/confined.h)
        sink.Add("layout.symlink", child, kLinkMessage);
        continue;
      }
      if (e.type == FileType::kDirectory && depth >= kMaxDepth) {
        sink.Add("layout.stray_file", child, "a directory deeper than any info.json path template");
        continue;
      }
      if (e.type == FileType::kDirectory) {
        REEL_RETURN_IF_ERROR(walk(child, depth + 1));
        continue;
      }
      bool known = std::any_of(templates.begin(), templates.end(),
                               [&](const PathTemplate& t) { return t.Match(child).has_value(); });
      if (known) continue;
      if (auto main = AuxStreamMainStem(e.name)) {
        REEL_ASSIGN_OR_RETURN(std::optional<std::string> video, AuxStreamMain(task, rel, *main));
        if (video) continue;  // an auxiliary stream beside its episode's video: may be ignored (§8)
        sink.Add("layout.stray_file", child,
                 "an auxiliary stream (_aux) with no video " + rel + "/" + *main + ".<mp4|mkv> beside it");
        continue;
      }
      sink.Add("layout.stray_file", child, "file matches no info.json path template; readers will not see it");
    }
    return Status::OK();
  };
  // A top folder that is itself a link was reported by CheckLinksAndJournals; not walked.
  Beneath beneath(task.fs(), task.root());
  for (const char* dir : {"data", "videos", "meta/episodes"}) {
    Status inside = beneath.Check(dir, "check");
    if (inside.ok()) {
      REEL_RETURN_IF_ERROR(walk(dir, 1));
    } else if (inside.code() != StatusCode::kInvalid) {
      return inside;  // a listing that failed is an error, never "nothing to walk"
    }
  }
  return Status::OK();
}

void CheckStats(const Task& task, bool has_episodes, FindingSink& sink) {
  const std::string rel = "meta/stats.json";
  auto info = task.fs()->Stat(task.Path(rel));
  if (info.ok() && info->type == FileType::kNotFound) {
    if (has_episodes) sink.Add("stats.missing", rel, "meta/stats.json is missing");
    return;
  }
  auto stats = task.ReadStats();
  if (!stats.ok()) {
    sink.Add("stats.malformed", rel, stats.status().message());
    return;
  }
  for (const auto& [name, b] : stats->blocks) {
    const std::string where = "block \"" + name + "\"";
    if (b.needs_rebuild())
      sink.Add("stats.count", rel,
               where + " has no count: a v1.1.0 block; rebuild it from data/ before merging (reel stats --rebuild)");
    const size_t dim = b.mean.size();
    if (b.std.size() != dim || b.min.size() != dim || b.max.size() != dim)
      sink.Add("stats.shape", rel,
               where + ": mean/std/min/max have " + std::to_string(b.mean.size()) + "/" +
                   std::to_string(b.std.size()) + "/" + std::to_string(b.min.size()) + "/" +
                   std::to_string(b.max.size()) + " values; they must have the same dimension");
    if (const FeatureSpec* f = task.info().Feature(name);
        f && !f->shape.empty() && dim != static_cast<size_t>(f->ElementCount()) && dim > 0)
      sink.Add("stats.shape", rel,
               where + " has dimension " + std::to_string(dim) + " but the feature has " +
                   std::to_string(f->ElementCount()) + " elements");
    if (std::any_of(b.std.begin(), b.std.end(), [](double s) { return s < 0; }))
      sink.Add("stats.shape", rel, where + " has a negative std");
    if (name == "action" &&
        !(b.count == 0 && b.mean == std::vector<double>{0.0} && b.std == std::vector<double>{1.0} &&
          b.min == std::vector<double>{0.0} && b.max == std::vector<double>{0.0}))
      sink.Add("stats.action", rel,
               "the action block should be the placeholder {count:0, mean:[0.0], std:[1.0], "
               "min:[0.0], max:[0.0]}");
  }
}

void CheckTasks(const Task& task, FindingSink& sink) {
  const std::string rel = "meta/tasks.jsonl";
  auto info = task.fs()->Stat(task.Path(rel));
  if (info.ok() && info->type == FileType::kNotFound) {
    sink.Add("tasks.missing", rel, "meta/tasks.jsonl is missing");
    return;
  }
  auto tasks = task.ReadTasks();
  if (!tasks.ok()) sink.Add("tasks.jsonl", rel, tasks.status().message());
}

}  // namespace

void ColumnSpans::Add(const std::string& column, int64_t n) {
  auto [it, fresh] = spans_.emplace(column, std::pair{n, n});
  it->second.first = std::min(it->second.first, n);
  it->second.second = std::max(it->second.second, n);
}

// data.column_renamed (multi-device §2.4 "同一任务的列名不得跨 episode 改名"): two observation
// columns of one dtype and shape that never share an episode, one ending before the other
// begins, look like one column renamed. Columns bound to different devices are not (the
// task changed devices); `_ns` companions are left to their data column.
void CheckColumnSpans(const InfoJson& info, const ColumnSpans& spans, FindingSink& sink) {
  const auto& all = spans.spans();
  const auto writers = ColumnWriters(info.devices);
  const auto owner = [&](const std::string& column) {  // "" when unbound (multi-device §6.4)
    auto it = writers.find(column);
    return it == writers.end() ? std::string() : it->second.front();
  };
  for (const auto& [x, xs] : all) {
    const FeatureSpec* fx = info.Feature(x);
    if (!x.starts_with("observation.") || x.ends_with("_ns") || !fx) continue;
    for (const auto& [y, ys] : all) {
      const FeatureSpec* fy = info.Feature(y);
      if (x == y || !y.starts_with("observation.") || y.ends_with("_ns") || !fy || xs.second >= ys.first) continue;
      if (fx->dtype != fy->dtype || fx->shape != fy->shape) continue;
      const std::string ox = owner(x), oy = owner(y);
      if (!ox.empty() && !oy.empty() && ox != oy) continue;
      sink.Add("data.column_renamed", kInfo,
               "column \"" + x + "\" (episodes " + std::to_string(xs.first) + "-" + std::to_string(xs.second) +
                   ") and \"" + y + "\" (episodes " + std::to_string(ys.first) + "-" + std::to_string(ys.second) +
                   ") never share an episode and have one dtype and shape: a renamed column? Names do not change "
                   "across episodes (multi-device §2.4)");
    }
  }
}

namespace {

void CheckSensors(const Task& task, FindingSink& sink) {
  for (const auto& [name, f] : task.info().features) {
    if (!name.starts_with("observation.") || !name.ends_with("_glove")) continue;
    const std::string sensor = name.substr(12);
    const auto& sensors = task.info().sensors;
    if (std::find(sensors.begin(), sensors.end(), sensor) == sensors.end())
      sink.Add("info.sensors", kInfo,
               "glove column \"" + name + "\" is declared but \"" + sensor + "\" is not in sensors");
  }
}

}  // namespace
}  // namespace internal

using internal::FindingSink;

namespace internal {
namespace {

// The episodes `numbers` names (CheckOptions::episodes), by N.
Result<std::vector<EpisodeEntry>> ChosenEpisodes(const Task& task, const std::vector<int64_t>& numbers) {
  std::vector<EpisodeEntry> out;
  for (int64_t n : DropRepeats(numbers)) {
    auto e = task.FindEpisode(n);
    if (!e.ok()) return e.status().WithContext("reel check --episodes");
    out.push_back(std::move(*e));
  }
  std::sort(out.begin(), out.end(),
            [](const EpisodeEntry& a, const EpisodeEntry& b) { return a.episode_index < b.episode_index; });
  return out;
}

// Rules over the whole listing: total_episodes against the highest N, legacy shards.
void CheckNumbering(const Task& t, const std::vector<EpisodeEntry>& episodes, FindingSink& sink) {
  int64_t highest = 0, from_shards = 0;
  for (const EpisodeEntry& e : episodes) {
    if (!e.data_path.empty() || e.row_source != RowSource::kMissing)
      highest = std::max(highest, e.episode_index);
    from_shards += e.row_source == RowSource::kLegacyShard;
  }
  if (highest > t.info().total_episodes)
    sink.Add("numbering.total_episodes", kInfo,
             "total_episodes is " + std::to_string(t.info().total_episodes) +
                 " but episode " + std::to_string(highest) + " is committed");
  if (from_shards > 0)
    sink.Add("episodes.legacy_shard", "meta/episodes",
             std::to_string(from_shards) + " episodes rows live in legacy multi-row shards "
             "(`reel split-episodes " + t.root() + "` gives each its own file)");
}

}  // namespace
}  // namespace internal

Result<TaskReport> CheckTask(const std::string& root, const CheckOptions& options) {
  FileSystem* fs = options.fs ? options.fs : DefaultFileSystem();
  REEL_ASSIGN_OR_RETURN(DetectedFormat format, DetectFormat(fs, root));
  TaskReport report;
  report.path = root;
  report.format = DatasetFormatName(format.format);
  FindingSink sink;
  // LeRobot and bundle datasets have their own rules (docs/foreign-read.md).
  if (IsForeignFormat(format.format)) {
    REEL_ASSIGN_OR_RETURN(auto dataset, ForeignDataset::Open(root, {fs}));
    return dataset->Validate();
  }
  if (format.format != DatasetFormat::kPooledEpisodesV1) {
    sink.Add("format.unknown", internal::kInfo,
             std::string("this is a ") + DatasetFormatName(format.format) + " dataset (" +
                 format.version + "); the conformance rules apply to pooled_episodes_v1 tasks" +
                 (format.format == DatasetFormat::kLegacyV1_0
                      ? "; convert it with `reel migrate " + root + "` (docs/maintenance.md)"
                      : std::string()));
    report.findings = std::move(sink.findings());
    return report;
  }
  const std::string info_path = JoinPath(root, internal::kInfo);
  REEL_ASSIGN_OR_RETURN(internal::Json doc, internal::ReadJsonFile(fs, info_path));
  internal::CheckInfoKeys(doc, sink);

  // Every directory listed (TaskOptions::listing_cache): a forged listing cache, whose
  // directory mtimes a copy keeps, must not hide an episode from the checker.
  auto task = Task::Open(root, {.fs = fs, .io_threads = options.io_threads, .listing_cache = false});
  if (!task.ok()) {
    // Types too wrong to model the task: report what was found and stop here.
    sink.Add("info.key_type", internal::kInfo, task.status().message());
    report.findings = std::move(sink.findings());
    return report;
  }
  const Task& t = **task;
  internal::CheckTemplates(t.info(), sink);
  internal::CheckFeatures(t.info(), sink);
  internal::CheckDevicesAndVideo(t.info(), sink);
  internal::CheckSensors(t, sink);
  // Some episodes only: the task-level files and those episodes, none of the walks whose
  // cost grows with the task (layout, strays, the listing, numbering, column spans).
  const bool whole = options.episodes.empty();
  if (whole) {
    REEL_RETURN_IF_ERROR(internal::CheckLayout(fs, root, sink));
    REEL_RETURN_IF_ERROR(internal::CheckStrayFiles(t, sink));
  }
  auto episodes = whole ? t.ListEpisodes() : internal::ChosenEpisodes(t, options.episodes);
  if (!episodes.ok()) {
    if (!whole) return episodes.status();  // an episode asked for that is not there
    sink.Add("episodes.row_count", "meta/episodes", episodes.status().message());
    report.findings = std::move(sink.findings());
    return report;
  }
  report.episodes = static_cast<int64_t>(episodes->size());
  // Corrects the episode index where this Task, which stats every file, finds one rewritten
  // in place (listings trust its directory's time for it, EpisodeIndex::Stamp), so that it is
  // listed as it is after a check; otherwise nothing is written (Task::SaveIndex). Not on an
  // object store, whose listings carry every object's stamp: nothing there to correct.
  if (whole && fs->Capabilities().atomic_rename) (void)t.ReadRowsAndSchemas(*episodes, {"length"});
  internal::CheckStats(t, !episodes->empty(), sink);
  internal::CheckTasks(t, sink);
  if (whole) internal::CheckNumbering(t, *episodes, sink);

  std::vector<FindingSink> per_episode(episodes->size());
  const int threads = options.io_threads > 0 ? options.io_threads : 2;
  std::mutex mutex;  // guards spans and the progress count
  internal::ColumnSpans spans;
  int64_t checked = 0;
  internal::ParallelFor(static_cast<int64_t>(episodes->size()), threads, [&](int64_t i) {
    const EpisodeEntry& e = (*episodes)[static_cast<size_t>(i)];
    const auto columns = internal::CheckEpisode(t, e, per_episode[static_cast<size_t>(i)], options.deep);
    std::lock_guard<std::mutex> lock(mutex);
    for (const std::string& c : columns) spans.Add(c, e.episode_index);
    if (!options.progress) return;
    options.progress({"episodes checked", ++checked, static_cast<int64_t>(episodes->size()),
                      root + ": episode " + std::to_string(e.episode_index)});
  });
  for (FindingSink& s : per_episode)
    for (Finding& f : s.findings()) sink.findings().push_back(std::move(f));
  if (whole) internal::CheckColumnSpans(t.info(), spans, sink);
  report.findings = std::move(sink.findings());
  return report;
}

namespace {

Result<bool> IsTaskDir(FileSystem* fs, const std::string& dir) {
  REEL_ASSIGN_OR_RETURN(FileInfo info, fs->Stat(JoinPath(dir, "meta/info.json")));
  REEL_ASSIGN_OR_RETURN(FileInfo manifest, fs->Stat(JoinPath(dir, "manifest.json")));
  if (info.type != FileType::kNotFound || manifest.type != FileType::kNotFound) return true;
  // A v1.0 task has no task-level meta/info.json, but its session folders each have one:
  // it is one task (to migrate), not a folder of broken ones.
  auto format = DetectFormat(fs, dir);
  return format.ok() && format->format == DatasetFormat::kLegacyV1_0;
}

// A task's report, or one error finding when the task cannot be read at all.
TaskReport CheckOrReport(const std::string& dir, const CheckOptions& options) {
  auto report = CheckTask(dir, options);
  if (report.ok()) return std::move(*report);
  TaskReport failed;
  failed.path = dir;
  const bool format = report.status().code() == StatusCode::kNotSupported;
  failed.findings.push_back({format ? "format.unknown" : "info.json", Severity::kError, "meta/info.json",
                             report.status().message()});
  return failed;
}

// The tasks in `dir`'s subfolders (`depth` levels below the checked folder), in name order.
Status CheckSubfolders(FileSystem* fs, const std::string& dir, int depth, const CheckOptions& options,
                       FolderReport* out) {
  REEL_ASSIGN_OR_RETURN(auto entries, fs->ListDir(dir));
  std::sort(entries.begin(), entries.end(), [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  for (const DirEntry& e : entries) {
    if (e.type != FileType::kDirectory || IsNonDataName(e.name)) continue;
    const std::string sub = JoinPath(dir, e.name);
    REEL_ASSIGN_OR_RETURN(bool task, IsTaskDir(fs, sub));
    if (task) {
      out->tasks.push_back(CheckOrReport(sub, options));
    } else if (!options.recursive) {
      out->skipped.push_back({sub, "not a task"});
    } else if (e.symlink) {
      out->skipped.push_back({sub, "symbolic link"});
    } else if (depth >= options.max_depth) {
      out->skipped.push_back({sub, "deeper than max_depth"});
    } else {
      REEL_RETURN_IF_ERROR(CheckSubfolders(fs, sub, depth + 1, options, out));
    }
  }
  return Status::OK();
}

}  // namespace

Result<FolderReport> CheckFolder(const std::string& path, const CheckOptions& options) {
  FileSystem* fs = options.fs ? options.fs : DefaultFileSystem();
  REEL_ASSIGN_OR_RETURN(FileInfo info, fs->Stat(path));
  FolderReport out;
  if (info.type == FileType::kDirectory) {
    REEL_ASSIGN_OR_RETURN(bool task, IsTaskDir(fs, path));
    if (!task) REEL_RETURN_IF_ERROR(CheckSubfolders(fs, path, 1, options, &out));
    if (!out.tasks.empty()) return out;
  }
  auto one = CheckTask(path, options);
  if (!one.ok() && !out.skipped.empty() && !options.recursive)
    return Status(one.status().code(), one.status().message() + " (and none of its " +
                                           std::to_string(out.skipped.size()) +
                                           " subfolders is a task; --recursive looks further down)");
  if (!one.ok()) return one.status();
  out.tasks.push_back(std::move(*one));
  return out;
}

Result<std::vector<TaskReport>> CheckPath(const std::string& path, const CheckOptions& options) {
  REEL_ASSIGN_OR_RETURN(FolderReport folder, CheckFolder(path, options));
  return std::move(folder.tasks);
}

}  // namespace reel
