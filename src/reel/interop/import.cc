// ImportDataset (reel/interop.h): LeRobot or bundle episodes into a pooled task, each
// published by one EpisodeTransaction (write/transaction.h), in four steps: plan (the
// source, its tasks, its timestamps), table (the pooled rows), videos, commit.
#include <arrow/api.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>

#include "interop/export_internal.h"
#include "read/episode_index.h"
#include "video/video_concat.h"
#include "layout/confined.h"
#include "io/same_bytes.h"
#include "util/json_util.h"
#include "reel/columns.h"
#include "reel/dataset.h"
#include "reel/interop.h"
#include "reel/layout.h"
#include "reel/merge.h"
#include "write/episode_stats.h"
#include "write/task_files.h"
#include "write/transaction.h"
#include "io/json_file.h"

namespace reel {
namespace {

using internal::Json;
using internal::Pad;

// ---- columns ------------------------------------------------------------------------------

// The values of a numeric column with one vector of `width` per row (scalar,
// fixed-size list or list), as its flat primitive array. Invalid when a row has
// another length.
Result<std::shared_ptr<arrow::Array>> FlatValues(const arrow::ChunkedArray& column, int64_t width,
                                                 const std::string& what) {
  auto combined = arrow::Concatenate(column.chunks());
  if (!combined.ok()) return Status::IOError(what + ": " + combined.status().ToString());
  std::shared_ptr<arrow::Array> a = *combined;
  switch (a->type_id()) {
    case arrow::Type::FIXED_SIZE_LIST: {
      auto f = std::static_pointer_cast<arrow::FixedSizeListArray>(a);
      if (f->list_type()->list_size() != width) {
        return Status::Invalid(what + ": " + std::to_string(f->list_type()->list_size()) +
                               " values per row, expected " + std::to_string(width));
      }
      return f->values()->Slice(f->offset() * width, f->length() * width);
    }
    case arrow::Type::LIST: {
      auto l = std::static_pointer_cast<arrow::ListArray>(a);
      for (int64_t i = 0; i < l->length(); ++i) {
        if (l->value_length(i) != width) {
          return Status::Invalid(what + ": row " + std::to_string(i) + " has " +
                                 std::to_string(l->value_length(i)) + " values, expected " +
                                 std::to_string(width));
        }
      }
      return l->values()->Slice(l->value_offset(0), l->length() * width);
    }
    default:
      if (width != 1) return Status::Invalid(what + ": a scalar column where " + std::to_string(width) + " values were expected");
      return a;
  }
}

// `values` (n * width) as the pooled column: a scalar, or fixed_size_list[width].
std::shared_ptr<arrow::Array> AsPooled(std::shared_ptr<arrow::Array> values, int64_t width, bool fixed) {
  if (!fixed) return values;
  const int64_t n = values->length() / width;
  return std::make_shared<arrow::FixedSizeListArray>(
      arrow::fixed_size_list(values->type(), static_cast<int32_t>(width)), n, values);
}

// Arrow type of a pooled element named as Arrow prints it ("float", "double", "int64", ...).
std::shared_ptr<arrow::DataType> ElementOf(const std::string& type) {
  std::string e = type;
  if (auto p = type.find("element: "); p != std::string::npos) {
    e = type.substr(p + 9, type.find('>', p) - p - 9);
  }
  static const std::map<std::string, std::shared_ptr<arrow::DataType>> kTypes = {
      {"float", arrow::float32()}, {"double", arrow::float64()}, {"int8", arrow::int8()},
      {"int16", arrow::int16()},   {"int32", arrow::int32()},    {"int64", arrow::int64()},
      {"uint8", arrow::uint8()},   {"uint16", arrow::uint16()},  {"uint32", arrow::uint32()},
      {"uint64", arrow::uint64()}, {"halffloat", arrow::float16()}};
  auto it = kTypes.find(e);
  return it == kTypes.end() ? arrow::float32() : it->second;
}

template <typename Out>
std::shared_ptr<arrow::Array> CastFloats(const arrow::FloatArray& in, int64_t start, int64_t stride,
                                         int64_t width, int64_t n) {
  typename arrow::TypeTraits<Out>::BuilderType b;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < width; ++k) {
      (void)b.Append(static_cast<typename Out::c_type>(in.Value(i * stride + start + k)));
    }
  }
  std::shared_ptr<arrow::Array> out;
  (void)b.Finish(&out);
  return out;
}

// Columns `width`-wide slices of a float32 concat feature, as `element`.
std::shared_ptr<arrow::Array> SliceConcat(const arrow::FloatArray& values, int64_t start, int64_t stride,
                                          int64_t width, int64_t n, const arrow::DataType& element) {
  switch (element.id()) {
    case arrow::Type::DOUBLE: return CastFloats<arrow::DoubleType>(values, start, stride, width, n);
    case arrow::Type::INT8: return CastFloats<arrow::Int8Type>(values, start, stride, width, n);
    case arrow::Type::INT16: return CastFloats<arrow::Int16Type>(values, start, stride, width, n);
    case arrow::Type::INT32: return CastFloats<arrow::Int32Type>(values, start, stride, width, n);
    case arrow::Type::INT64: return CastFloats<arrow::Int64Type>(values, start, stride, width, n);
    default: return CastFloats<arrow::FloatType>(values, start, stride, width, n);
  }
}

std::shared_ptr<arrow::Array> Int64Column(int64_t n, const std::function<int64_t(int64_t)>& at) {
  arrow::Int64Builder b;
  for (int64_t i = 0; i < n; ++i) (void)b.Append(at(i));
  std::shared_ptr<arrow::Array> out;
  (void)b.Finish(&out);
  return out;
}

struct PooledColumns {
  arrow::FieldVector fields;
  std::vector<std::shared_ptr<arrow::Array>> arrays;
  void Add(const std::string& name, std::shared_ptr<arrow::Array> a) {
    fields.push_back(arrow::field(name, a->type(), /*nullable=*/false));
    arrays.push_back(std::move(a));
  }
  std::shared_ptr<arrow::Table> Table(int64_t n) const {
    return arrow::Table::Make(arrow::schema(fields), arrays, n);
  }
};

