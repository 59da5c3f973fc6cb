// meta/info.json: parse into InfoJson, serialize back keeping unknown keys.
#include <algorithm>
#include <cmath>

#include "util/json_util.h"
#include "reel/metadata.h"

namespace reel {

using internal::Json;

int64_t FeatureSpec::ElementCount() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<std::string> DeviceEntry::BoundColumns() const {
  std::vector<std::string> out;
  auto add = [&](const std::string& name) {
    std::string column = name.starts_with("observation.") ? name : "observation." + name;
    if (std::find(out.begin(), out.end(), column) == out.end()) out.push_back(std::move(column));
  };
  if (sensor_column) add(*sensor_column);
  for (const std::string& c : sensor_columns) add(c);
  return out;
}

std::map<std::string, std::vector<std::string>> ColumnWriters(const std::vector<DeviceEntry>& devices) {
  std::map<std::string, std::vector<std::string>> out;
  for (const DeviceEntry& d : devices)
    for (const std::string& column : d.BoundColumns()) out[column].push_back(d.key);
  return out;
}

double InfoJson::SlotFps(std::string_view slot) const {
  auto declared = [&](std::string_view s) -> std::optional<double> {
    const CameraSpec* cam = Lookup(cameras, s);
    if (!cam) return std::nullopt;
    return cam->fps && *cam->fps > 0 ? *cam->fps : fps;
  };
  if (auto own = declared(slot)) return *own;
  for (const DeviceEntry& d : devices) {
    if (std::find(d.slots.begin(), d.slots.end(), slot) == d.slots.end()) continue;
    for (const std::string& s : d.slots)
      if (auto master = declared(s)) return *master;
  }
  return fps;
}

int64_t SlotFrameOfRow(int64_t row, double task_fps, double slot_fps) {
  if (!(task_fps > 0) || !(slot_fps > 0) || slot_fps == task_fps) return row;
  // The nudge keeps an exact half (row 3 at 25/30 fps: 2.5) rounding up despite the division.
  return static_cast<int64_t>(std::floor(static_cast<double>(row) * slot_fps / task_fps + 0.5 + 1e-9));
}

int64_t SlotFramesForRows(int64_t rows, double task_fps, double slot_fps) {
  if (rows <= 0) return 0;
  if (!(task_fps > 0) || !(slot_fps > 0) || slot_fps == task_fps) return rows;
  return static_cast<int64_t>(std::floor(static_cast<double>(rows - 1) * slot_fps / task_fps + 1e-9)) + 1;
}

bool InfoJson::Has(std::string_view key) const {
  for (const auto& k : present_keys)
    if (k == key) return true;
  return false;
}

namespace {

Status WrongType(const std::string& where, const char* want, const Json& v) {
  return Status::Invalid(where + " must be " + want + ", found " + internal::JsonTypeName(v) + " " +
                         internal::Brief(v));
}

Status ParseOptionalString(const Json& obj, const char* key, const std::string& where,
                           std::optional<std::string>& out) {
  auto it = obj.find(key);
  if (it == obj.end()) return Status::OK();
  if (!it->is_string()) return WrongType(where + "." + key, "a string", *it);
  out = it->get<std::string>();
  return Status::OK();
}

Result<FeatureSpec> ParseFeature(const Json& j, const std::string& where) {
  if (!j.is_object()) return WrongType(where, "a JSON object", j);
  FeatureSpec f;
  REEL_RETURN_IF_ERROR(internal::GetString(j, "dtype", where, f.dtype));
  if (auto it = j.find("shape"); it != j.end()) {
    if (!it->is_array()) return WrongType(where + ".shape", "a list of integers", *it);
    for (const Json& d : *it) {
      if (!d.is_number_integer()) return WrongType(where + ".shape", "a list of integers", *it);
      f.shape.push_back(d.get<int64_t>());
    }
  }
  REEL_RETURN_IF_ERROR(ParseOptionalString(j, "encoding", where, f.encoding));
  if (auto it = j.find("scale"); it != j.end()) {
    if (!it->is_number()) return WrongType(where + ".scale", "a number", *it);
    f.scale = it->get<double>();
  }
  if (auto it = j.find("missing_sentinel"); it != j.end()) {
    if (!it->is_number_integer()) return WrongType(where + ".missing_sentinel", "an integer", *it);
    f.missing_sentinel = it->get<int64_t>();
  }
  REEL_RETURN_IF_ERROR(ParseOptionalString(j, "frame", where, f.frame));
  REEL_RETURN_IF_ERROR(ParseOptionalString(j, "clock", where, f.clock));
  REEL_RETURN_IF_ERROR(ParseOptionalString(j, "source_slot", where, f.source_slot));
  if (auto it = j.find("frame_axes"); it != j.end()) f.frame_axes_json = internal::Dump(*it, -1);
  if (auto it = j.find("time"); it != j.end()) f.time_json = internal::Dump(*it, -1);
  if (auto it = j.find("owner"); it != j.end()) f.owner_json = internal::Dump(*it, -1);
  return f;
}

Status ParseStringMap(const Json& obj, const char* key, const std::string& path,
                      OrderedMap<std::string>& out) {
  auto it = obj.find(key);
  if (it == obj.end()) return Status::OK();
  const std::string where = path + ": " + key;
  if (!it->is_object()) return WrongType(where, "a JSON object", *it);
  for (const auto& [k, v] : it->items()) {
    if (!v.is_string()) return WrongType(where + "[\"" + k + "\"]", "a string", v);
    out.emplace_back(k, v.get<std::string>());
  }
  return Status::OK();
}

Status ParseCameras(const Json& obj, const std::string& path, OrderedMap<CameraSpec>& out) {
  auto it = obj.find("cameras");
  if (it == obj.end()) return Status::OK();
  if (!it->is_object()) return WrongType(path + ": cameras", "a JSON object", *it);
  for (const auto& [slot, v] : it->items()) {
    const std::string where = path + ": cameras[\"" + slot + "\"]";
    if (!v.is_object()) return WrongType(where, "a JSON object {height, width}", v);
    CameraSpec c;
    REEL_RETURN_IF_ERROR(internal::GetInt(v, "height", where, c.height));
    REEL_RETURN_IF_ERROR(internal::GetInt(v, "width", where, c.width));
    if (v.contains("fps")) {
      double fps = 0;
      REEL_RETURN_IF_ERROR(internal::GetDouble(v, "fps", where, fps));
      c.fps = fps;
    }
    out.emplace_back(slot, c);
  }
  return Status::OK();
}

Status ParseDevices(const Json& obj, const std::string& path, std::vector<DeviceEntry>& out) {
  auto it = obj.find("devices");
  if (it == obj.end()) return Status::OK();
  if (!it->is_array()) return WrongType(path + ": devices", "a list of device objects", *it);
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& d = (*it)[i];
    const std::string where = path + ": devices[" + std::to_string(i) + "]";
    if (!d.is_object()) return WrongType(where, "a JSON object {key, kind, name, slots}", d);
    DeviceEntry e;
    REEL_RETURN_IF_ERROR(internal::GetString(d, "key", where, e.key));
    REEL_RETURN_IF_ERROR(internal::GetString(d, "kind", where, e.kind));
    REEL_RETURN_IF_ERROR(internal::GetString(d, "name", where, e.name));
    REEL_RETURN_IF_ERROR(internal::GetStringList(d, "slots", where, e.slots));
    REEL_RETURN_IF_ERROR(ParseOptionalString(d, "sensor_column", where, e.sensor_column));
    REEL_RETURN_IF_ERROR(internal::GetStringList(d, "sensor_columns", where, e.sensor_columns));
    if (d.contains("rig")) {
      int64_t rig = 0;
      REEL_RETURN_IF_ERROR(internal::GetInt(d, "rig", where, rig));
      e.rig = rig;
    }
    out.push_back(std::move(e));
  }
  return Status::OK();
}

// The devices list: each entry's modelled keys, over the keys it had in `old` (the same
// key's entry), so keys reel does not model (the collector's additive ones) are kept.
Json DevicesToJson(const std::vector<DeviceEntry>& devices, const Json& old) {
  Json out = Json::array();
  for (const DeviceEntry& d : devices) {
    Json j = Json::object();
    if (old.is_array())
      for (const Json& o : old)
        if (o.is_object() && o.value("key", Json()) == Json(d.key)) j = o;
    j["key"] = d.key;
    j["kind"] = d.kind;
    j["name"] = d.name;
    j["slots"] = d.slots;
    for (const char* key : {"sensor_column", "sensor_columns", "rig"}) j.erase(key);
    if (d.sensor_column) j["sensor_column"] = *d.sensor_column;
    if (!d.sensor_columns.empty()) j["sensor_columns"] = d.sensor_columns;
    if (d.rig) j["rig"] = *d.rig;
    out.push_back(std::move(j));
  }
  return out;
}

Result<Json> ParseVerbatim(const std::string& raw, const std::string& what) {
  REEL_ASSIGN_OR_RETURN(Json j, internal::ParseJson(raw, what));
  return j;
}

Result<Json> FeatureToJson(const std::string& name, const FeatureSpec& f, Json base) {
  if (!base.is_object()) base = Json::object();
  base["dtype"] = f.dtype;
  base["shape"] = f.shape;
  // Modelled keys the spec leaves out are removed, so a replaced feature never keeps a
  // stale scale or frame from the file it was read from.
  auto set_opt = [&](const char* key, const auto& opt) {
    if (opt) {
      base[key] = *opt;
    } else {
      base.erase(key);
    }
  };
  set_opt("encoding", f.encoding);
  if (f.scale) {
    base["scale"] = internal::ScaleJson(*f.scale);
  } else {
    base.erase("scale");
  }
  set_opt("missing_sentinel", f.missing_sentinel);
  set_opt("frame", f.frame);
  set_opt("clock", f.clock);
  set_opt("source_slot", f.source_slot);
  for (const auto& [key, raw] : {std::pair<const char*, const std::string&>{"frame_axes", f.frame_axes_json},
                                 {"time", f.time_json},
                                 {"owner", f.owner_json}}) {
    if (raw.empty()) {
      base.erase(key);
      continue;
    }
    REEL_ASSIGN_OR_RETURN(base[key], ParseVerbatim(raw, "features[\"" + name + "\"]." + key));
  }
  return base;
}

}  // namespace

