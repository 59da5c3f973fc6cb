#include "interop/feature_map.h"

#include <arrow/api.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "reel/columns.h"
#include "reel/decode.h"

namespace reel::internal {
namespace {

// A numeric column seen as one flat primitive array plus, per row, where the
// row's vector starts in it (-1 = the row has none).
struct FlatRows {
  std::shared_ptr<arrow::Array> values;  // primitive
  std::vector<int64_t> starts;
  int64_t width = 1;
};

bool IsNumeric(const arrow::DataType& t) {
  return arrow::is_integer(t.id()) || arrow::is_floating(t.id());
}

const char* NumpyName(const arrow::DataType& t) {
  switch (t.id()) {
    case arrow::Type::INT8: return "int8";
    case arrow::Type::INT16: return "int16";
    case arrow::Type::INT32: return "int32";
    case arrow::Type::INT64: return "int64";
    case arrow::Type::UINT8: return "uint8";
    case arrow::Type::UINT16: return "uint16";
    case arrow::Type::UINT32: return "uint32";
    case arrow::Type::UINT64: return "uint64";
    case arrow::Type::HALF_FLOAT: return "float16";
    case arrow::Type::FLOAT: return "float32";
    case arrow::Type::DOUBLE: return "float64";
    default: return "";
  }
}

std::shared_ptr<arrow::DataType> ArrowOfNumpy(const std::string& name) {
  if (name == "int8") return arrow::int8();
  if (name == "int16") return arrow::int16();
  if (name == "int32") return arrow::int32();
  if (name == "int64") return arrow::int64();
  if (name == "uint8") return arrow::uint8();
  if (name == "uint16") return arrow::uint16();
  if (name == "uint32") return arrow::uint32();
  if (name == "uint64") return arrow::uint64();
  if (name == "float16") return arrow::float16();
  if (name == "float64") return arrow::float64();
  if (name == "string") return arrow::utf8();
  return arrow::float32();
}

enum class Shape { kScalar, kFixed, kList, kString, kOther };

// How a pooled column is shaped, and its element type.
Shape ShapeOf(const arrow::DataType& t, std::shared_ptr<arrow::DataType>* element, int64_t* width) {
  *width = 1;
  if (IsNumeric(t)) {
    *element = t.GetSharedPtr();
    return Shape::kScalar;
  }
  if (t.id() == arrow::Type::STRING || t.id() == arrow::Type::LARGE_STRING) return Shape::kString;
  if (t.id() == arrow::Type::FIXED_SIZE_LIST) {
    const auto& f = static_cast<const arrow::FixedSizeListType&>(t);
    if (!IsNumeric(*f.value_type())) return Shape::kOther;
    *element = f.value_type();
    *width = f.list_size();
    return Shape::kFixed;
  }
  if (t.id() == arrow::Type::LIST || t.id() == arrow::Type::LARGE_LIST) {
    auto inner = static_cast<const arrow::BaseListType&>(t).value_type();
    if (IsNumeric(*inner)) {
      *element = inner;
      return Shape::kList;
    }
    if (inner->id() == arrow::Type::FIXED_SIZE_LIST) {
      const auto& f = static_cast<const arrow::FixedSizeListType&>(*inner);
      if (!IsNumeric(*f.value_type())) return Shape::kOther;
      *element = f.value_type();
      *width = f.list_size();
      return Shape::kList;
    }
  }
  return Shape::kOther;
}

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool IsForceMatrix(const std::string& column, const FeatureSpec* spec) {
  if (spec && spec->encoding &&
      (*spec->encoding == "row_diff_quantized" || *spec->encoding == "row_flat_raw")) {
    return true;
  }
  return EndsWith(column, "_force_matrix");
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// The concat feature over `columns`, each fixed-size or scalar numeric.
Result<ExportFeature> ConcatFeature(const std::string& key, const std::vector<std::string>& columns,
                                    const arrow::Schema& schema, const char* option) {
  ExportFeature f;
  f.key = key;
  f.source = FeatureSource::kConcat;
  f.dtype = "float32";
  f.width = 0;
  for (const auto& c : columns) {
    auto field = schema.GetFieldByName(c);
    if (!field) {
      return Status::NotFound(std::string(option) + ": column '" + c +
                              "' is not in the exported episodes' data");
    }
    std::shared_ptr<arrow::DataType> element;
    int64_t width = 1;
    Shape shape = ShapeOf(*field->type(), &element, &width);
    if (shape != Shape::kScalar && shape != Shape::kFixed) {
      return Status::Invalid(std::string(option) + ": column '" + c + "' is " +
                             field->type()->ToString() + ", not a fixed-size numeric column");
    }
    f.columns.push_back(c);
    f.widths.push_back(width);
    f.pooled_types.push_back(field->type()->ToString());
    for (int64_t i = 0; i < width; ++i) {
      f.names.push_back(width == 1 ? c : c + "." + std::to_string(i));
    }
    f.width += width;
  }
  return f;
}


ExportFeature AlignedFeature(const std::string& key, AlignedKind kind, const std::string& dtype,
                             std::vector<int64_t> shape, const std::string& column, int64_t stats_channels) {
  ExportFeature f;
  f.key = key;
  f.source = FeatureSource::kAligned;
  f.aligned = kind;
  f.dtype = dtype;
  f.width = 1;
  for (int64_t d : shape) f.width *= d;
  f.shape = shape.size() > 1 ? std::move(shape) : std::vector<int64_t>{};
  f.columns = {column};
  f.widths = {f.width};
  f.stats_channels = stats_channels;
  return f;
}

ExportFeature ValidFeature(const std::string& key, const std::string& column) {
  return AlignedFeature(key, AlignedKind::kValid, "float32", {1}, column, 0);
}

bool IsInt64Field(const arrow::Schema& schema, const std::string& name, bool list) {
  auto f = schema.GetFieldByName(name);
  if (!f) return false;
  if (!list) return f->type()->id() == arrow::Type::INT64;
  return f->type()->id() == arrow::Type::LIST &&
         static_cast<const arrow::ListType&>(*f->type()).value_type()->id() == arrow::Type::INT64;
}

// The aligned features that replace list column `name` (StreamFeatures), appended to
// `out`; false when the column keeps its list rule. A stamp list whose stream is aligned
// is left out (the sidecar keeps it): its newest-held value would contradict the pairing.
bool PlanAlignedList(const std::string& name, const FeatureSpec* spec, const arrow::Schema& schema,
                     const StreamFeatures& streams, std::vector<ExportFeature>* out) {
  if (!streams.align) return false;
  if (IsForceMatrix(name, spec)) {
    if (streams.force_matrix == ForceMatrixFeature::kNone || !IsInt64Field(schema, name + "_ns", false)) return false;
    const bool full = streams.force_matrix == ForceMatrixFeature::kFull;
    out->push_back(AlignedFeature(name, AlignedKind::kForceMatrix, "float32",
                                  full ? std::vector<int64_t>{250, 250, 3} : std::vector<int64_t>{250, 250}, name,
                                  full ? 3 : 1));
    out->push_back(ValidFeature(name + "_valid", name));
    return true;
  }
  const bool imu = streams.imu_window > 0 && IsInt64Field(schema, "imu_ts_ns", true);
  if (name == "observation.imu" && imu) {
    out->push_back(AlignedFeature(name, AlignedKind::kImuWindow, "float32", {streams.imu_window, 6}, name, 6));
    out->push_back(AlignedFeature("observation.imu_mask", AlignedKind::kImuMask, "float32", {streams.imu_window},
                                  name, 0));
    return true;
  }
  if (name == "imu_ts_ns" && imu && schema.GetFieldByName("observation.imu")) return true;
  if (name.starts_with("observation.") && EndsWith(name, "slam_trajectory") &&
      IsInt64Field(schema, name + "_ns", true)) {
    out->push_back(AlignedFeature(name, AlignedKind::kTrajectory, "float64", {8}, name, 0));
    out->push_back(ValidFeature(name + "_valid", name));
    return true;
  }
  if (EndsWith(name, "slam_trajectory_ns") && schema.GetFieldByName(name.substr(0, name.size() - 3))) return true;
  return false;
}

}  // namespace

bool IsBookkeepingColumn(const std::string& column) {
  return column == "episode_index" || column == "frame_index" || column == "task_index" ||
         column == "index";
}

std::shared_ptr<arrow::DataType> FeatureArrowType(const ExportFeature& feature) {
  auto element = ArrowOfNumpy(feature.dtype);
  if (feature.source == FeatureSource::kString || feature.width == 1) return element;
  if (feature.shape.size() > 1) {  // nested lists, outermost axis first (Arrow2D/3D in LeRobot)
    for (auto d = feature.shape.rbegin(); d != feature.shape.rend(); ++d)
      element = arrow::fixed_size_list(element, static_cast<int32_t>(*d));
    return element;
  }
  return arrow::fixed_size_list(element, static_cast<int32_t>(feature.width));
}

Result<FramePlan> PlanFeatures(const InfoJson& info, const arrow::Schema& schema,
                               const std::vector<std::pair<std::string, bool>>& slots,
                               const ExportMapping& mapping) {
  FramePlan plan;
  std::vector<std::string> state_columns;
  if (mapping.state_columns) {
    state_columns = *mapping.state_columns;
  } else {
    for (const auto& [name, spec] : info.features) {
      auto field = schema.GetFieldByName(name);
      if (!field || name.rfind("observation.", 0) != 0) continue;
      if (!(EndsWith(name, "_state") || EndsWith(name, "_force"))) continue;
      const auto& t = *field->type();
      if (t.id() == arrow::Type::FIXED_SIZE_LIST &&
          static_cast<const arrow::FixedSizeListType&>(t).value_type()->id() == arrow::Type::FLOAT) {
        state_columns.push_back(name);
      }
    }
  }
  std::set<std::string> used;
  if (!state_columns.empty()) {
    REEL_ASSIGN_OR_RETURN(auto f, ConcatFeature("observation.state", state_columns, schema, "state"));
    plan.features.push_back(std::move(f));
    used.insert(state_columns.begin(), state_columns.end());
  }
  if (!mapping.action_columns.empty()) {
    REEL_ASSIGN_OR_RETURN(auto f, ConcatFeature("action", mapping.action_columns, schema, "action"));
    plan.features.push_back(std::move(f));
    used.insert(mapping.action_columns.begin(), mapping.action_columns.end());
    if (!used.count("action") && schema.GetFieldByName("action")) {
      used.insert("action");
      plan.dropped.push_back("action");
    }
  } else if (schema.GetFieldByName("action")) {
    plan.warnings.push_back(
        "action: the pooled layout's action column is a placeholder (contract §5); "
        "exported as it is. Name a real source with --action COLUMN[,COLUMN...]");
  }

  for (const auto& field : schema.fields()) {
    const std::string& name = field->name();
    if (IsBookkeepingColumn(name) || used.count(name)) continue;
    if (Contains(mapping.drop_columns, name)) {
      plan.dropped.push_back(name);
      continue;
    }
    const FeatureSpec* spec = info.Feature(name);
    std::shared_ptr<arrow::DataType> element;
    ExportFeature f;
    f.key = name == "timestamp" ? "pooled.timestamp" : name;
    f.columns = {name};
    f.pooled_types = {field->type()->ToString()};
    if (spec) f.pooled_shape = spec->shape;
    Shape shape = ShapeOf(*field->type(), &element, &f.width);
    switch (shape) {
      case Shape::kScalar:
      case Shape::kFixed:
        f.source = FeatureSource::kColumn;
        f.dtype = NumpyName(*element);
        if (mapping.streams.align && mapping.streams.canonical_gloves && f.dtype == "float32" &&
            f.width == kGloveSide * kGloveSide && IsLeftGlove(name) &&
            ClassifyColumn(name, info.sensors) == ColumnFamily::kGlove) {
          // Canonical order in the feature; the firmware order in the sidecar for import.
          plan.features.push_back(AlignedFeature(name, AlignedKind::kGlove, "float32", {f.width}, name, 0));
          plan.sidecar.push_back(name);
          continue;
        }
        break;
      case Shape::kString:
        f.source = FeatureSource::kString;
        f.dtype = "string";
        break;
      case Shape::kList: {
        auto rule = mapping.list_rules.find(name);
        ListRule r = rule != mapping.list_rules.end() ? rule->second
                     : IsForceMatrix(name, spec)       ? ListRule::kDrop
                                                       : ListRule::kLast;
        plan.sidecar.push_back(name);
        if (rule == mapping.list_rules.end() && PlanAlignedList(name, spec, schema, mapping.streams, &plan.features)) {
          if (plan.features.empty() || plan.features.back().columns[0] != name) plan.dropped.push_back(name);
          continue;
        }
        if (r == ListRule::kDrop) {
          plan.dropped.push_back(name);
          continue;
        }
        f.source = FeatureSource::kLast;
        f.dtype = NumpyName(*element);
        // A flat list of points (SLAM: 8 values per point) takes its point width
        // from the declared feature; a list of fixed-size samples has its own.
        if (f.width == 1 && spec && spec->ElementCount() > 1) f.width = spec->ElementCount();
        break;
      }
      case Shape::kOther:
        plan.dropped.push_back(name);
        plan.sidecar.push_back(name);
        plan.warnings.push_back(name + ": type " + field->type()->ToString() +
                                " has no exported form; left out");
        continue;
    }
    f.widths = {f.width};
    plan.features.push_back(std::move(f));
  }
  for (const auto& [slot, depth] : slots) {
    if (depth && !mapping.include_depth) continue;
    plan.cameras.push_back({(depth ? mapping.depth_prefix : mapping.image_prefix) + slot, slot, depth});
  }
  return plan;
}

namespace {

// The rows of a numeric column (scalar, fixed-size or list) as flat values.
Result<FlatRows> Flatten(const ExportFeature& feature, const std::string& column,
                         const arrow::Array& array, const std::string& path,
                         std::vector<std::string>* warnings) {
  FlatRows rows;
  const int64_t n = array.length();
  rows.starts.resize(n);
  const auto& t = *array.type();
  std::shared_ptr<arrow::DataType> element;
  int64_t width = 1;
  Shape shape = ShapeOf(t, &element, &width);
  if (shape == Shape::kScalar) {
    rows.values = array.Slice(0);
    for (int64_t i = 0; i < n; ++i) rows.starts[i] = i;
    rows.width = 1;
  } else if (shape == Shape::kFixed) {
    const auto& f = static_cast<const arrow::FixedSizeListArray&>(array);
    rows.values = f.values();
    rows.width = width;
    for (int64_t i = 0; i < n; ++i) rows.starts[i] = (f.offset() + i) * width;
  } else if (shape == Shape::kList && feature.source == FeatureSource::kLast) {
    const auto& l = static_cast<const arrow::ListArray&>(array);
    auto values = l.values();
    int64_t point = feature.width;  // values per sample in the flat value array
    if (values->type_id() == arrow::Type::FIXED_SIZE_LIST) {
      values = static_cast<const arrow::FixedSizeListArray&>(*values).Flatten().ValueOrDie();
      // Flatten() drops the parent offset; list offsets count samples.
    }
    rows.values = values;
    rows.width = point;
    const int64_t sample_width = width > 1 ? width : 1;  // fixed-size samples vs flat values
    int64_t held = -1, first = -1;
    for (int64_t i = 0; i < n; ++i) {
      int64_t begin = l.value_offset(i) * sample_width;
      int64_t end = l.value_offset(i + 1) * sample_width;
      if (end - begin >= point) held = end - point;
      rows.starts[i] = held;
      if (first < 0 && held >= 0) first = held;
    }
    if (first < 0) {
      warnings->push_back(path + ": " + column + " has no samples in this episode; exported as zeros");
    }
    for (int64_t i = 0; i < n && rows.starts[i] < 0; ++i) rows.starts[i] = first;  // back-fill
  } else {
    return Status::Invalid(path + ": column '" + column + "' is " + t.ToString() +
                           ", not the shape the export plan expects for " + feature.key);
  }
  if (feature.source != FeatureSource::kConcat && rows.width != feature.width) {
    return Status::Invalid(path + ": column '" + column + "' has " + std::to_string(rows.width) +
                           " values per frame, other episodes have " +
                           std::to_string(feature.width) + " (" + feature.key + ")");
  }
  return rows;
}

template <typename ArrowType>
void GatherInto(const arrow::Array& values, const std::vector<int64_t>& starts, int64_t width,
                typename ArrowType::c_type* out, int64_t out_stride) {
  using C = typename ArrowType::c_type;
  const auto& prim = static_cast<const arrow::NumericArray<ArrowType>&>(values);
  const C* src = prim.raw_values();
  for (size_t i = 0; i < starts.size(); ++i) {
    C* dst = out + static_cast<int64_t>(i) * out_stride;
    if (starts[i] < 0) {
      std::fill(dst, dst + width, C{});
    } else {
      std::memcpy(dst, src + starts[i], static_cast<size_t>(width) * sizeof(C));
    }
  }
}

template <typename ArrowType>
void GatherAsFloat(const arrow::Array& values, const std::vector<int64_t>& starts, int64_t width,
                   float* out, int64_t out_stride) {
  const auto& prim = static_cast<const arrow::NumericArray<ArrowType>&>(values);
  const auto* src = prim.raw_values();
  for (size_t i = 0; i < starts.size(); ++i) {
    float* dst = out + static_cast<int64_t>(i) * out_stride;
    for (int64_t k = 0; k < width; ++k) {
      dst[k] = starts[i] < 0 ? 0.0f : static_cast<float>(src[starts[i] + k]);
    }
  }
}

#define REEL_NUMERIC_CASES(MACRO)        \
  MACRO(INT8, arrow::Int8Type)           \
  MACRO(INT16, arrow::Int16Type)         \
  MACRO(INT32, arrow::Int32Type)         \
  MACRO(INT64, arrow::Int64Type)         \
  MACRO(UINT8, arrow::UInt8Type)         \
  MACRO(UINT16, arrow::UInt16Type)       \
  MACRO(UINT32, arrow::UInt32Type)       \
  MACRO(UINT64, arrow::UInt64Type)       \
  MACRO(FLOAT, arrow::FloatType)         \
  MACRO(DOUBLE, arrow::DoubleType)

// Values buffer of `n` rows of `width` elements of `type`, gathered exactly.
Result<std::shared_ptr<arrow::Buffer>> GatherExact(const FlatRows& rows, const arrow::DataType& type) {
  const int64_t n = static_cast<int64_t>(rows.starts.size());
  const int byte_width = type.byte_width();
  auto buffer = arrow::AllocateBuffer(n * rows.width * byte_width);
  if (!buffer.ok()) return Status::IOError("allocating an export column: " + buffer.status().ToString());
  std::shared_ptr<arrow::Buffer> out = std::move(buffer).ValueOrDie();
  uint8_t* data = out->mutable_data();
  switch (rows.values->type_id()) {
#define REEL_GATHER_CASE(ID, T)                                                               \
  case arrow::Type::ID:                                                                       \
    GatherInto<T>(*rows.values, rows.starts, rows.width, reinterpret_cast<T::c_type*>(data), \
                  rows.width);                                                                \
    break;
    REEL_NUMERIC_CASES(REEL_GATHER_CASE)
#undef REEL_GATHER_CASE
    default:
      return Status::NotSupported("export: element type " + rows.values->type()->ToString());
  }
  return out;
}

Status GatherFloat(const FlatRows& rows, float* out, int64_t stride) {
  switch (rows.values->type_id()) {
#define REEL_GATHER_CASE(ID, T)                                           \
  case arrow::Type::ID:                                                   \
    GatherAsFloat<T>(*rows.values, rows.starts, rows.width, out, stride); \
    return Status::OK();
    REEL_NUMERIC_CASES(REEL_GATHER_CASE)
#undef REEL_GATHER_CASE
    default:
      return Status::NotSupported("export: element type " + rows.values->type()->ToString());
  }
}

std::shared_ptr<arrow::Array> MakeColumn(const ExportFeature& feature, int64_t n,
                                         std::shared_ptr<arrow::Buffer> values) {
  auto element = ArrowOfNumpy(feature.dtype);
  auto flat = arrow::MakeArray(arrow::ArrayData::Make(element, n * feature.width, {nullptr, values}, 0));
  if (feature.width == 1) return flat;
  return std::make_shared<arrow::FixedSizeListArray>(FeatureArrowType(feature), n, flat);
}

}  // namespace

Result<std::shared_ptr<arrow::Table>> BuildFrameTable(
    const FramePlan& plan, const arrow::Table& pooled, const std::string& path, std::vector<std::string>* warnings,
    const std::map<std::string, std::shared_ptr<arrow::Array>>& aligned) {
  const int64_t n = pooled.num_rows();
  std::vector<std::shared_ptr<arrow::Field>> fields;
  std::vector<std::shared_ptr<arrow::Array>> arrays;
  auto column_array = [&](const std::string& name) -> Result<std::shared_ptr<arrow::Array>> {
    auto chunked = pooled.GetColumnByName(name);
    if (!chunked) {
      return Status::NotFound(path + ": column '" + name +
                              "' is exported for other episodes but missing here");
    }
    if (chunked->num_chunks() == 1) return chunked->chunk(0);
    auto combined = arrow::Concatenate(chunked->chunks());
    if (!combined.ok()) return Status::IOError(path + ": " + combined.status().ToString());
    return *combined;
  };
  for (const auto& feature : plan.features) {
    std::shared_ptr<arrow::Array> array;
    if (feature.source == FeatureSource::kAligned) {
      auto it = aligned.find(feature.key);
      if (it == aligned.end() || it->second->length() != n)
        return Status::Invalid(path + ": no aligned column for " + feature.key);
      array = it->second;
    } else if (feature.source == FeatureSource::kString) {
      REEL_ASSIGN_OR_RETURN(array, column_array(feature.columns[0]));
      if (array->type_id() != arrow::Type::STRING) {
        return Status::Invalid(path + ": column '" + feature.columns[0] + "' is " +
                               array->type()->ToString() + ", other episodes have string");
      }
    } else if (feature.source == FeatureSource::kConcat) {
      auto buffer = arrow::AllocateBuffer(n * feature.width * 4);
      if (!buffer.ok()) return Status::IOError("allocating " + feature.key);
      std::shared_ptr<arrow::Buffer> out = std::move(buffer).ValueOrDie();
      float* dst = reinterpret_cast<float*>(out->mutable_data());
      int64_t at = 0;
      for (const auto& c : feature.columns) {
        REEL_ASSIGN_OR_RETURN(auto source, column_array(c));
        REEL_ASSIGN_OR_RETURN(auto rows, Flatten(feature, c, *source, path, warnings));
        REEL_RETURN_IF_ERROR(GatherFloat(rows, dst + at, feature.width));
        at += rows.width;
      }
      if (at != feature.width) {
        return Status::Invalid(path + ": " + feature.key + " has " + std::to_string(at) +
                               " values per frame here, " + std::to_string(feature.width) +
                               " in other episodes");
      }
      array = MakeColumn(feature, n, out);
    } else {
      REEL_ASSIGN_OR_RETURN(auto source, column_array(feature.columns[0]));
      REEL_ASSIGN_OR_RETURN(auto rows, Flatten(feature, feature.columns[0], *source, path, warnings));
      if (std::string(NumpyName(*rows.values->type())) != feature.dtype) {
        return Status::Invalid(path + ": column '" + feature.columns[0] + "' holds " +
                               rows.values->type()->ToString() + ", other episodes " +
                               feature.dtype);
      }
      REEL_ASSIGN_OR_RETURN(auto out, GatherExact(rows, *rows.values->type()));
      array = MakeColumn(feature, n, out);
    }
    fields.push_back(arrow::field(feature.key, array->type(), /*nullable=*/false));
    arrays.push_back(std::move(array));
  }
  return arrow::Table::Make(arrow::schema(fields), arrays, n);
}

}  // namespace reel::internal