// The source column `key`, or an error naming the file.
Result<std::shared_ptr<arrow::ChunkedArray>> Column(const arrow::Table& t, const std::string& key,
                                                    const std::string& where) {
  auto c = t.GetColumnByName(key);
  if (!c) return Status::NotFound(where + ": no column '" + key + "'");
  return c;
}

// ---- round trip of reel's own exports -----------------------------------------------------

Status AddRoundTripColumns(const Json& block, const arrow::Table& frames, const std::string& where,
                           PooledColumns* out) {
  const int64_t n = frames.num_rows();
  for (const Json& f : block.value("features", Json::array())) {
    const std::string key = f.value("key", "");
    const std::string source = f.value("source", "");
    const auto columns = f.value("columns", std::vector<std::string>{});
    const auto widths = f.value("widths", std::vector<int64_t>{});
    const auto types = f.value("pooled_types", std::vector<std::string>{});
    // The sidecar holds the list column itself ("last"), or the pooled column an aligned
    // feature was paired, decoded or reordered from ("aligned").
    if (source == "last" || source == "aligned") continue;
    if (columns.empty() || widths.size() != columns.size() || types.size() != columns.size()) {
      return Status::Invalid(where + ": reel block feature '" + key + "' lacks columns/widths/pooled_types");
    }
    REEL_ASSIGN_OR_RETURN(auto column, Column(frames, key, where));
    if (source == "string") {
      auto a = arrow::Concatenate(column->chunks());
      if (!a.ok()) return Status::IOError(where + ": " + a.status().ToString());
      out->Add(columns[0], *a);
      continue;
    }
    int64_t total = 0;
    for (int64_t w : widths) total += w;
    REEL_ASSIGN_OR_RETURN(auto values, FlatValues(*column, total, where + ": " + key));
    if (source == "concat") {
      if (values->type_id() != arrow::Type::FLOAT) {
        return Status::Invalid(where + ": " + key + " must be float32, found " + values->type()->ToString());
      }
      const auto& floats = static_cast<const arrow::FloatArray&>(*values);
      int64_t at = 0;
      for (size_t c = 0; c < columns.size(); ++c) {
        const bool fixed = types[c].rfind("fixed_size_list", 0) == 0;
        auto part = SliceConcat(floats, at, total, widths[c], n, *ElementOf(types[c]));
        out->Add(columns[c], AsPooled(part, widths[c], fixed));
        at += widths[c];
      }
    } else {  // "column": exact values, the pooled shape back
      const bool fixed = types[0].rfind("fixed_size_list", 0) == 0;
      out->Add(columns[0], AsPooled(values, widths[0], fixed));
    }
  }
  return Status::OK();
}

// ---- any other dataset --------------------------------------------------------------------

// The video slot a foreign camera key becomes: the key without its image prefix.
std::string SlotOf(const std::string& key) {
  std::string slot = key;
  for (const char* prefix : {"observation.images.", "observation.depth.", "observation.image."}) {
    if (slot.rfind(prefix, 0) == 0) {
      slot = slot.substr(std::string(prefix).size());
      break;
    }
  }
  // A slot name as the collector cleans one (multi-device §2.4): case and CJK kept.
  return SlotBase(slot, "camera");
}

// `values` (n * width) as a list column of one sample a row: list<fixed_size_list
// [width]> when `fixed_samples` (IMU), else a flat list of `width` values a row.
Result<std::shared_ptr<arrow::Array>> OneSamplePerRow(const std::shared_ptr<arrow::Array>& values, int64_t width,
                                                      bool fixed_samples, const std::string& what) {
  const int64_t n = values->length() / width;
  std::shared_ptr<arrow::Array> items = values;
  int64_t step = width;
  if (fixed_samples) {
    items = std::make_shared<arrow::FixedSizeListArray>(
        arrow::fixed_size_list(values->type(), static_cast<int32_t>(width)), n, values);
    step = 1;
  }
  arrow::Int32Builder offsets;
  for (int64_t i = 0; i <= n; ++i) (void)offsets.Append(static_cast<int32_t>(i * step));
  std::shared_ptr<arrow::Array> off;
  (void)offsets.Finish(&off);
  auto list = arrow::ListArray::FromArrays(*off, *items);
  if (!list.ok()) return Status::IOError(what + ": " + list.status().ToString());
  return std::static_pointer_cast<arrow::Array>(*list);
}