Result<InfoJson> ParseInfoJson(std::string_view text, const std::string& path) {
  REEL_ASSIGN_OR_RETURN(Json doc, internal::ParseJson(text, path));
  if (!doc.is_object())
    return Status::Invalid(path + ": must be a JSON object, found " + internal::JsonTypeName(doc));
  InfoJson info;
  info.source_json = std::string(text);
  for (const auto& [k, v] : doc.items()) info.present_keys.push_back(k);

  REEL_RETURN_IF_ERROR(internal::GetString(doc, "format", path, info.format));
  REEL_RETURN_IF_ERROR(internal::GetInt(doc, "chunks_size", path, info.chunks_size));
  if (info.chunks_size <= 0)
    return Status::Invalid(path + ": chunks_size must be a positive integer, found " +
                           std::to_string(info.chunks_size));
  REEL_RETURN_IF_ERROR(internal::GetString(doc, "data_path", path, info.data_path));
  REEL_RETURN_IF_ERROR(internal::GetString(doc, "video_path", path, info.video_path));
  REEL_RETURN_IF_ERROR(internal::GetString(doc, "episodes_path", path, info.episodes_path));
  REEL_RETURN_IF_ERROR(internal::GetString(doc, "codebase_version", path, info.codebase_version));
  REEL_RETURN_IF_ERROR(internal::GetString(doc, "app_version", path, info.app_version));
  REEL_RETURN_IF_ERROR(internal::GetDouble(doc, "fps", path, info.fps));
  REEL_RETURN_IF_ERROR(internal::GetBool(doc, "video", path, info.video));
  REEL_RETURN_IF_ERROR(internal::GetString(doc, "task_name", path, info.task_name));

  if (auto it = doc.find("features"); it != doc.end()) {
    if (!it->is_object()) return WrongType(path + ": features", "a JSON object", *it);
    for (const auto& [name, v] : it->items()) {
      REEL_ASSIGN_OR_RETURN(FeatureSpec f, ParseFeature(v, path + ": features[\"" + name + "\"]"));
      info.features.emplace_back(name, std::move(f));
    }
  }
  REEL_RETURN_IF_ERROR(ParseCameras(doc, path, info.cameras));
  REEL_RETURN_IF_ERROR(ParseStringMap(doc, "video_extensions", path, info.video_extensions));
  REEL_RETURN_IF_ERROR(ParseDevices(doc, path, info.devices));
  REEL_RETURN_IF_ERROR(ParseStringMap(doc, "device_names", path, info.device_names));
  REEL_RETURN_IF_ERROR(internal::GetStringList(doc, "sensors", path, info.sensors));
  REEL_RETURN_IF_ERROR(internal::GetInt(doc, "sensor_dim", path, info.sensor_dim));
  if (doc.contains("created_at")) {
    double created = 0;
    REEL_RETURN_IF_ERROR(internal::GetDouble(doc, "created_at", path, created));
    info.created_at = created;
  }
  if (auto it = doc.find("calibration"); it != doc.end()) {
    if (!it->is_object()) return WrongType(path + ": calibration", "a JSON object", *it);
    info.calibration_json = internal::Dump(*it, -1);
  }
  REEL_RETURN_IF_ERROR(internal::GetInt(doc, "total_episodes", path, info.total_episodes));
  if (doc.contains("gripper_slam_frame")) {
    std::string frame;
    REEL_RETURN_IF_ERROR(internal::GetString(doc, "gripper_slam_frame", path, frame));
    info.gripper_slam_frame = frame;
  }
  REEL_RETURN_IF_ERROR(ParseStringMap(doc, "slam_frames", path, info.slam_frames));
  return info;
}

