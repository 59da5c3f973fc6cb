// Force-matrix codec (contract §7.2.1; reference-behaviour.md "Force matrix codec").
#include <arrow/api.h>

#include <cmath>

#include "util/json_util.h"
#include "reel/decode.h"

namespace reel {

using internal::Json;

const char* ScaleSourceName(ScaleSource source) {
  switch (source) {
    case ScaleSource::kEpisodeRow: return "episode_row";
    case ScaleSource::kInfoFeature: return "info_features";
    case ScaleSource::kDefault: return "default";
  }
  return "default";
}

Result<ForceMatrixSpec> ForceMatrixSpecForTier(const std::string& tier) {
  ForceMatrixSpec spec;
  if (tier == "float32") return spec;
  static const std::pair<const char*, double> kTiers[] = {
      {"int16", 1}, {"int16x10", 10}, {"int16x100", 100}, {"int16x1000", 1000}};
  for (const auto& [name, scale] : kTiers) {
    if (tier == name) {
      spec.encoding = ForceMatrixEncoding::kRowDiffQuantized;
      spec.dtype = "int16";
      spec.scale = scale;
      return spec;
    }
  }
  return Status::Invalid("unknown force-matrix tier \"" + tier +
                         "\" (expected int16, int16x10, int16x100, int16x1000 or float32)");
}

namespace {

Result<ForceMatrixEncoding> EncodingOf(const std::string& name, const std::string& where) {
  if (name == "row_diff_quantized") return ForceMatrixEncoding::kRowDiffQuantized;
  if (name == "row_flat_raw") return ForceMatrixEncoding::kRowFlatRaw;
  return Status::Invalid(where + ": unknown force-matrix encoding \"" + name +
                         "\" (expected row_diff_quantized or row_flat_raw)");
}

ForceMatrixSpec SpecForDtype(const std::string& dtype) {
  ForceMatrixSpec spec;
  if (dtype == "int16") {
    spec.encoding = ForceMatrixEncoding::kRowDiffQuantized;
    spec.dtype = "int16";
  }
  return spec;
}

}  // namespace

Result<ResolvedForceMatrixSpec> ResolveForceMatrixSpec(const std::string& column,
                                                       const EpisodeRow& row,
                                                       const InfoJson& info,
                                                       const std::string& column_dtype) {
  ResolvedForceMatrixSpec out;
  out.spec = SpecForDtype(column_dtype);
  // (1) the episode's own force_matrix_specs: written once per episode, authoritative.
  if (row.HasColumn("force_matrix_specs") && !row.force_matrix_specs.empty()) {
    const std::string where = "episodes row " + std::to_string(row.episode_index) +
                              " force_matrix_specs";
    REEL_ASSIGN_OR_RETURN(Json specs, internal::ParseJson(row.force_matrix_specs, where));
    if (!specs.is_object())
      return Status::Invalid(where + " must be a JSON object, found " +
                             internal::JsonTypeName(specs));
    if (auto it = specs.find(column); it != specs.end() && it->is_object()) {
      std::string encoding;
      REEL_RETURN_IF_ERROR(internal::GetString(*it, "encoding", where, encoding));
      if (!encoding.empty()) { REEL_ASSIGN_OR_RETURN(out.spec.encoding, EncodingOf(encoding, where)); }
      REEL_RETURN_IF_ERROR(internal::GetString(*it, "dtype", where, out.spec.dtype));
      if (it->contains("scale")) {
        REEL_RETURN_IF_ERROR(internal::GetDouble(*it, "scale", where, out.spec.scale));
        out.source = ScaleSource::kEpisodeRow;
        return out;
      }
    }
  }
  // (2) the task-level declaration. It holds the latest episode's tier only, so it
  // applies only when it describes a column of this episode's physical type; a
  // declaration of another tier says nothing about this episode's scale.
  if (const FeatureSpec* f = info.Feature(column)) {
    ForceMatrixSpec declared = out.spec;
    if (f->encoding) {
      REEL_ASSIGN_OR_RETURN(declared.encoding, EncodingOf(*f->encoding, "info.json features"));
    }
    if (!f->dtype.empty()) declared.dtype = f->dtype;
    const bool same_tier_kind = column_dtype.empty() ||
                                (declared.dtype == column_dtype &&
                                 declared.encoding == SpecForDtype(column_dtype).encoding);
    if (f->scale && same_tier_kind) {
      out.spec = declared;
      out.spec.scale = *f->scale;
      out.source = ScaleSource::kInfoFeature;
      return out;
    }
  }
  // (3) nothing applicable declares it: uncalibrated, scale 1.
  out.spec.scale = 1.0;
  out.source = ScaleSource::kDefault;
  return out;
}

void DecodeRowDiffQuantized(const int16_t* in, double scale, float* out) {
  const float s = static_cast<float>(scale);
  int16_t q[kForceMatrixRowValues];
  for (int64_t r = 0; r < kForceMatrixSide; ++r) {
    const int16_t* d = in + r * kForceMatrixRowValues;
    float* o = out + r * kForceMatrixRowValues;
    // Pass 1, sequential: the int32 running sum cast to int16 undoes the encoder's wraparound.
    int32_t acc = 0;
    for (int64_t j = 0; j < kForceMatrixRowValues; ++j) {
      acc += d[j];
      q[j] = static_cast<int16_t>(static_cast<uint16_t>(acc));
    }
    // Pass 2, vectorisable: a true division (not a reciprocal multiply) keeps results
    // bit-identical to float32(value) / float32(scale).
    for (int64_t j = 0; j < kForceMatrixRowValues; ++j) o[j] = static_cast<float>(q[j]) / s;
  }
}

void EncodeRowDiffQuantized(const float* in, double scale, int16_t* out) {
  const float s = static_cast<float>(scale);
  for (int64_t r = 0; r < kForceMatrixSide; ++r) {
    const float* x = in + r * kForceMatrixRowValues;
    int16_t* d = out + r * kForceMatrixRowValues;
    int32_t prev = 0;
    for (int64_t j = 0; j < kForceMatrixRowValues; ++j) {
      float v = x[j] * s;  // float32 product, as numpy computes frame * scale
      v = scale == 1.0 ? std::trunc(v) : std::nearbyint(v);  // x1 truncates; others round half-even
      if (std::isnan(v)) v = 0;
      v = std::min(32767.0f, std::max(-32767.0f, v));
      int32_t q = static_cast<int32_t>(v);
      d[j] = static_cast<int16_t>(static_cast<uint16_t>(q - prev));
      prev = q;
    }
  }
}

Result<bool> DecodeForceMatrixCell(const arrow::ChunkedArray& column, int64_t row,
                                   const ForceMatrixSpec& spec, float* out) {
  if (row < 0 || row >= column.length())
    return Status::Invalid("force-matrix row " + std::to_string(row) + " out of range [0, " +
                           std::to_string(column.length()) + ")");
  int64_t local = row;
  int chunk = 0;
  while (local >= column.chunk(chunk)->length()) local -= column.chunk(chunk++)->length();
  const auto& array = column.chunk(chunk);
  if (array->type_id() != arrow::Type::LIST)
    return Status::Invalid("force-matrix column must be list<int16> or list<float32>, found " +
                           array->type()->ToString());
  const auto& list = static_cast<const arrow::ListArray&>(*array);
  if (list.IsNull(local)) return false;
  const int64_t length = list.value_length(local);
  if (length == 0) return false;
  if (length != kForceMatrixValues)
    return Status::Invalid("force-matrix row " + std::to_string(row) + " has " +
                           std::to_string(length) + " values, expected 0 or 187500 (250x250x3)");
  const int64_t offset = list.value_offset(local);
  const auto& values = *list.values();
  if (spec.encoding == ForceMatrixEncoding::kRowDiffQuantized) {
    if (values.type_id() != arrow::Type::INT16)
      return Status::Invalid("force-matrix encoding row_diff_quantized needs list<int16>, found " +
                             list.type()->ToString());
    const int16_t* in = static_cast<const arrow::Int16Array&>(values).raw_values() + offset;
    DecodeRowDiffQuantized(in, spec.scale, out);
    return true;
  }
  if (values.type_id() != arrow::Type::FLOAT)
    return Status::Invalid("force-matrix encoding row_flat_raw needs list<float32>, found " +
                           list.type()->ToString());
  const float* in = static_cast<const arrow::FloatArray&>(values).raw_values() + offset;
  // row_flat_raw is stored as is; a scale other than 1 would still divide.
  const float s = static_cast<float>(spec.scale);
  if (s == 1.0f) {
    std::copy(in, in + kForceMatrixValues, out);
  } else {
    for (int64_t i = 0; i < kForceMatrixValues; ++i) out[i] = in[i] / s;
  }
  return true;
}

}  // namespace reel