Status AddGenericColumns(const ForeignInfo& info, const arrow::Table& frames, const std::string& where,
                         InfoJson* decl, PooledColumns* out, std::vector<std::string>* warnings) {
  for (int c = 0; c < frames.num_columns(); ++c) {
    const std::string name = frames.field(c)->name();
    if (name == "index" || name == "episode_index" || name == "frame_index" || name == "task_index" ||
        name == "timestamp" || name == "step") {
      continue;  // bookkeeping, rebuilt by the caller
    }
    auto it = info.features.find(name);
    std::vector<int64_t> shape = it != info.features.end() ? it->second.shape : std::vector<int64_t>{1};
    int64_t width = 1;
    for (int64_t d : shape) width *= d;
    const auto& type = *frames.field(c)->type();
    if (type.id() == arrow::Type::STRING || type.id() == arrow::Type::LARGE_STRING) {
      auto a = arrow::Concatenate(frames.column(c)->chunks());
      if (!a.ok()) return Status::IOError(where + ": " + a.status().ToString());
      out->Add(name, *a);
      continue;
    }
    const bool fixed = type.id() == arrow::Type::FIXED_SIZE_LIST || type.id() == arrow::Type::LIST;
    if (!fixed && !arrow::is_integer(type.id()) && !arrow::is_floating(type.id())) {
      warnings->push_back(where + ": column '" + name + "' (" + type.ToString() + ") has no pooled form; left out");
      continue;
    }
    REEL_ASSIGN_OR_RETURN(auto values, FlatValues(*frames.column(c), width, where + ": " + name));
    if (!arrow::is_integer(values->type_id()) && !arrow::is_floating(values->type_id())) {
      warnings->push_back(where + ": column '" + name + "' holds " + values->type()->ToString() +
                          "; left out");
      continue;
    }
    // The pooled `action` is a float32[1] placeholder (contract §5): a real action
    // keeps its values under lerobot_action (`reel export --action lerobot_action`
    // puts it back).
    const std::string pooled_name = name == "action" ? "lerobot_action" : name;
    const ColumnFamily family = ClassifyColumn(pooled_name, {});
    if (family == ColumnFamily::kKeyInt64 || family == ColumnFamily::kWallTime) {
      out->Add(pooled_name, values);  // a key column (hardware_ns, wall_time, ...): never a feature
      continue;
    }
    // A one-value list (a bundle's `list<T>` of shape [1]) is a scalar, unless the
    // pooled family is a one-value vector itself (the action placeholder's shape).
    const bool vector = fixed && !(width == 1 && family != ColumnFamily::kUnknown &&
                                   !HasFamilyType(family, 256, *arrow::fixed_size_list(values->type(), 1)));
    std::shared_ptr<arrow::Array> column = AsPooled(values, width, vector);
    if (family == ColumnFamily::kImuSamples || family == ColumnFamily::kImuTimestamps ||
        family == ColumnFamily::kSlamPoints || family == ColumnFamily::kSlamStamps) {
      // A per-frame vector under a pooled list family's name (IMU samples, SLAM
      // points, their stamps): one sample per frame, as that family's list.
      REEL_ASSIGN_OR_RETURN(column, OneSamplePerRow(values, width, family == ColumnFamily::kImuSamples,
                                                    where + ": " + name));
    }
    out->Add(pooled_name, column);
    FeatureSpec spec;
    spec.dtype = it != info.features.end() ? it->second.dtype : "float32";
    spec.shape = shape;
    decl->features.emplace_back(pooled_name, std::move(spec));
  }
  // The contract's key columns: LeRobot has no wall clock or device clock, so both
  // count from the import on the frames' own timestamps.
  const int64_t n = frames.num_rows();
  const double t0 = decl->created_at.value_or(0);
  auto ts = out->arrays.size() > 2 ? out->arrays[2] : nullptr;  // episode_index, frame_index, timestamp
  if (!ts || ts->type_id() != arrow::Type::FLOAT) return Status::Invalid(where + ": no timestamp");
  const auto& seconds = static_cast<const arrow::FloatArray&>(*ts);
  arrow::DoubleBuilder wall;
  arrow::Int64Builder hw;
  arrow::FloatBuilder action;
  for (int64_t i = 0; i < n; ++i) {
    (void)wall.Append(t0 + seconds.Value(i));
    (void)hw.Append(std::llround(static_cast<double>(seconds.Value(i)) * 1e9));
    (void)action.Append(0.0f);
  }
  std::shared_ptr<arrow::Array> a;
  auto has = [&](const char* name) {
    for (const auto& f : out->fields) {
      if (f->name() == name) return true;
    }
    return false;
  };
  (void)wall.Finish(&a);
  if (!has("wall_time")) out->Add("wall_time", a);
  (void)hw.Finish(&a);
  if (!has("hardware_ns")) out->Add("hardware_ns", a);
  (void)action.Finish(&a);
  out->Add("action", AsPooled(a, 1, true));
  FeatureSpec placeholder;
  placeholder.dtype = "float32";
  placeholder.shape = {1};
  decl->features.emplace_back("action", std::move(placeholder));
  return Status::OK();
}

// The timestamp column (LeRobot float32 seconds, bundle int64 ns) as pooled float32 seconds.
Result<std::shared_ptr<arrow::Array>> TimestampSeconds(const arrow::Table& frames, const std::string& where) {
  auto ts = frames.GetColumnByName("timestamp");
  if (!ts) return Status::NotFound(where + ": no timestamp column");
  auto flat = arrow::Concatenate(ts->chunks());
  if (!flat.ok()) return Status::IOError(where + ": " + flat.status().ToString());
  const arrow::Array& a = **flat;
  arrow::FloatBuilder b;
  for (int64_t k = 0; k < a.length(); ++k) {
    double seconds = 0;
    switch (a.type_id()) {
      case arrow::Type::INT64: seconds = static_cast<double>(static_cast<const arrow::Int64Array&>(a).Value(k)) / 1e9; break;
      case arrow::Type::FLOAT: seconds = static_cast<const arrow::FloatArray&>(a).Value(k); break;
      case arrow::Type::DOUBLE: seconds = static_cast<const arrow::DoubleArray&>(a).Value(k); break;
      default: return Status::Invalid(where + ": timestamp is " + a.type()->ToString());
    }
    (void)b.Append(static_cast<float>(seconds));
  }
  std::shared_ptr<arrow::Array> out;
  (void)b.Finish(&out);
  return out;
}

// ---- videos -------------------------------------------------------------------------------

// One episode's camera as an .mp4 of its own: stream copy, or (RGB only) decoded
// and encoded again when the copy cannot start there.
// The source is read through `in_fs`, `out` written through `fs`; it is synced when this
// returns.
Result<bool> ImportVideo(FileSystem* in_fs, FileSystem* fs, const ForeignDataset& ds, const ForeignEpisode& ep,
                         const VideoSpan& span, bool depth, double fps, const std::string& out) {
  // The source's own metadata names span.path: it must stay inside the source, through no
  // link (issue 27), or an import would copy bytes from elsewhere into the target.
  REEL_RETURN_IF_ERROR(internal::CheckBeneath(in_fs, ds.root(), span.path, ds.root() + " (import source)"));
  const std::string input = JoinPath(ds.root(), span.path);
  REEL_ASSIGN_OR_RETURN(bool copyable, internal::CopyableToMp4(input, in_fs));
  if (copyable) {
    Status st = internal::CopySegment(in_fs, input, span.from_timestamp, ep.length, fs, out);
    if (st.ok()) st = fs->SyncFile(out);
    if (st.ok()) return false;
    if (st.code() != StatusCode::kNotSupported || depth) return st;
  } else if (depth) {
    return Status::NotSupported(input + ": a depth stream that cannot be copied into .mp4");
  }
  std::vector<int64_t> rows(static_cast<size_t>(ep.length));
  for (int64_t i = 0; i < ep.length; ++i) rows[i] = i;
  VideoInfo info;
  std::vector<uint8_t> rgb;
  REEL_RETURN_IF_ERROR(ds.ReadVideoRgb(ep, span.key, rows, &info, &rgb));
  VideoEncoderOptions o;
  o.width = info.width;
  o.height = info.height;
  o.fps = fps;
  o.crf = 18;
  o.threads = 0;
  o.fs = fs;
  o.sync_on_finish = true;
  REEL_ASSIGN_OR_RETURN(auto enc, VideoEncoder::Open(out, o));
  const size_t frame = static_cast<size_t>(info.width) * info.height * 3;
  for (int64_t i = 0; i < ep.length; ++i) {
    REEL_RETURN_IF_ERROR(enc->AddRgb({rgb.data() + i * frame, frame}));
  }
  REEL_RETURN_IF_ERROR(enc->Finish());
  return true;
}