Result<std::string> SerializeInfoJson(const InfoJson& info) {
  Json doc = Json::object();
  if (!info.source_json.empty()) {
    auto parsed = internal::ParseJson(info.source_json, "info.json");
    if (parsed.ok() && parsed->is_object()) doc = *parsed;
  }
  doc["format"] = info.format.empty() ? "pooled_episodes_v1" : info.format;
  doc["chunks_size"] = info.chunks_size;
  doc["data_path"] = info.data_path;
  doc["video_path"] = info.video_path;
  doc["episodes_path"] = info.episodes_path;
  doc["codebase_version"] = info.codebase_version;
  doc["app_version"] = info.app_version;
  doc["fps"] = info.fps;
  doc["video"] = info.video;
  doc["task_name"] = info.task_name;

  Json old_features = doc.contains("features") ? doc["features"] : Json::object();
  Json features = Json::object();
  for (const auto& [name, f] : info.features) {
    REEL_ASSIGN_OR_RETURN(features[name], FeatureToJson(name, f, old_features.contains(name)
                                                                     ? old_features[name]
                                                                     : Json()));
  }
  doc["features"] = std::move(features);

  Json cameras = Json::object();
  for (const auto& [slot, c] : info.cameras) {
    Json cj = {{"height", c.height}, {"width", c.width}};
    if (c.fps) cj["fps"] = *c.fps;
    cameras[slot] = std::move(cj);
  }
  doc["cameras"] = std::move(cameras);
  Json exts = Json::object();
  for (const auto& [slot, ext] : info.video_extensions) exts[slot] = ext;
  doc["video_extensions"] = std::move(exts);
  doc["devices"] = DevicesToJson(info.devices, doc.contains("devices") ? doc["devices"] : Json());
  Json names = Json::object();
  for (const auto& [slot, name] : info.device_names) names[slot] = name;
  doc["device_names"] = std::move(names);
  doc["sensors"] = info.sensors;
  doc["sensor_dim"] = info.sensor_dim;
  if (info.created_at) doc["created_at"] = *info.created_at;
  REEL_ASSIGN_OR_RETURN(doc["calibration"],
                        ParseVerbatim(info.calibration_json.empty() ? "{}" : info.calibration_json,
                                      "calibration"));
  doc["total_episodes"] = info.total_episodes;
  if (info.gripper_slam_frame) {
    doc["gripper_slam_frame"] = *info.gripper_slam_frame;
  } else {
    doc.erase("gripper_slam_frame");
  }
  if (!info.slam_frames.empty()) {
    Json frames = Json::object();
    for (const auto& [col, frame] : info.slam_frames) frames[col] = frame;
    doc["slam_frames"] = std::move(frames);
  }
  // The writer's bound is the readers' (issue 27 finding 6): an info.json nested past 64
  // levels (a feature spec 61 deep under "features") or over 64 MiB would leave the task
  // unreadable by every command, so it is refused before it is written.
  std::string text = internal::Dump(doc, 2) + "\n";
  REEL_RETURN_IF_ERROR(CheckJsonBounds(text, "meta/info.json (as it would be written)"));
  return text;
}

}  // namespace reel
