// reel migrate, reading side: the v1.0 sessions of a task (shared/docs/v1.0-layout.md).
#include <arrow/api.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "maint/migrate_internal.h"
#include "reel/json_limits.h"
#include "reel/layout.h"
#include "reel/task.h"
#include "io/arrow_values.h"
#include "io/json_file.h"

namespace reel::internal {
namespace {

// timestamps.json (a 10-hour stereo session at 30 fps is ~200 MB) and reel's own files.
constexpr int64_t kMaxJsonBytes = int64_t{256} << 20;
// metadata.json and calibration/*.json: their values are copied into the episodes row and
// info.json, which readers hold to kJsonFileBytes (64 MiB); the v1.0 writer's are kilobytes.
constexpr JsonLimits kMetaLimits{kJsonFileBytes, 64};
// A frame rate a camera can run at, in frames per second (issue 27 finding 4: fps 1e-300
// passed `fps > 0` and made duration_sec 1e300).
constexpr double kMinFps = 0.1, kMaxFps = 10000;

std::vector<std::string> Split(const std::string& rel) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t slash; (slash = rel.find('/', start)) != std::string::npos; start = slash + 1)
    parts.push_back(rel.substr(start, slash - start));
  parts.push_back(rel.substr(start));
  return parts;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A name that can be an image key in the pooled paths.
bool PlainName(const std::string& name) {
  return !name.empty() && name[0] != '.' && name.find('/') == std::string::npos;
}

// A video file moved or copied as it is.
SessionVideo FileVideo(const std::string& slot, const char* ext, const std::string& rel) {
  SessionVideo v;
  v.slot = slot;
  v.ext = ext;
  v.rel = rel;
  return v;
}

// RGB mp4s (videos/<cam>/chunk-*/<slot>.mp4; an `_aux` stream lives in its main camera's
// folder) and depth slots' dual-stream mkv (depth/<slot>/<slot>.mkv). The heat-map
// preview mp4 of a depth slot is not migrated (it stays in the backup). A depth slot without
// its .mkv may be a PNG16 or raw frame sequence (FindDepthSequence), encoded at staging.
Status FindVideos(const std::string& where, const Json& meta, Session* s) {
  std::map<std::string, SessionVideo> by_slot;
  auto add = [&](SessionVideo v) -> Status {
    if (!by_slot.emplace(v.slot, v).second)
      return Status::Invalid(where + ": two videos for image key \"" + v.slot + "\": " + by_slot[v.slot].rel +
                             " and " + v.rel);
    return Status::OK();
  };
  for (const std::string& f : s->files) {
    const auto parts = Split(f);
    if (parts.size() == 4 && parts[0] == "videos" && parts[2].rfind("chunk-", 0) == 0 && EndsWith(parts[3], ".mp4")) {
      const std::string slot = parts[3].substr(0, parts[3].size() - 4);
      if (PlainName(slot)) REEL_RETURN_IF_ERROR(add(FileVideo(slot, "mp4", f)));
    }
  }
  const Json cameras = meta.value("cameras", Json::object());
  if (!cameras.is_object()) return Status::Invalid(where + ": cameras must be a JSON object");
  for (auto it = cameras.begin(); it != cameras.end(); ++it) {
    if (!it->is_object() || it->value("type", std::string()) != "depth" || !PlainName(it.key())) continue;
    const std::string slot = it.key(), dir = "depth/" + slot + "/", mkv = dir + slot + ".mkv";
    if (std::binary_search(s->files.begin(), s->files.end(), mkv)) {
      REEL_RETURN_IF_ERROR(add(FileVideo(slot, "mkv", mkv)));
      continue;
    }
    REEL_ASSIGN_OR_RETURN(auto sequence, FindDepthSequence(where, *s, slot, *it));
    if (sequence) REEL_RETURN_IF_ERROR(add(std::move(*sequence)));
  }
  for (auto& [slot, v] : by_slot) s->videos.push_back(v);
  return Status::OK();
}

// OK when `fps` (the value of `key` in `where`) is within kMinFps..kMaxFps.
Status CheckFps(const std::string& where, const std::string& key, double fps) {
  if (fps >= kMinFps && fps <= kMaxFps) return Status::OK();
  return Status::Invalid(where + ": " + key + " " + Brief(Json(fps)) + " is not a frame rate (reel migrate takes " +
                         Brief(Json(kMinFps)) + " to " + Brief(Json(kMaxFps)) + " frames per second); nothing was "
                         "changed");
}

// The metadata.json keys reel migrate reads with a default (FindVideos here, the task's
// declaration in migrate.cc), checked to be of the type the v1.0 writer gives them
// (v1.0-layout.md), so that a wrong type is refused naming the key and the value before
// anything is written, never thrown out of the JSON library (or, for a number beyond
// int64, an undefined cast).
Status CheckMetadataTypes(const Json& meta, const std::string& where) {
  int64_t number = 0;
  double real = 0;
  std::string text;
  REEL_RETURN_IF_ERROR(GetInt(meta, "sensor_dim", where, number));
  REEL_RETURN_IF_ERROR(GetString(meta, "codebase_version", where, text));
  const Json cameras = meta.value("cameras", Json::object());
  if (!cameras.is_object()) return Status::Invalid(where + ": cameras must be a JSON object");
  for (auto it = cameras.begin(); it != cameras.end(); ++it) {
    if (!it->is_object()) continue;
    const std::string at = where + ": cameras." + it.key();
    REEL_RETURN_IF_ERROR(GetString(*it, "type", at, text));
    REEL_RETURN_IF_ERROR(GetInt(*it, "height", at, number));
    REEL_RETURN_IF_ERROR(GetInt(*it, "width", at, number));
    real = 0;
    REEL_RETURN_IF_ERROR(GetDouble(*it, "fps", at, real));
    if (it->contains("fps")) REEL_RETURN_IF_ERROR(CheckFps(at, "fps", real));
  }
  int64_t k = 0;
  for (const Json& device : meta.value("devices", Json::array())) {
    const std::string at = where + ": devices[" + std::to_string(k++) + "]";
    if (!device.is_object()) continue;
    for (const char* key : {"key", "kind", "name"}) REEL_RETURN_IF_ERROR(GetString(device, key, at, text));
  }
  return Status::OK();
}

// The metadata.json keys reel migrate reads: the plan's, then what staging copies into the
// episodes row (drop_stats, video_codec, verbatim).
const std::set<std::string> kPlanKeys = {"format_version", "episode_index", "created_at", "fps", "task_name",
                                         "cameras", "devices", "sensor_dim", "codebase_version"};
const std::set<std::string> kRowKeys = {"drop_stats", "video_codec"};

// metadata.json at `where` with the keys reel migrate reads (the plan's, and with `row` the
// episodes row's too), its format_version and key types checked.
Result<Json> ReadMetadata(FileSystem* fs, const std::string& where, bool row) {
  REEL_ASSIGN_OR_RETURN(Json meta, ReadJsonObjectFile(fs, where, kMetaLimits, [&](const std::string& key) {
                          return kPlanKeys.count(key) > 0 || (row && kRowKeys.count(key) > 0);
                        }));
  auto version = meta.find("format_version");
  if (version != meta.end() && !(version->is_string() && version->get<std::string>() == "1.0"))
    return Status::NotSupported(where + ": format_version " + Brief(*version) +
                                "; reel migrate reads egodata format 1.0 (contract §1) and does not guess");
  REEL_RETURN_IF_ERROR(CheckMetadataTypes(meta, where));
  return meta;
}

// {stem: calibration/<stem>.json} of the session folder `dir` holding `files`.
Result<Json> ReadCalibration(FileSystem* fs, const std::string& dir, const std::vector<std::string>& files) {
  Json calibration = Json::object();
  for (const std::string& f : files) {
    const auto parts = Split(f);
    if (parts.size() != 2 || parts[0] != "calibration" || !EndsWith(parts[1], ".json")) continue;
    REEL_ASSIGN_OR_RETURN(Json c, ReadJsonObjectFile(fs, JoinPath(dir, f), kMetaLimits));
    calibration[parts[1].substr(0, parts[1].size() - 5)] = std::move(c);
  }
  return calibration;
}

// The session's plan fields. Its metadata, calibration and timestamps.json are read and
// checked here, before anything is staged, and only the small fields are kept (the Session
// comment).
Result<Session> ReadSession(FileSystem* fs, const std::string& root, const std::string& name) {
  Session s;
  s.name = name;
  const std::string dir = JoinPath(root, name), where = JoinPath(dir, "metadata.json");
  {
    REEL_ASSIGN_OR_RETURN(Json meta, ReadMetadata(fs, where, /*row=*/false));
    REEL_RETURN_IF_ERROR(GetInt(meta, "episode_index", where, s.source_index));
    REEL_RETURN_IF_ERROR(GetDouble(meta, "created_at", where, s.created_at));
    REEL_RETURN_IF_ERROR(GetDouble(meta, "fps", where, s.fps));
    REEL_RETURN_IF_ERROR(CheckFps(where, "fps", s.fps));
    auto task = meta.find("task_name");
    if (task != meta.end() && task->is_string()) s.task_name = task->get<std::string>();
    REEL_RETURN_IF_ERROR(ListTree(fs, dir, "", &s.files));
    REEL_RETURN_IF_ERROR(FindVideos(where, meta, &s));
  }
  REEL_RETURN_IF_ERROR(ReadCalibration(fs, dir, s.files).status());
  REEL_RETURN_IF_ERROR(ReadLegacyFrames(fs, dir).status());  // held to check's rules, then dropped
  return s;
}

// Folders the reference never takes for a session (v1.0-layout.md, step 1).
bool SkippedFolder(const std::string& name) {
  static const std::set<std::string> kSkipped = {"videos", "data", "meta", "depth", "calibration"};
  return name.empty() || name[0] == '.' || name[0] == '_' || kSkipped.count(name) || name.rfind("chunk-", 0) == 0;
}

// The SAX events of a timestamps.json: each element of the top-level "timestamps" array is
// built as a Json of its own with the keys a LegacyFrame takes (an entry is a handful of
// keys), checked and turned into a LegacyFrame, then dropped; any other value, and an
// entry's other keys, are skipped as they are read. Depth is bounded before parsing
// (CheckJsonBounds), so an element's Json is too.
const std::set<std::string> kEntryKeys = {"frame_index", "timestamp", "wall_time", "hardware_ns"};

class TimestampsSax : public Json::json_sax_t {
 public:
  TimestampsSax(const std::string& path, std::vector<LegacyFrame>* frames) : path_(path), frames_(frames) {}