// LeRobot finds frame i of an episode at from_timestamp + timestamp[i]; reel cuts
// the episode's frames out by count, so row i must be frame i: timestamp[i] =
// i / fps within LeRobot's own tolerance (1e-4 s), else the mapping would be
// silently wrong (lerobot-and-daft.md).
Status CheckLeRobotTimestamps(const arrow::Table& frames, double fps, const std::string& where,
                              int64_t episode_index) {
  auto ts = frames.GetColumnByName("timestamp");
  if (!ts) return Status::NotFound(where + ": episode " + std::to_string(episode_index) + " has no timestamp column");
  auto flat = arrow::Concatenate(ts->chunks());
  if (!flat.ok()) return Status::IOError(where + ": " + flat.status().ToString());
  const auto& a = **flat;
  for (int64_t i = 0; i < a.length(); ++i) {
    double t = 0;
    if (a.type_id() == arrow::Type::FLOAT) t = static_cast<const arrow::FloatArray&>(a).Value(i);
    else if (a.type_id() == arrow::Type::DOUBLE) t = static_cast<const arrow::DoubleArray&>(a).Value(i);
    else return Status::Invalid(where + ": timestamp is " + a.type()->ToString() + ", not float seconds");
    const double want = static_cast<double>(i) / fps;
    if (std::fabs(t - want) > 1e-4) {
      return Status::Invalid(where + ": episode " + std::to_string(episode_index) + " row " + std::to_string(i) +
                             " has timestamp " + std::to_string(t) + " s, but frame " + std::to_string(i) +
                             " is at " + std::to_string(want) + " s (tolerance 1e-4 s); row i must be frame i");
    }
  }
  return Status::OK();
}

// The "reel" block is read with typed accessors that would throw on a wrong type:
// every key the import uses is checked first, so a damaged block is an error that
// names the file and the key, never a crash.
Status ValidateReelBlock(const Json& block, const std::string& path) {
  auto bad = [&](const std::string& what) {
    return Status::Invalid(path + ": \"reel\" block: " + what + " (not written by reel, or damaged)");
  };
  auto array_of = [&](const char* key, const std::function<bool(const Json&)>& ok) -> Status {
    if (!block.contains(key)) return Status::OK();
    if (!block[key].is_array()) return bad(std::string(key) + " must be an array");
    for (const Json& item : block[key]) {
      if (!ok(item)) return bad(std::string(key) + " has an item of the wrong shape: " + internal::Brief(item));
    }
    return Status::OK();
  };
  auto strings = [](const Json& j, const char* key) {
    if (!j.contains(key)) return true;
    if (!j[key].is_array()) return false;
    for (const Json& x : j[key]) {
      if (!x.is_string()) return false;
    }
    return true;
  };
  auto typed = [](const Json& j, const char* key, bool (Json::*is)() const noexcept) {
    return !j.contains(key) || (j[key].*is)();
  };
  REEL_RETURN_IF_ERROR(array_of("pooled_episode_index", [](const Json& j) { return j.is_number_integer(); }));
  REEL_RETURN_IF_ERROR(array_of("pooled_tasks", [&](const Json& j) {
    return j.is_object() && typed(j, "task", &Json::is_string) && typed(j, "task_index", &Json::is_number_integer);
  }));
  REEL_RETURN_IF_ERROR(array_of("cameras", [&](const Json& j) {
    return j.is_object() && typed(j, "key", &Json::is_string) && typed(j, "depth", &Json::is_boolean);
  }));
  REEL_RETURN_IF_ERROR(array_of("features", [&](const Json& j) {
    if (!j.is_object() || !typed(j, "key", &Json::is_string) || !typed(j, "source", &Json::is_string)) return false;
    if (!strings(j, "columns") || !strings(j, "pooled_types")) return false;
    if (j.contains("widths")) {
      if (!j["widths"].is_array()) return false;
      for (const Json& w : j["widths"]) {
        if (!w.is_number_integer() || w.get<int64_t>() < 1) return false;
      }
    }
    return true;
  }));
  REEL_RETURN_IF_ERROR(array_of("pooled_rows", [&](const Json& j) {
    if (!j.is_object()) return false;
    for (const char* k : {"drop_stats", "video_codec", "calibration", "force_matrix_specs", "slam_specs"}) {
      if (!typed(j, k, &Json::is_string)) return false;
    }
    return typed(j, "created_at", &Json::is_number) && typed(j, "duration_sec", &Json::is_number) &&
           typed(j, "task_index", &Json::is_number_integer);
  }));
  if (block.contains("pooled_info") && !block["pooled_info"].is_object()) return bad("pooled_info must be an object");
  return Status::OK();
}

Result<Json> ReelBlock(FileSystem* fs, const ForeignDataset& ds) {
  const bool bundle = ds.info().format == DatasetFormat::kBundle;
  const std::string path = JoinPath(ds.root(), bundle ? "manifest.json" : "meta/info.json");
  REEL_ASSIGN_OR_RETURN(Json doc, internal::ReadJsonFile(fs, path));
  if (!doc.is_object() || !doc.contains("reel") || !doc["reel"].is_object()) return Json();
  const Json& block = doc["reel"];
  if (!block.contains("source_format") || block["source_format"] != "pooled_episodes_v1") return Json();
  REEL_RETURN_IF_ERROR(ValidateReelBlock(block, path));
  return block;
}

// ---- already present --------------------------------------------------------------
//
// An imported episode is already present when the target holds an episode with the
// same rows (every data column but episode_index and wall_time: names, types, values, in
// order) and, slot for slot, byte-identical videos.

// The columns compared: all but episode_index (the target's own number) and wall_time
// (an import of a dataset without one stamps the import's clock + timestamp).
std::shared_ptr<arrow::Table> Comparable(std::shared_ptr<arrow::Table> t) {
  for (const char* name : {"episode_index", "wall_time"}) {
    const int i = t->schema()->GetFieldIndex(name);
    if (i < 0) continue;
    auto removed = t->RemoveColumn(i);
    if (removed.ok()) t = *removed;
  }
  return t;
}

