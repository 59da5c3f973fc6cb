// Force-matrix codec (contract §7.2.1; reference-behaviour.md "Force matrix codec").
#include <arrow/api.h>

#include <cmath>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "util/json_util.h"
#include "util/parallel.h"
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

namespace {

// Row-diff decode, one row of 750 (contract §7.2.1): q[j] = int16(sum d[0..j]) and
// out[j] = float32(q[j]) / float32(scale). The sum is taken modulo 2^16 at every step:
// that equals the reference's int32 running sum cast to int16 (wraparound), because
// int16 wrapping addition is addition modulo 2^16, whatever the order of the adds. The
// division stays a true division: x * (1 / scale) differs from x / scale in the last
// bit for some int16 values at scales 10, 100 and 1000, and the decoded values must be
// bit-identical to the reference collector's float32(q) / float32(scale). divps is
// correctly rounded like divss, so the vector and scalar paths agree bit for bit.
void DecodeRowTail(const int16_t* d, float s, float* o, int64_t begin, uint16_t carry) {
  for (int64_t j = begin; j < kForceMatrixRowValues; ++j) {
    carry = static_cast<uint16_t>(carry + static_cast<uint16_t>(d[j]));
    o[j] = static_cast<float>(static_cast<int16_t>(carry)) / s;
  }
}

#if defined(__SSE2__)
// 8 int16 per step: an in-register prefix sum (three shifted adds), plus the carry of the
// previous step broadcast to every lane; sign-extended to int32, converted, divided. One
// pass over the row, nothing written but the output. SSE2 is part of x86-64, so this needs
// no runtime check.
void DecodeRowSse2(const int16_t* d, float s, float* o) {
  const __m128 sv = _mm_set1_ps(s);
  __m128i carry = _mm_setzero_si128();
  int64_t j = 0;
  for (; j + 8 <= kForceMatrixRowValues; j += 8) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(d + j));
    v = _mm_add_epi16(v, _mm_slli_si128(v, 2));
    v = _mm_add_epi16(v, _mm_slli_si128(v, 4));
    v = _mm_add_epi16(v, _mm_slli_si128(v, 8));
    v = _mm_add_epi16(v, carry);
    carry = _mm_shuffle_epi32(_mm_shufflehi_epi16(v, 0xFF), 0xFF);  // lane 7 everywhere
    const __m128i lo = _mm_srai_epi32(_mm_unpacklo_epi16(v, v), 16);
    const __m128i hi = _mm_srai_epi32(_mm_unpackhi_epi16(v, v), 16);
    _mm_storeu_ps(o + j, _mm_div_ps(_mm_cvtepi32_ps(lo), sv));
    _mm_storeu_ps(o + j + 4, _mm_div_ps(_mm_cvtepi32_ps(hi), sv));
  }
  DecodeRowTail(d, s, o, j, static_cast<uint16_t>(_mm_cvtsi128_si32(carry)));
}
#endif

}  // namespace

void DecodeRowDiffQuantized(const int16_t* in, double scale, float* out) {
  const float s = static_cast<float>(scale);
  for (int64_t r = 0; r < kForceMatrixSide; ++r) {
    const int16_t* d = in + r * kForceMatrixRowValues;
    float* o = out + r * kForceMatrixRowValues;
#if defined(__SSE2__)
    DecodeRowSse2(d, s, o);
#else
    DecodeRowTail(d, s, o, 0, 0);
#endif
  }
}

void DecodeRowDiffQuantizedFrames(const int16_t* in, int64_t frames, double scale, float* out,
                                  int threads) {
  internal::ParallelFor(frames, threads, [&](int64_t i) {
    DecodeRowDiffQuantized(in + i * kForceMatrixValues, scale, out + i * kForceMatrixValues);
  });
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