  // OK when the document is an object whose "timestamps" is an array of valid entries
  // (the messages of a document parse: malformed JSON, json.number).
  Status Parse(const std::string& text) {
    bool parsed = false;
    try {
      parsed = Json::sax_parse(text.begin(), text.end(), this);
    } catch (const Json::exception& e) {
      return Status::Invalid(path_ + ": malformed JSON (" + std::string(e.what()) + ")");
    }
    if (!status_.ok() || !parsed) return status_.ok() ? Status::Invalid(path_ + ": malformed JSON") : status_;
    if (!seen_) return Status::Invalid(path_ + ": \"timestamps\" must be an array");
    if (frames_->empty()) return Status::Invalid(path_ + ": no frames");
    return Status::OK();
  }

  bool null() override { return Value(Json(nullptr)); }
  bool boolean(bool v) override { return Value(Json(v)); }
  bool number_integer(number_integer_t v) override { return Value(Json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return Value(Json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return Value(Json(v)); }
  bool string(string_t& v) override { return Value(Json(std::move(v))); }
  bool binary(binary_t&) override { return Value(Json()); }  // never from JSON text
  bool start_object(std::size_t) override { return Open(Json::object()); }
  bool start_array(std::size_t) override { return Open(Json::array()); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }
  bool key(string_t& k) override {
    if (skip_ > 0) return true;
    if (stack_.size() == 1 && stack_.back()->is_object() && !kEntryKeys.count(k)) skip_next_ = true;
    else if (!stack_.empty()) key_ = k;
    else if (depth_ == 1) next_is_timestamps_ = k == "timestamps";
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    // nlohmann reports a number that overflows a double (1e999) as out_of_range.406.
    status_ = e.id == 406 ? Status::Invalid(path_ + ": json.number: a number outside the range of a double (" +
                                            std::string(e.what()) + ")")
                                .WithRule("json.number")
                          : Status::Invalid(path_ + ": malformed JSON (" + std::string(e.what()) + ")");
    return false;
  }

 private:
  bool Fail(Status st) {
    status_ = std::move(st);
    return false;
  }
  // v into the element being built; returns where it went.
  Json* Insert(Json v) {
    Json* top = stack_.back();
    if (top->is_object()) return &((*top)[key_] = std::move(v));
    top->push_back(std::move(v));
    return &top->back();
  }
  // At depth 1, the value of "timestamps" (once, an array) or of another key (skipped).
  bool TopLevelValue(bool is_array) {
    if (!next_is_timestamps_) return true;
    next_is_timestamps_ = false;
    if (!is_array) return Fail(Status::Invalid(path_ + ": \"timestamps\" must be an array"));
    if (seen_) return Fail(Status::Invalid(path_ + ": \"timestamps\" appears twice"));
    seen_ = in_array_ = true;
    return true;
  }
  bool Value(Json v) {
    if (skip_ > 0 || std::exchange(skip_next_, false)) return true;
    if (depth_ == 0) return Fail(Status::Invalid(path_ + ": must be a JSON object, found " + JsonTypeName(v)));
    if (!stack_.empty()) {
      Insert(std::move(v));
      return true;
    }
    if (in_array_ && depth_ == 2) return Entry(v);
    return depth_ == 1 ? TopLevelValue(false) : true;
  }
  bool Open(Json container) {
    if (skip_ > 0 || std::exchange(skip_next_, false)) {
      ++skip_;
      ++depth_;
      return true;
    }
    const bool is_array = container.is_array();
    if (depth_ == 0 && !container.is_object())
      return Fail(Status::Invalid(path_ + ": must be a JSON object, found " + JsonTypeName(container)));
    if (!stack_.empty()) {
      stack_.push_back(Insert(std::move(container)));
    } else if (in_array_ && depth_ == 2) {
      element_ = std::move(container);
      stack_.push_back(&element_);
    } else if (depth_ == 1 && !TopLevelValue(is_array)) {
      return false;
    }
    ++depth_;
    return true;
  }
  bool Close() {
    --depth_;
    if (skip_ > 0) {
      --skip_;
      return true;
    }
    if (!stack_.empty()) {
      stack_.pop_back();
      if (stack_.empty()) return Entry(std::exchange(element_, Json()));
    } else if (in_array_ && depth_ == 1) {
      in_array_ = false;
    }
    return true;
  }
  // One element of "timestamps": an object with an integer frame_index and, when present,
  // a number timestamp and wall_time and an integer hardware_ns.
  bool Entry(const Json& e) {
    if (!e.is_object()) return Fail(Status::Invalid(path_ + ": a timestamps entry must be an object, found " + Brief(e)));
    if (!e.contains("frame_index")) return Fail(Status::Invalid(path_ + ": a timestamps entry has no frame_index"));
    LegacyFrame f;
    for (Status st : {GetInt(e, "frame_index", path_, f.frame_index), GetDouble(e, "timestamp", path_, f.timestamp),
                      GetDouble(e, "wall_time", path_, f.wall_time), GetInt(e, "hardware_ns", path_, f.hardware_ns)})
      if (!st.ok()) return Fail(std::move(st));
    frames_->push_back(f);
    return true;
  }

  const std::string& path_;
  std::vector<LegacyFrame>* frames_;
  Status status_;
  int depth_ = 0;                    // containers open
  bool next_is_timestamps_ = false;  // the last top-level key was "timestamps"
  bool seen_ = false;                // "timestamps" was found
  bool in_array_ = false;            // inside it
  bool skip_next_ = false;           // the next value is an entry's key LegacyFrame does not take
  int skip_ = 0;                     // containers open inside a skipped value
  Json element_;                     // the element being built
  std::vector<Json*> stack_;         // its open containers
  std::string key_;                  // the key of the next value in an object of the element
};

// `frames` (file order) -> the first entry of each frame_index, ascending, when the indices
// are 0..n-1 with at most two entries each (data.frame_index).
Status KeepFirstOfEachFrame(const std::string& path, std::vector<LegacyFrame>* frames) {
  std::stable_sort(frames->begin(), frames->end(),
                   [](const LegacyFrame& a, const LegacyFrame& b) { return a.frame_index < b.frame_index; });
  const auto rule = [&](const std::string& what) {
    return Status::Invalid(path + ": " + what + " (check: data.frame_index); nothing was changed")
        .WithRule("data.frame_index");
  };
  size_t kept = 0;
  for (size_t i = 0; i < frames->size();) {
    const int64_t fi = (*frames)[i].frame_index;
    size_t j = i + 1;
    while (j < frames->size() && (*frames)[j].frame_index == fi) ++j;
    if (j - i > 2)
      return rule("frame_index " + std::to_string(fi) + " has " + std::to_string(j - i) +
                  " entries; a frame has one, or two on a stereo session (left and right eye)");
    if (kept == 0 && fi != 0)
      return rule("the first frame_index is " + std::to_string(fi) + ": frames are numbered from 0");
    if (kept > 0 && fi != (*frames)[kept - 1].frame_index + 1)
      return rule("frame_index " + std::to_string(fi) + " follows " + std::to_string((*frames)[kept - 1].frame_index) +
                  ": a frame is missing");
    (*frames)[kept++] = (*frames)[i];
    i = j;
  }
  frames->resize(kept);
  frames->shrink_to_fit();
  return Status::OK();
}

// timestamp (as float32, the data column's type) and wall_time finite and never decreasing
// (data.time_order).
Status CheckTimeOrder(const std::string& path, const std::vector<LegacyFrame>& frames) {
  const auto rule = [&](const LegacyFrame& f, const std::string& what) {
    return Status::Invalid(path + ": frame_index " + std::to_string(f.frame_index) + ": " + what +
                           " (check: data.time_order); nothing was changed")
        .WithRule("data.time_order");
  };
  for (size_t i = 0; i < frames.size(); ++i) {
    const LegacyFrame& f = frames[i];
    if (!std::isfinite(f.timestamp) || std::fabs(f.timestamp) > std::numeric_limits<float>::max())
      return rule(f, "timestamp " + Brief(Json(f.timestamp)) + " is not a finite float32 (the timestamp column's type)");
    if (!std::isfinite(f.wall_time)) return rule(f, "wall_time " + Brief(Json(f.wall_time)) + " is not finite");
    if (i == 0) continue;
    const LegacyFrame& p = frames[i - 1];
    if (static_cast<float>(f.timestamp) < static_cast<float>(p.timestamp))
      return rule(f, "timestamp " + Brief(Json(f.timestamp)) + " is less than frame " +
                         std::to_string(p.frame_index) + "'s " + Brief(Json(p.timestamp)) + "; timestamps never decrease");
    if (f.wall_time < p.wall_time)
      return rule(f, "wall_time " + Brief(Json(f.wall_time)) + " is less than frame " +
                         std::to_string(p.frame_index) + "'s " + Brief(Json(p.wall_time)) + "; wall_time never decreases");
  }
  return Status::OK();
}

}  // namespace

Result<Json> ReadJsonObjectBounded(FileSystem* fs, const std::string& path) {
  return ReadJsonObjectFile(fs, path, JsonLimits{kMaxJsonBytes, 64});
}

Status ListTree(FileSystem* fs, const std::string& dir, const std::string& prefix, std::vector<std::string>* out) {
  REEL_ASSIGN_OR_RETURN(auto entries, fs->ListDir(dir));
  std::sort(entries.begin(), entries.end(), [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  for (const DirEntry& e : entries) {
    const std::string rel = prefix.empty() ? e.name : prefix + "/" + e.name;
    // A link is not the task's own file: moving, copying or deleting what it points to
    // would reach outside the task (issue 27, finding 2: --no-backup emptied a linked folder).
    if (e.symlink)
      return Status::Invalid(JoinPath(dir, e.name) + ": is a symbolic link; reel migrate moves a task's own "
                             "files and follows no link out of it (replace the link with what it points to, "
                             "or remove it), nothing was changed");
    if (e.type == FileType::kDirectory) REEL_RETURN_IF_ERROR(ListTree(fs, JoinPath(dir, e.name), rel, out));
    else out->push_back(rel);
  }
  if (prefix.empty()) std::sort(out->begin(), out->end());
  return Status::OK();
}

Result<bool> RemoveEmptyTree(FileSystem* fs, const std::string& dir) {
  REEL_ASSIGN_OR_RETURN(auto entries, fs->ListDir(dir));
  bool empty = true;
  for (const DirEntry& e : entries) {
    if (e.type != FileType::kDirectory || e.symlink) {  // a link is left, never followed
      empty = false;
      continue;
    }
    REEL_ASSIGN_OR_RETURN(bool gone, RemoveEmptyTree(fs, JoinPath(dir, e.name)));
    empty = empty && gone;
  }
  if (!empty) return false;
  REEL_RETURN_IF_ERROR(fs->RemoveDir(dir));
  return true;
}

Status CheckSource(FileSystem* fs, const MigratePlan& plan) {
  REEL_ASSIGN_OR_RETURN(DetectedFormat format, DetectFormat(fs, plan.source));
  if (format.format != DatasetFormat::kLegacyV1_0)
    return Status::Invalid(plan.source + ": is a " + DatasetFormatName(format.format) + " dataset (" + format.version +
                           "); reel migrate converts v1.0 tasks (contract §1: no format, <task>_NNNNNN folders)");
  return Status::OK();
}

Result<bool> MigratedAlready(FileSystem* fs, const MigratePlan& plan) {
  REEL_ASSIGN_OR_RETURN(FileInfo dest, fs->Stat(plan.dest));
  if (dest.type == FileType::kNotFound && !plan.in_place) return false;
  REEL_ASSIGN_OR_RETURN(FileInfo info, fs->Stat(JoinPath(plan.dest, "meta/info.json")));
  if (info.type == FileType::kNotFound) {
    if (plan.in_place) return false;
    // A killed run's publish, decided: the lock's roll-forward finishes it.
    REEL_ASSIGN_OR_RETURN(FileInfo journal, fs->Stat(JoinPath(plan.dest, "meta/.commit-task.json")));
    if (journal.type == FileType::kFile) return false;
    // Else only temps (dotfiles) of a killed run may be there; RemoveStaleTemps takes them.
    for (const char* dir : {"data", "videos"}) {
      REEL_ASSIGN_OR_RETURN(FileInfo d, fs->Stat(JoinPath(plan.dest, dir)));
      if (d.type != FileType::kDirectory) continue;
      std::vector<std::string> files;
      REEL_RETURN_IF_ERROR(ListTree(fs, JoinPath(plan.dest, dir), dir, &files));
      for (const std::string& f : files)
        if (BaseName(f)[0] != '.')
          return Status::AlreadyExists(plan.dest + ": holds " + f + "; --to needs a new or empty directory");
    }
    return false;
  }
  REEL_ASSIGN_OR_RETURN(DetectedFormat format, DetectFormat(fs, plan.dest));
  if (format.format == DatasetFormat::kLegacyV1_0 && plan.in_place) return false;
  if (format.format != DatasetFormat::kPooledEpisodesV1)
    return Status::Invalid(plan.dest + ": is a " + DatasetFormatName(format.format) + " dataset; reel migrate "
                           "writes pooled_episodes_v1");
  if (plan.in_place) return true;
  REEL_ASSIGN_OR_RETURN(FileInfo manifest, fs->Stat(JoinPath(plan.dest, "meta/.migrate_manifest.json")));
  if (manifest.type != FileType::kFile)
    return Status::AlreadyExists(plan.dest + ": is a pooled task reel migrate did not write; --to needs a new or "
                                 "empty directory");
  return true;
}

Status FindSessions(FileSystem* fs, MigratePlan* plan) {
  plan->sessions.clear();
  REEL_ASSIGN_OR_RETURN(auto entries, fs->ListDir(plan->source));
  for (const DirEntry& e : entries) {
    if (e.type != FileType::kDirectory || SkippedFolder(e.name)) continue;
    if (e.symlink)
      return Status::Invalid(JoinPath(plan->source, e.name) + ": a session folder that is a symbolic link; "
                             "reel migrate moves a task's own files and follows no link out of it (replace the "
                             "link with the folder, or remove it), nothing was changed");
    REEL_ASSIGN_OR_RETURN(FileInfo meta, fs->Stat(JoinPath(JoinPath(plan->source, e.name), "metadata.json")));
    if (meta.type != FileType::kFile) continue;
    REEL_ASSIGN_OR_RETURN(Session s, ReadSession(fs, plan->source, e.name));
    plan->sessions.push_back(std::move(s));
  }
  if (plan->sessions.empty())
    return Status::NotFound(plan->source + ": no session folder with a metadata.json (v1.0-layout: <task>_NNNNNN/)");
  std::sort(plan->sessions.begin(), plan->sessions.end(), [](const Session& a, const Session& b) {
    return std::tie(a.source_index, a.created_at, a.name) < std::tie(b.source_index, b.created_at, b.name);
  });
  for (size_t i = 0; i < plan->sessions.size(); ++i) plan->sessions[i].n = static_cast<int64_t>(i + 1);
  if (!plan->sessions.front().task_name.empty()) plan->task_name = plan->sessions.front().task_name;
  return Status::OK();
}

Result<SessionMeta> ReadSessionMeta(FileSystem* fs, const std::string& root, const Session& s) {
  const std::string dir = JoinPath(root, s.name);
  SessionMeta out;
  REEL_ASSIGN_OR_RETURN(out.meta, ReadMetadata(fs, JoinPath(dir, "metadata.json"), /*row=*/true));
  REEL_ASSIGN_OR_RETURN(out.calibration, ReadCalibration(fs, dir, s.files));
  return out;
}

Result<Json> ReadSessionCalibration(FileSystem* fs, const std::string& root, const Session& s) {
  return ReadCalibration(fs, JoinPath(root, s.name), s.files);
}

Result<LegacyFrames> ReadLegacyFrames(FileSystem* fs, const std::string& session_dir) {
  const std::string path = JoinPath(session_dir, "timestamps.json");
  REEL_ASSIGN_OR_RETURN(FileInfo st, fs->Stat(path));
  if (st.type != FileType::kFile)
    return Status::NotSupported(path + ": missing; reel migrate takes frames and wall_time from it and does not "
                                "guess them");
  LegacyFrames out;
  {
    REEL_ASSIGN_OR_RETURN(std::string text, ReadFileBounded(fs, path, kMaxJsonBytes));
    REEL_RETURN_IF_ERROR(CheckJsonBounds(text, path, JsonLimits{kMaxJsonBytes, 64}));
    TimestampsSax sax(path, &out.frames);
    REEL_RETURN_IF_ERROR(sax.Parse(text));
  }
  REEL_RETURN_IF_ERROR(KeepFirstOfEachFrame(path, &out.frames));
  REEL_RETURN_IF_ERROR(CheckTimeOrder(path, out.frames));
  return out;
}

Result<LegacySensors> ReadLegacySensors(FileSystem* fs, const std::string& session_dir, const Session& s) {
  std::map<std::string, std::string> by_sub;  // data/<sub>/chunk-*/<file>.parquet
  for (const std::string& f : s.files) {
    const auto parts = Split(f);
    if (parts.size() != 4 || parts[0] != "data" || !EndsWith(parts[3], ".parquet")) continue;
    if (!by_sub.emplace(parts[1], f).second)
      return Status::NotSupported(JoinPath(session_dir, f) + ": a second parquet for data/" + parts[1] +
                                  "/ (" + by_sub[parts[1]] + "); v1.0 sessions hold one per sensor");
  }
  LegacySensors out;
  for (const auto& [sub, rel] : by_sub) {
    if (sub == "imu") continue;
    const std::string path = JoinPath(session_dir, rel);
    REEL_ASSIGN_OR_RETURN(auto table, ReadParquetFile(fs, path));
    // A missing column, null rows and empty lists hold no value; the v1.0 writer wrote float
    // lists, and a column of another type counts as present (reel does not guess at it).
    const auto column = table->GetColumnByName("observation." + sub);
    const bool present = column && (!HoldsFloats(*column->type()) || FirstNonZeroRow(*column));
    if (!present) {  // the v1.0 writer zero-filled a sensor that was never there (step 4)
      out.warnings.push_back(path + ": every value of observation." + sub +
                             " is 0; the sensor was absent (v1.0 zero-fills), so its column, status and stats "
                             "are not migrated");
      continue;
    }
    out.sensors.push_back(sub);
    out.tables.push_back({path, table});
  }
  auto imu = by_sub.find("imu");
  if (imu != by_sub.end()) {
    const std::string path = JoinPath(session_dir, imu->second);
    REEL_ASSIGN_OR_RETURN(auto table, ReadParquetFile(fs, path));
    out.tables.push_back({path, table});
    out.has_imu = true;
  }
  return out;
}

}  // namespace reel::internal