// `videos`: slot -> the file this import wrote for it.
Result<bool> SameEpisode(const Task& target, const EpisodeEntry& e, const std::shared_ptr<arrow::Table>& rows,
                         const std::map<std::string, std::string>& videos) {
  // Both tables come through the same parquet reader: types compare like for like.
  if (e.data_path.empty() || e.videos.size() != videos.size()) return false;
  for (const auto& [slot, path] : e.videos) {
    auto it = videos.find(slot);
    if (it == videos.end()) return false;
    REEL_ASSIGN_OR_RETURN(bool same, internal::SameBytes(target.fs(), target.Path(path), it->second));
    if (!same) return false;
  }
  REEL_ASSIGN_OR_RETURN(auto existing, target.ReadData(e));
  if (existing->num_rows() != rows->num_rows()) return false;
  return Comparable(existing)->Equals(*Comparable(rows), /*check_metadata=*/false);
}

// "slot=size\n" per video, in slot order: equal for byte-identical videos, and cheap to
// learn for a target episode (one stat per file, StatMany per directory).
std::string SizesKey(const std::vector<std::pair<std::string, uint64_t>>& sizes) {
  std::string key;
  for (const auto& [slot, size] : sizes) key += slot + "=" + std::to_string(size) + "\n";
  return key;
}

// The target's episodes for FindIdentical, listed once per import (when the target first
// has an info.json) and kept up to date with the episodes the import commits: the import
// holds the task lock, so no other writer adds or removes one meanwhile. Candidates are the
// episodes of the same length whose videos have the same sizes; the sizes of one length's
// episodes are stat-ed once, when an imported episode of that length first asks. So a run
// of imported episodes costs one listing and one stat per video of the lengths it meets,
// not a listing and a comparison with every episode of its length each (issue 31).
struct TargetEpisodes {
  std::unique_ptr<Task> task;
  std::map<int64_t, EpisodeEntry> entries;   // by N
  std::multimap<int64_t, int64_t> by_length;  // length -> N
  std::map<int64_t, std::multimap<std::string, int64_t>> by_sizes;  // length -> SizesKey -> N

  Status Load(FileSystem* fs, const std::string& task_root) {
    REEL_ASSIGN_OR_RETURN(task, Task::Open(task_root, {.fs = fs, .io_threads = 1}));
    REEL_ASSIGN_OR_RETURN(auto episodes, task->ListEpisodes());
    REEL_RETURN_IF_ERROR(task->VisitEpisodeRows(episodes, {"length"}, [&](size_t first, auto lengths) {
      for (size_t i = 0; i < lengths.size(); ++i)
        if (lengths[i].ok()) by_length.emplace(lengths[i]->length, episodes[first + i].episode_index);
      return Status::OK();
    }));
    for (EpisodeEntry& e : episodes) entries.emplace(e.episode_index, std::move(e));
    return Status::OK();
  }

  // The SizesKey of each of `numbers` (their videos stat-ed together); "" for a video gone.
  std::vector<std::string> KeysOf(const std::vector<int64_t>& numbers) const {
    std::vector<std::string> paths;
    for (int64_t n : numbers)
      for (const auto& [slot, rel] : entries.at(n).videos) paths.push_back(rel);
    const auto stamps = internal::StampAll(task->fs(), task->root(), paths, 2);
    std::vector<std::string> keys;
    size_t k = 0;
    for (int64_t n : numbers) {
      std::vector<std::pair<std::string, uint64_t>> sizes;
      bool whole = true;
      for (const auto& [slot, rel] : entries.at(n).videos) {
        whole = whole && stamps[k].has_value();
        sizes.emplace_back(slot, stamps[k] ? stamps[k]->size : 0);
        ++k;
      }
      keys.push_back(whole ? SizesKey(sizes) : "");
    }
    return keys;
  }

  // Episodes of `length` whose videos have the sizes `key`.
  std::vector<int64_t> Candidates(int64_t length, const std::string& key) {
    auto bucket = by_sizes.find(length);
    if (bucket == by_sizes.end()) {
      std::vector<int64_t> numbers;
      auto [from, to] = by_length.equal_range(length);
      for (auto it = from; it != to; ++it) numbers.push_back(it->second);
      const std::vector<std::string> keys = KeysOf(numbers);
      bucket = by_sizes.emplace(length, std::multimap<std::string, int64_t>{}).first;
      for (size_t i = 0; i < numbers.size(); ++i) bucket->second.emplace(keys[i], numbers[i]);
    }
    std::vector<int64_t> out;
    auto [from, to] = bucket->second.equal_range(key);
    for (auto it = from; it != to; ++it) out.push_back(it->second);
    return out;
  }

  void Add(EpisodeEntry e, int64_t length) {
    if (!task) return;  // not loaded yet: the first lookup lists the episode
    const int64_t n = e.episode_index;
    by_length.emplace(length, n);
    entries[n] = std::move(e);
    if (auto bucket = by_sizes.find(length); bucket != by_sizes.end()) bucket->second.emplace(KeysOf({n})[0], n);
  }
};

// The number of a target episode identical to the one written to `data_file` and
// `videos`, or -1. `first` (when >= 1) is tried before the other candidates.
Result<int64_t> FindIdentical(FileSystem* fs, const std::string& task_root, int64_t first,
                              const std::string& data_file, const std::map<std::string, std::string>& videos,
                              TargetEpisodes* target) {
  if (!target->task) {
    if (fs->Stat(JoinPath(task_root, internal::kInfoPath)).ValueOr(FileInfo{}).type != FileType::kFile) return -1;
    REEL_RETURN_IF_ERROR(target->Load(fs, task_root));
  }
  REEL_ASSIGN_OR_RETURN(auto rows, ReadParquetFile(fs, data_file));
  std::vector<std::pair<std::string, uint64_t>> sizes;
  for (const auto& [slot, temp] : videos) {
    REEL_ASSIGN_OR_RETURN(FileInfo info, fs->Stat(temp));
    sizes.emplace_back(slot, info.size);
  }
  std::vector<const EpisodeEntry*> candidates;
  if (auto it = target->entries.find(first); it != target->entries.end()) candidates.push_back(&it->second);
  for (int64_t n : target->Candidates(rows->num_rows(), SizesKey(sizes)))
    if (n != first) candidates.push_back(&target->entries.at(n));
  for (const EpisodeEntry* e : candidates) {
    REEL_ASSIGN_OR_RETURN(bool same, SameEpisode(*target->task, *e, rows, videos));
    if (same) return e->episode_index;
  }
  return -1;
}

void ReportImported(const ImportOptions& options, size_t done, size_t total, int64_t source_index) {
  if (options.progress)
    options.progress({"episodes imported", static_cast<int64_t>(done), static_cast<int64_t>(total),
                      "source episode " + std::to_string(source_index)});
}

// ---- plan: what every episode of one import shares ----------------------------------------

struct ImportPlan {
  FileSystem* source_fs = nullptr;  // the dataset is read through it (ImportOptions::source_fs)
  std::string source, task_root, task_name;
  std::unique_ptr<ForeignDataset> ds;
  std::vector<ForeignEpisode> episodes;
  Json block;  // the source's "reel" block (an export of reel's), else null
  bool round_trip = false, bundle = false;
  double fps = 0;
  std::vector<std::string> source_tasks;          // tasks.jsonl lines to write (task_index = position)
  std::map<std::string, int64_t> target_tasks;    // the target's own tasks, once it has them
  std::map<std::string, bool> depth_keys;         // round trip: camera key -> depth
  TargetEpisodes target;                          // for FindIdentical, listed once

  // The pooled task_index of `task`: the target's own when it has tasks, else the source's.
  Result<int64_t> PooledTaskOf(const std::string& task) const {
    if (target_tasks.empty()) {
      auto it = std::find(source_tasks.begin(), source_tasks.end(), task);
      if (it != source_tasks.end()) return static_cast<int64_t>(it - source_tasks.begin());
      return Status::Invalid(source + ": episode task \"" + task + "\" is not in the dataset's tasks");
    }
    auto it = target_tasks.find(task);
    if (it == target_tasks.end())
      return Status::AlreadyExists(task_root + "/meta/tasks.jsonl: has no task \"" + task +
                                   "\"; reel never rewrites an existing tasks.jsonl (import into a new task)");
    return it->second;
  }
  // tasks.jsonl for a new target (written only when the target has none).
  std::string TasksJsonl() const {
    if (source_tasks.empty()) return "{\"task_index\": 0, \"task\": " + internal::Dump(Json(task_name), -1) + "}\n";
    std::string out;
    for (size_t i = 0; i < source_tasks.size(); ++i)
      out += "{\"task_index\": " + std::to_string(i) + ", \"task\": " + internal::Dump(Json(source_tasks[i]), -1) + "}\n";
    return out;
  }
  // After the first commit the target holds the tasks TasksJsonl() wrote.
  void TargetNowHasTasks() {
    if (!target_tasks.empty()) return;
    for (size_t t = 0; t < source_tasks.size(); ++t) target_tasks.emplace(source_tasks[t], static_cast<int64_t>(t));
    if (source_tasks.empty()) target_tasks.emplace(task_name, 0);
  }
};

// Opens the source (through `fs`, the source's) and checks every episode's timestamps
// against the frame grid, so a dataset that would be cut wrongly is refused before
// anything is written.
Result<ImportPlan> PlanImport(FileSystem* fs, const std::string& source, const std::string& task_root,
                              const ImportOptions& options) {
  ImportPlan plan;
  plan.source_fs = fs;
  plan.source = source;
  plan.task_root = task_root;
  REEL_ASSIGN_OR_RETURN(plan.ds, ForeignDataset::Open(source, {fs}));
  REEL_ASSIGN_OR_RETURN(plan.episodes, plan.ds->ReadEpisodes());
  REEL_ASSIGN_OR_RETURN(plan.block, ReelBlock(fs, *plan.ds));
  const ForeignInfo& finfo = plan.ds->info();
  plan.round_trip = plan.block.is_object();
  plan.bundle = finfo.format == DatasetFormat::kBundle;
  plan.fps = finfo.fps;
  plan.task_name = options.task_name;
  if (plan.task_name.empty()) {
    std::filesystem::path p = std::filesystem::absolute(task_root).lexically_normal();
    if (p.filename().empty()) p = p.parent_path();
    plan.task_name = p.filename().string();
  }
  if (plan.round_trip) {
    for (const Json& t : plan.block.value("pooled_tasks", Json::array())) plan.source_tasks.push_back(t.value("task", ""));
    for (const Json& c : plan.block.value("cameras", Json::array()))
      plan.depth_keys[c.value("key", "")] = c.value("depth", false);
  } else {
    plan.source_tasks = finfo.tasks;
  }
  if (!plan.bundle) {
    for (const ForeignEpisode& ep : plan.episodes) {
      REEL_ASSIGN_OR_RETURN(auto stamps, plan.ds->ReadFrames(ep, {"timestamp"}));
      REEL_RETURN_IF_ERROR(CheckLeRobotTimestamps(*stamps, plan.fps, JoinPath(source, ep.data_path), ep.episode_index));
    }
  }
  return plan;
}

// The target's own tasks, when it has them: imported rows must point into them.
Status LoadTargetTasks(FileSystem* fs, ImportPlan* plan) {
  const std::string path = JoinPath(plan->task_root, internal::kTasksPath);
  auto text = internal::ReadFileBounded(fs, path, internal::kJsonFileBytes);
  if (!text.ok()) return text.status().code() == StatusCode::kNotFound ? Status::OK() : text.status();
  REEL_ASSIGN_OR_RETURN(auto entries, ParseTasksJsonl(*text, path));
  for (const auto& e : entries) plan->target_tasks.emplace(e.task, e.task_index);
  return Status::OK();
}

// ---- one episode -------------------------------------------------------------------------

// One source episode on its way in: its rows, declaration and episodes row.
struct EpisodeDraft {
  const ForeignEpisode* ep = nullptr;
  std::string where;  // the source data file, for messages
  std::shared_ptr<arrow::Table> frames;
  InfoJson decl;
  EpisodeRow row;
  std::optional<int64_t> wanted;  // a round trip's own number, kept when free
  int64_t taken_number = -1;      // a round trip's own number, held by another episode of the target
};

// The episodes row and the declaration: a round trip restores the pooled ones.
Result<EpisodeDraft> DraftEpisode(FileSystem* fs, const ImportPlan& plan, size_t i) {
  EpisodeDraft d;
  d.ep = &plan.episodes[i];
  d.where = JoinPath(plan.source, d.ep->data_path);
  REEL_ASSIGN_OR_RETURN(d.frames, plan.ds->ReadFrames(*d.ep));
  const Json pooled_rows = plan.round_trip ? plan.block.value("pooled_rows", Json::array()) : Json::array();
  if (plan.round_trip && i < pooled_rows.size()) {
    const Json& r = pooled_rows[i];
    d.row.created_at = r.value("created_at", 0.0);
    d.row.duration_sec = r.value("duration_sec", 0.0);
    d.row.drop_stats = r.value("drop_stats", "{}");
    d.row.video_codec = r.value("video_codec", "{}");
    d.row.calibration = r.value("calibration", "{}");
    d.row.force_matrix_specs = r.value("force_matrix_specs", "{}");
    d.row.slam_specs = r.value("slam_specs", "{}");
    d.row.task_index = r.value("task_index", int64_t{0});
    REEL_ASSIGN_OR_RETURN(d.decl, ParseInfoJson(internal::Dump(plan.block.value("pooled_info", Json::object()), -1),
                                                plan.source + ": reel.pooled_info"));
    // The export re-timed a slot with its own fps to the dataset's (RetimedFrames): its video
    // comes back with one frame per row, so no camera keeps a rate of its own.
    for (auto& [slot, camera] : d.decl.cameras) camera.fps.reset();
    if (!plan.target_tasks.empty()) {
      const int64_t k = d.row.task_index;
      REEL_ASSIGN_OR_RETURN(d.row.task_index,
                            plan.PooledTaskOf(k >= 0 && k < static_cast<int64_t>(plan.source_tasks.size())
                                                  ? plan.source_tasks[k]
                                                  : plan.task_name));
    }
  } else {
    d.row.created_at = internal::NowUnixSeconds();
    d.row.duration_sec = static_cast<double>(d.frames->num_rows()) / plan.fps;
    REEL_ASSIGN_OR_RETURN(d.row.task_index, plan.PooledTaskOf(d.ep->tasks.empty() ? plan.task_name : d.ep->tasks.front()));
    d.decl.format = "pooled_episodes_v1";
    d.decl.fps = plan.fps;
    d.decl.created_at = d.row.created_at;
  }
  d.decl.task_name = plan.task_name;
  // N: a round trip keeps the pooled number when the target does not hold it.
  const Json numbers = plan.round_trip ? plan.block.value("pooled_episode_index", Json::array()) : Json::array();
  if (i < numbers.size()) {
    const int64_t wanted = numbers[i].get<int64_t>();
    bool taken = false;
    if (fs->Stat(JoinPath(plan.task_root, internal::kInfoPath)).ValueOr(FileInfo{}).type == FileType::kFile) {
      REEL_ASSIGN_OR_RETURN(auto target, Task::Open(plan.task_root, {fs, 1}));
      taken = target->FindEpisode(wanted).ok();
    }
    if (taken) d.taken_number = wanted;
    else d.wanted = wanted;
  }
  return d;
}

// The pooled data table of episode `number`.
Result<std::shared_ptr<arrow::Table>> BuildTable(FileSystem* fs, const ImportPlan& plan, int64_t number,
                                                 EpisodeDraft* d, std::vector<std::string>* warnings) {
  const int64_t n = d->frames->num_rows();
  PooledColumns cols;
  cols.Add("episode_index", Int64Column(n, [&](int64_t) { return number; }));
  cols.Add("frame_index", Int64Column(n, [](int64_t k) { return k; }));
  if (!plan.round_trip) {
    REEL_ASSIGN_OR_RETURN(auto seconds, TimestampSeconds(*d->frames, d->where));
    cols.Add("timestamp", seconds);
  }
  const int64_t task_index = d->row.task_index;
  cols.Add("task_index", Int64Column(n, [&](int64_t) { return task_index; }));
  if (!plan.round_trip) {
    REEL_RETURN_IF_ERROR(AddGenericColumns(plan.ds->info(), *d->frames, d->where, &d->decl, &cols, warnings));
    return cols.Table(n);
  }
  REEL_RETURN_IF_ERROR(AddRoundTripColumns(plan.block, *d->frames, d->where, &cols));
  const ForeignEpisode& ep = *d->ep;
  const std::string side =
      plan.bundle ? JoinPath(plan.source, "episodes/" + ep.bundle_id + "/reel.sidecar.parquet")
                  : JoinPath(plan.source, "reel/sidecar/chunk-" +
                                              Pad(ep.episode_index / std::max<int64_t>(plan.ds->info().chunks_size, 1), 3) +
                                              "/episode_" + Pad(ep.episode_index, 6) + ".parquet");
  if (plan.source_fs->Stat(side).ValueOr(FileInfo{}).type == FileType::kFile) {
    REEL_ASSIGN_OR_RETURN(auto sidecar, ReadParquetFile(plan.source_fs, side));
    if (sidecar->num_rows() != n)
      return Status::Invalid(side + ": " + std::to_string(sidecar->num_rows()) + " rows, the episode has " +
                             std::to_string(n));
    for (int c = 0; c < sidecar->num_columns(); ++c) {
      auto a = arrow::Concatenate(sidecar->column(c)->chunks());
      if (!a.ok()) return Status::IOError(side + ": " + a.status().ToString());
      cols.Add(sidecar->field(c)->name(), *a);
    }
  }
  return cols.Table(n);
}

// Writes the episode's videos as transaction temps at the target's paths; returns
// slot -> temp, for the identity check.
Result<std::map<std::string, std::string>> WriteVideos(const ImportPlan& plan, const PathTemplate& video_tpl,
                                                       PathVars vars, EpisodeDraft* d,
                                                       internal::EpisodeTransaction* txn, ImportReport* report) {
  std::map<std::string, std::string> written;  // slot -> temp
  const ForeignInfo& finfo = plan.ds->info();
  for (const VideoSpan& span : d->ep->videos) {
    auto depth_it = plan.depth_keys.find(span.key);
    const bool depth = depth_it != plan.depth_keys.end() && depth_it->second;
    const std::string slot = plan.round_trip ? span.key.substr(span.key.rfind('.') + 1) : SlotOf(span.key);
    vars.image_key = slot;
    vars.ext = "mp4";
    REEL_ASSIGN_OR_RETURN(std::string rel, video_tpl.Render(vars));
    REEL_ASSIGN_OR_RETURN(std::string tmp, txn->NewTemp(rel, "import"));
    written[slot] = tmp;
    REEL_ASSIGN_OR_RETURN(bool reencoded, ImportVideo(plan.source_fs, txn->fs(), *plan.ds, *d->ep, span, depth, plan.fps, tmp));
    ++(reencoded ? report->videos_reencoded : report->videos_copied);
    if (plan.round_trip) continue;
    auto it = finfo.features.find(span.key);
    if (it != finfo.features.end() && it->second.shape.size() == 3)
      d->decl.cameras.emplace_back(slot, CameraSpec{it->second.shape[0], it->second.shape[1], std::nullopt});
    d->decl.video_extensions.emplace_back(slot, "mp4");
    d->decl.video = true;
  }
  return written;
}

// Imports source episode `i`: its files as temps of one transaction, then either a skip
// (an identical episode is already there) or the commit.
Status ImportEpisode(internal::TaskLock* lock, ImportPlan* plan, size_t i, const ImportOptions& options,
                     ImportReport* report) {
  FileSystem* fs = lock->fs();
  const std::string& task_root = plan->task_root;
  REEL_ASSIGN_OR_RETURN(EpisodeDraft d, DraftEpisode(fs, *plan, i));
  REEL_ASSIGN_OR_RETURN(auto txn, internal::EpisodeTransaction::Begin(lock, d.wanted));
  const int64_t number = txn->episode_index();
  REEL_ASSIGN_OR_RETURN(auto table, BuildTable(fs, *plan, number, &d, &report->warnings));

  // Paths by the target's templates; every file is a temp until the commit.
  REEL_ASSIGN_OR_RETURN(InfoJson info, internal::LoadInfo(fs, task_root));
  REEL_ASSIGN_OR_RETURN(auto data_tpl, PathTemplate::Parse(info.data_path));
  REEL_ASSIGN_OR_RETURN(auto rows_tpl, PathTemplate::Parse(info.episodes_path));
  REEL_ASSIGN_OR_RETURN(auto video_tpl, PathTemplate::Parse(info.video_path));
  const EpisodeLocation loc = LocateEpisode(number, info.chunks_size);
  const PathVars vars{loc.chunk, loc.file, number, std::nullopt, std::nullopt};
  REEL_ASSIGN_OR_RETURN(std::string data_rel, data_tpl.Render(vars));
  REEL_ASSIGN_OR_RETURN(std::string row_rel, rows_tpl.Render(vars));
  REEL_ASSIGN_OR_RETURN(auto videos, WriteVideos(*plan, video_tpl, vars, &d, txn.get(), report));
  REEL_ASSIGN_OR_RETURN(std::string data_temp, txn->NewTemp(data_rel, "import"));
  REEL_RETURN_IF_ERROR(internal::WriteParquet(fs, data_temp, *table));
  REEL_ASSIGN_OR_RETURN(int64_t identical,
                        FindIdentical(fs, task_root, d.taken_number, data_temp, videos, &plan->target));
  if (identical >= 0) {
    report->skipped.push_back({d.ep->episode_index, identical});
    return txn->Abort();
  }
  if (d.taken_number >= 0 && !options.renumber)
    return Status::AlreadyExists(task_root + ": episode " + std::to_string(d.taken_number) +
                                 " (the number this reel export gives source episode " +
                                 std::to_string(d.ep->episode_index) +
                                 ") holds other content; --renumber imports it under a new number");
  if (d.taken_number >= 0)
    report->warnings.push_back("episode " + std::to_string(d.taken_number) + " is taken in " + task_root +
                               "; imported as " + std::to_string(number));
  const int64_t n = table->num_rows();
  d.row.episode_index = number;
  d.row.length = n;
  d.row.start_frame_index = 0;
  d.row.end_frame_index = n - 1;
  REEL_ASSIGN_OR_RETURN(std::string row_temp, txn->NewTemp(row_rel, "import"));
  REEL_RETURN_IF_ERROR(internal::WriteEpisodeRow(fs, row_temp, d.row));

  internal::TaskFilesUpdate update;
  REEL_ASSIGN_OR_RETURN(update.stats, internal::EpisodeStatsFromTable(*table, d.decl.sensors));
  update.declaration = std::move(d.decl);
  update.tasks_jsonl = plan->TasksJsonl();
  Status st = txn->Commit(update);
  if (!txn->decided()) return st;
  if (!st.ok()) report->warnings.push_back(st.message());
  plan->TargetNowHasTasks();
  EpisodeEntry added{.episode_index = number, .location = loc, .data_path = data_rel, .videos = {},
                     .row_source = RowSource::kEpisodeFile, .row_path = row_rel};
  for (const auto& [slot, temp] : videos) {
    PathVars v = vars;
    v.image_key = slot;
    v.ext = "mp4";
    REEL_ASSIGN_OR_RETURN(std::string rel, video_tpl.Render(v));
    added.videos.emplace_back(slot, rel);
  }
  plan->target.Add(std::move(added), n);
  report->episode_indices.push_back(number);
  report->frames += n;
  ++report->episodes;
  return Status::OK();
}

}  // namespace

Result<ImportReport> ImportDataset(const std::string& source, const std::string& task_root,
                                   const ImportOptions& options) {
  FileSystem* fs = options.fs ? options.fs : DefaultFileSystem();
  REEL_ASSIGN_OR_RETURN(ImportPlan plan, PlanImport(options.source_fs ? options.source_fs : fs, source, task_root, options));
  REEL_ASSIGN_OR_RETURN(internal::TaskLock lock, internal::TaskLock::Acquire(fs, task_root));
  REEL_RETURN_IF_ERROR(LoadTargetTasks(fs, &plan));
  ImportReport report;
  report.round_trip = plan.round_trip;
  for (size_t i = 0; i < plan.episodes.size(); ++i) {
    REEL_RETURN_IF_ERROR(ImportEpisode(&lock, &plan, i, options, &report));
    ReportImported(options, i + 1, plan.episodes.size(), plan.episodes[i].episode_index);
  }
  return report;
}

}  // namespace reel
