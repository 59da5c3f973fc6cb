// reel/align.h at the episode level: which columns are streams, the time events of a data
// table, AlignEpisode and ImuTable (Arrow tables built from the pairing core).
#include <arrow/api.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "io/arrow_take.h"
#include "io/parquet_io.h"
#include "reel/align.h"
#include "reel/columns.h"
#include "reel/decode.h"

namespace reel {

namespace {

bool IsInt64(const arrow::DataType& t) { return t.id() == arrow::Type::INT64; }
bool IsInt64List(const arrow::DataType& t) {
  return t.id() == arrow::Type::LIST &&
         static_cast<const arrow::ListType&>(t).value_type()->id() == arrow::Type::INT64;
}

// An int64 column's values, null as 0.
Result<std::vector<int64_t>> Int64Values(const arrow::ChunkedArray& column, const std::string& name) {
  if (!IsInt64(*column.type())) return Status::Invalid("column \"" + name + "\" is not int64");
  std::vector<int64_t> out;
  out.reserve(column.length());
  for (const auto& chunk : column.chunks()) {
    const auto& a = static_cast<const arrow::Int64Array&>(*chunk);
    for (int64_t i = 0; i < a.length(); ++i) out.push_back(a.IsNull(i) ? 0 : a.Value(i));
  }
  return out;
}

// A list<int64> column's rows.
Result<std::vector<std::vector<int64_t>>> Int64Lists(const arrow::ChunkedArray& column, const std::string& name) {
  if (!IsInt64List(*column.type())) return Status::Invalid("column \"" + name + "\" is not list<int64>");
  std::vector<std::vector<int64_t>> out;
  out.reserve(column.length());
  for (const auto& chunk : column.chunks()) {
    const auto& l = static_cast<const arrow::ListArray&>(*chunk);
    const int64_t* v = static_cast<const arrow::Int64Array&>(*l.values()).raw_values();
    for (int64_t i = 0; i < l.length(); ++i)
      out.emplace_back(l.IsNull(i) ? v : v + l.value_offset(i), l.IsNull(i) ? v : v + l.value_offset(i + 1));
  }
  return out;
}

std::vector<std::vector<int64_t>> OnePerRow(const std::vector<int64_t>& v) {
  std::vector<std::vector<int64_t>> out;
  out.reserve(v.size());
  for (int64_t x : v) out.push_back({x});
  return out;
}

// ---- Building arrays -------------------------------------------------------------------

Result<std::shared_ptr<arrow::Buffer>> Validity(const std::vector<uint8_t>& valid, int64_t* nulls) {
  auto made = arrow::AllocateEmptyBitmap(static_cast<int64_t>(valid.size()));
  if (!made.ok()) return Status::Invalid("allocating a bitmap: " + made.status().ToString());
  std::shared_ptr<arrow::Buffer> bitmap = std::move(made).ValueOrDie();
  *nulls = 0;
  for (size_t i = 0; i < valid.size(); ++i) {
    if (valid[i]) arrow::bit_util::SetBit(bitmap->mutable_data(), static_cast<int64_t>(i));
    else ++*nulls;
  }
  return bitmap;
}

// An int64 array, null where !valid.
Result<std::shared_ptr<arrow::Array>> Int64Array(std::vector<int64_t> values, const std::vector<uint8_t>& valid) {
  int64_t nulls = 0;
  REEL_ASSIGN_OR_RETURN(auto bitmap, Validity(valid, &nulls));
  const int64_t n = static_cast<int64_t>(values.size());
  std::shared_ptr<arrow::Array> out =
      std::make_shared<arrow::Int64Array>(n, arrow::Buffer::FromVector(std::move(values)), bitmap, nulls);
  return out;
}

// fixed_size_list<T>[width] from n * width values, null where !valid.
template <typename ArrowArray, typename T>
Result<std::shared_ptr<arrow::Array>> FixedListArray(std::vector<T> values, int32_t width,
                                                     const std::vector<uint8_t>& valid) {
  int64_t nulls = 0;
  REEL_ASSIGN_OR_RETURN(auto bitmap, Validity(valid, &nulls));
  const int64_t n = static_cast<int64_t>(values.size());
  auto flat = std::make_shared<ArrowArray>(n, arrow::Buffer::FromVector(std::move(values)));
  auto made = arrow::FixedSizeListArray::FromArrays(flat, width, bitmap, nulls);
  if (!made.ok()) return Status::Invalid("building a fixed_size_list: " + made.status().ToString());
  return *made;
}

// The float32 values of a fixed_size_list<float32>[width] column, rows * width (null rows 0).
Result<std::vector<float>> FixedFloats(const arrow::ChunkedArray& column, int32_t* width) {
  const auto& t = *column.type();
  if (t.id() != arrow::Type::FIXED_SIZE_LIST ||
      static_cast<const arrow::FixedSizeListType&>(t).value_type()->id() != arrow::Type::FLOAT)
    return Status::Invalid("not fixed_size_list<float32>");
  *width = static_cast<const arrow::FixedSizeListType&>(t).list_size();
  std::vector<float> out(static_cast<size_t>(column.length()) * *width, 0.0f);
  int64_t row = 0;
  for (const auto& chunk : column.chunks()) {
    const auto& l = static_cast<const arrow::FixedSizeListArray&>(*chunk);
    const float* v = static_cast<const arrow::FloatArray&>(*l.values()).raw_values();
    for (int64_t i = 0; i < l.length(); ++i, ++row)
      if (!l.IsNull(i)) std::memcpy(&out[row * *width], v + l.value_offset(i), sizeof(float) * *width);
  }
  return out;
}

// Every 256-value frame of `frames` (rows x 256) put in the left glove's canonical order.
void CanonicalLeftGloves(std::vector<float>* frames) {
  constexpr size_t kCells = kGloveSide * kGloveSide;
  std::vector<float> frame(kCells);
  for (size_t at = 0; at + kCells <= frames->size(); at += kCells) {
    CanonicalLeftGlove(&(*frames)[at], frame.data());
    std::memcpy(&(*frames)[at], frame.data(), sizeof(float) * kCells);
  }
}

// ---- One aligned stream ------------------------------------------------------------------

struct Aligned {
  std::shared_ptr<arrow::Array> value;
  std::vector<int64_t> ns;  // per frame; the sample's stamp on the frame clock
  std::vector<uint8_t> paired;
};

// Values at each frame from k samples of `width` values: sample a, or (1-w)a + wb.
template <typename T>
std::vector<T> Blend(const std::vector<T>& samples, int32_t width, const std::vector<FramePairing>& p) {
  std::vector<T> out(p.size() * width, T{0});
  for (size_t r = 0; r < p.size(); ++r) {
    if (p[r].a < 0) continue;
    const T* a = &samples[p[r].a * width];
    const T* b = p[r].b >= 0 ? &samples[p[r].b * width] : a;
    for (int32_t k = 0; k < width; ++k) {  // in double, then rounded once to T
      const double x = a[k], y = b[k];
      out[r * width + k] = static_cast<T>(x + p[r].w * (y - x));
    }
  }
  return out;
}

Aligned Finish(const std::vector<int64_t>& frame_ns, const std::vector<FramePairing>& p) {
  Aligned out;
  out.ns.assign(p.size(), 0);
  out.paired.assign(p.size(), 0);
  for (size_t r = 0; r < p.size(); ++r)
    if (p[r].a >= 0) out.ns[r] = frame_ns[r] + p[r].dt_ns, out.paired[r] = 1;
  return out;
}

struct Episode {
  std::shared_ptr<arrow::Table> table;
  std::vector<int64_t> frame_ns;
  int64_t tolerance_ns = 0;
  AlignMethod method = AlignMethod::kNearest;
  std::string where;
  std::string imu_clock;
};

Result<Aligned> AlignScalar(Episode& ep, const std::string& name) {
  const arrow::ChunkedArray& column = *ep.table->GetColumnByName(name);
  REEL_ASSIGN_OR_RETURN(auto stamps, Int64Values(*ep.table->GetColumnByName(name + "_ns"), name + "_ns"));
  std::vector<int64_t> rows(stamps.size());
  for (size_t r = 0; r < rows.size(); ++r) rows[r] = static_cast<int64_t>(r);
  int32_t width = 0;
  auto floats = FixedFloats(column, &width);
  const AlignMethod method = floats.ok() ? ep.method : AlignMethod::kNearest;  // encoded cells: nearest
  const auto p = PairFrames(ep.frame_ns, stamps, rows, ep.tolerance_ns, method);
  Aligned out = Finish(ep.frame_ns, p);
  if (floats.ok()) {  // float vectors: zeros under a null slot, as every reel column
    REEL_ASSIGN_OR_RETURN(out.value, (FixedListArray<arrow::FloatArray>(Blend(*floats, width, p), width, out.paired)));
    return out;
  }
  std::vector<int64_t> take(p.size());
  for (size_t r = 0; r < p.size(); ++r) take[r] = p[r].a;
  REEL_ASSIGN_OR_RETURN(out.value, internal::TakeRows(column, take, internal::MissingRow::kNull));
  return out;
}

Result<Aligned> AlignSlam(Episode& ep, const std::string& name) {
  REEL_ASSIGN_OR_RETURN(auto points,
                        DecodeSlam(*ep.table->GetColumnByName(name), ep.table->GetColumnByName(name + "_ns").get()));
  std::vector<int64_t> ns, rows;
  std::vector<double> flat;
  for (const SlamPoint& pt : points) {
    ns.push_back(pt.ns);
    rows.push_back(pt.row);
    flat.insert(flat.end(), {pt.t, pt.x, pt.y, pt.z, pt.qx, pt.qy, pt.qz, pt.qw});
  }
  const auto p = PairFrames(ep.frame_ns, ns, rows, ep.tolerance_ns, ep.method);
  Aligned out = Finish(ep.frame_ns, p);
  std::vector<double> values = Blend(flat, 8, p);  // t and position linear
  for (size_t r = 0; r < p.size(); ++r)
    if (p[r].b >= 0) SlerpQuaternion(&flat[p[r].a * 8 + 4], &flat[p[r].b * 8 + 4], p[r].w, &values[r * 8 + 4]);
  REEL_ASSIGN_OR_RETURN(out.value, (FixedListArray<arrow::DoubleArray>(std::move(values), 8, out.paired)));
  return out;
}

struct ImuOnFrameClock {
  ImuSamples samples;
  std::vector<int64_t> rows;
  ImuClockMap clock;
};

Result<ImuOnFrameClock> ImuOnClock(const arrow::Table& table, const std::vector<int64_t>& frame_ns) {
  ImuOnFrameClock out;
  auto ts = table.GetColumnByName("imu_ts_ns");
  if (!ts) return Status::Invalid("observation.imu has no imu_ts_ns column: its samples have no time");
  REEL_ASSIGN_OR_RETURN(out.samples, DecodeImu(*table.GetColumnByName("observation.imu"), ts.get()));
  for (size_t r = 0; r + 1 < out.samples.row_offsets.size(); ++r)
    for (int64_t k = out.samples.row_offsets[r]; k < out.samples.row_offsets[r + 1]; ++k)
      out.rows.push_back(static_cast<int64_t>(r));
  std::vector<int64_t> raw;
  if (auto col = table.GetColumnByName("raw_hw_ns")) {
    REEL_ASSIGN_OR_RETURN(raw, Int64Values(*col, "raw_hw_ns"));
  }
  out.clock = MapImuClock(frame_ns, raw, out.samples.ts_ns, out.rows);
  return out;
}

Result<Aligned> AlignImu(Episode& ep) {
  REEL_ASSIGN_OR_RETURN(ImuOnFrameClock imu, ImuOnClock(*ep.table, ep.frame_ns));
  ep.imu_clock = imu.clock.source;
  const auto p = PairFrames(ep.frame_ns, imu.clock.ns, imu.rows, ep.tolerance_ns, ep.method);
  Aligned out = Finish(ep.frame_ns, p);
  std::vector<float> flat(imu.samples.values.size() * 6);
  if (!flat.empty()) std::memcpy(flat.data(), imu.samples.values.data(), flat.size() * sizeof(float));
  REEL_ASSIGN_OR_RETURN(out.value, (FixedListArray<arrow::FloatArray>(Blend(flat, 6, p), 6, out.paired)));
  return out;
}

// A column without a clock: its own rows, all-zero rows null, left gloves canonical.
Result<Aligned> AlignRow(Episode& ep, const std::string& name, bool glove, bool canonical) {
  const arrow::ChunkedArray& column = *ep.table->GetColumnByName(name);
  int32_t width = 0;
  auto floats = FixedFloats(column, &width);
  Aligned out;
  if (!floats.ok()) {  // another value type: as stored
    REEL_ASSIGN_OR_RETURN(out.value, internal::CombineChunks(column));
    return out;
  }
  std::vector<uint8_t> valid(column.length(), 0);
  for (int64_t r = 0; r < column.length(); ++r)
    for (int32_t k = 0; k < width && !valid[r]; ++k) valid[r] = (*floats)[r * width + k] != 0.0f;
  if (glove && canonical && width == kGloveSide * kGloveSide && IsLeftGlove(name))
    CanonicalLeftGloves(&*floats);
  REEL_ASSIGN_OR_RETURN(out.value, (FixedListArray<arrow::FloatArray>(std::move(*floats), width, valid)));
  return out;
}

}  // namespace

StreamClock StreamClockOf(const std::string& column, const arrow::Schema& schema) {
  auto field = schema.GetFieldByName(column);
  if (!field || !column.starts_with("observation.")) return StreamClock::kNone;
  if (column == "observation.imu")
    return schema.GetFieldByName("imu_ts_ns") ? StreamClock::kImuDevice : StreamClock::kNone;
  auto stamps = schema.GetFieldByName(column + "_ns");
  if (column.ends_with("slam_trajectory"))
    return stamps && IsInt64List(*stamps->type()) ? StreamClock::kSlamNs : StreamClock::kNone;
  const auto id = field->type()->id();
  if (stamps && IsInt64(*stamps->type()) && (id == arrow::Type::FIXED_SIZE_LIST || id == arrow::Type::LIST))
    return StreamClock::kScalarNs;
  return id == arrow::Type::FIXED_SIZE_LIST ? StreamClock::kRow : StreamClock::kNone;
}

Result<std::vector<TimeEvent>> FindEpisodeTimeEvents(const arrow::Table& data) {
  auto hw = data.GetColumnByName("hardware_ns");
  if (!hw || !IsInt64(*hw->type())) return std::vector<TimeEvent>{};
  REEL_ASSIGN_OR_RETURN(auto frame_ns, Int64Values(*hw, "hardware_ns"));
  std::vector<TimeEvent> events = FindTimeEvents("hardware_ns", OnePerRow(frame_ns), 0, 0);
  // A stream's span is compared with the frames' only when the frames keep one clock.
  int64_t start = 0, end = 0;
  if (!frame_ns.empty() && ClockSegments(frame_ns).back() == 0)
    for (int64_t v : frame_ns) {
      if (v == 0) continue;
      if (start == 0) start = v;
      end = v;
    }
  for (const auto& field : data.schema()->fields()) {
    const std::string& name = field->name();
    std::vector<TimeEvent> more;
    if (name.starts_with("observation.") && name.ends_with("_ns") && IsInt64(*field->type())) {
      REEL_ASSIGN_OR_RETURN(auto v, Int64Values(*data.GetColumnByName(name), name));
      more = FindTimeEvents(name, OnePerRow(v), start, end);
    } else if (IsInt64List(*field->type()) && (name.ends_with("slam_trajectory_ns") || name == "imu_ts_ns")) {
      REEL_ASSIGN_OR_RETURN(auto v, Int64Lists(*data.GetColumnByName(name), name));
      more = name == "imu_ts_ns" ? FindTimeEvents(name, v, 0, 0) : FindTimeEvents(name, v, start, end);
    }
    events.insert(events.end(), more.begin(), more.end());
  }
  return events;
}

namespace {

// The columns to align (options' or every stream of the schema) and the columns to read.
Result<std::vector<std::string>> StreamsToAlign(const arrow::Schema& schema, const AlignOptions& options,
                                                const std::string& where, std::vector<std::string>* read) {
  std::vector<std::string> streams;
  if (options.columns.empty()) {
    for (const auto& f : schema.fields())
      if (StreamClockOf(f->name(), schema) != StreamClock::kNone) streams.push_back(f->name());
  }
  for (const std::string& c : options.columns) {
    if (!schema.GetFieldByName(c)) return Status::NotFound(where + ": no column \"" + c + "\"");
    if (StreamClockOf(c, schema) == StreamClock::kNone)
      return Status::Invalid(where + ": column \"" + c +
                             "\" is not a stream to align (an observation.* value column: stamped by "
                             "<column>_ns, a trajectory with its _ns, observation.imu with imu_ts_ns, or "
                             "a fixed-size column of its row)");
    streams.push_back(c);
  }
  *read = {"frame_index", "hardware_ns"};
  auto add = [&](const std::string& c) {
    if (schema.GetFieldByName(c) && std::find(read->begin(), read->end(), c) == read->end()) read->push_back(c);
  };
  for (const std::string& c : streams) {
    add(c);
    add(c + "_ns");
    if (c == "observation.imu") add("imu_ts_ns"), add("raw_hw_ns");
  }
  return streams;
}

Result<Episode> ReadEpisode(const Task& task, int64_t n, const std::vector<std::string>& read) {
  REEL_ASSIGN_OR_RETURN(EpisodeEntry e, task.FindEpisode(n));
  if (e.data_path.empty()) return Status::NotFound("episode " + std::to_string(n) + " has no data file");
  Episode ep;
  ep.where = task.Path(e.data_path);
  auto table = task.ReadData(e, read);
  if (!table.ok()) return table.status().WithContext(ep.where);
  ep.table = *table;
  auto frames = Int64Values(*ep.table->GetColumnByName("hardware_ns"), "hardware_ns");
  if (!frames.ok()) return frames.status().WithContext(ep.where);
  ep.frame_ns = std::move(*frames);
  return ep;
}

Result<std::shared_ptr<arrow::Schema>> SchemaOf(const Task& task, int64_t n, std::string* where) {
  REEL_ASSIGN_OR_RETURN(EpisodeEntry e, task.FindEpisode(n));
  if (e.data_path.empty()) return Status::NotFound("episode " + std::to_string(n) + " has no data file");
  *where = task.Path(e.data_path);
  auto schema = task.ReadDataSchema(e);
  if (!schema.ok()) return schema.status().WithContext(*where);
  for (const char* key : {"frame_index", "hardware_ns"})
    if (!(*schema)->GetFieldByName(key)) return Status::Invalid(*where + ": no " + key + " column");
  return *schema;
}

Result<Aligned> AlignStream(Episode& ep, const std::string& name, const arrow::Schema& schema,
                            const Task& task, const AlignOptions& options) {
  switch (StreamClockOf(name, schema)) {
    case StreamClock::kScalarNs: return AlignScalar(ep, name);
    case StreamClock::kSlamNs: return AlignSlam(ep, name);
    case StreamClock::kImuDevice: return AlignImu(ep);
    case StreamClock::kRow:
      return AlignRow(ep, name, ClassifyColumn(name, task.info().sensors) == ColumnFamily::kGlove,
                      options.canonical_gloves);
    case StreamClock::kNone: break;
  }
  return Status::Invalid("column \"" + name + "\" is not a stream");
}

// A trajectory's frame by the contract's authority order (ResolveSlamSpec) as field
// metadata (reel.frame, reel.frame_source); null for other columns.
std::shared_ptr<const arrow::KeyValueMetadata> TrajectoryMetadata(const Task& task, int64_t n,
                                                                  const std::string& name,
                                                                  const arrow::Schema& schema) {
  if (StreamClockOf(name, schema) != StreamClock::kSlamNs) return nullptr;
  auto spec = SlamSpecOf(task, n, name);
  if (!spec.ok()) return nullptr;
  return arrow::key_value_metadata({"reel.frame", "reel.frame_source"},
                                   {spec->frame, SlamSpecSourceName(spec->source)});
}

// Episode N's frames and its IMU samples on the frame clock (ImuTable, ImuWindowsOf).
Result<std::pair<Episode, ImuOnFrameClock>> ReadImuEpisode(const Task& task, int64_t n) {
  std::string where;
  REEL_ASSIGN_OR_RETURN(auto schema, SchemaOf(task, n, &where));
  if (!schema->GetFieldByName("observation.imu"))
    return Status::NotFound(where + ": no observation.imu column (this episode has no IMU samples)");
  std::vector<std::string> read = {"frame_index", "hardware_ns", "observation.imu"};
  for (const char* optional : {"imu_ts_ns", "raw_hw_ns"})
    if (schema->GetFieldByName(optional)) read.push_back(optional);
  REEL_ASSIGN_OR_RETURN(Episode ep, ReadEpisode(task, n, read));
  auto imu = ImuOnClock(*ep.table, ep.frame_ns);
  if (!imu.ok()) return imu.status().WithContext(where);
  return std::make_pair(std::move(ep), std::move(*imu));
}

// tolerance_s in ns, or half a frame period of info.json's fps when it is 0.
Result<int64_t> ToleranceNs(const Task& task, double tolerance_s, const std::string& where) {
  const double s = tolerance_s > 0 ? tolerance_s : 0.5 / task.info().fps;
  if (!(s > 0) || !std::isfinite(s) || s > 1e6)
    return Status::Invalid(where + ": tolerance_s must be a positive number of seconds (info.json fps " +
                           std::to_string(task.info().fps) + ")");
  return static_cast<int64_t>(std::llround(s * 1e9));
}

std::string ResetRows(const std::vector<int64_t>& frame_ns) {
  std::string out;
  const auto segment = ClockSegments(frame_ns);
  for (size_t r = 1; r < segment.size(); ++r)
    if (segment[r] != segment[r - 1]) out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

}  // namespace

Result<std::shared_ptr<arrow::Table>> AlignEpisode(const Task& task, int64_t n, const AlignOptions& options) {
  std::string where;
  REEL_ASSIGN_OR_RETURN(auto schema, SchemaOf(task, n, &where));
  std::vector<std::string> read;
  REEL_ASSIGN_OR_RETURN(auto streams, StreamsToAlign(*schema, options, where, &read));
  REEL_ASSIGN_OR_RETURN(const int64_t tolerance_ns, ToleranceNs(task, options.tolerance_s, where));
  REEL_ASSIGN_OR_RETURN(Episode ep, ReadEpisode(task, n, read));
  ep.tolerance_ns = tolerance_ns;
  ep.method = options.method;
  std::vector<std::shared_ptr<arrow::Field>> fields = {arrow::field("frame_index", arrow::int64()),
                                                       arrow::field("hardware_ns", arrow::int64())};
  std::vector<uint8_t> stamped(ep.frame_ns.size());
  for (size_t r = 0; r < stamped.size(); ++r) stamped[r] = ep.frame_ns[r] != 0;
  REEL_ASSIGN_OR_RETURN(auto frame_index, internal::CombineChunks(*ep.table->GetColumnByName("frame_index")));
  REEL_ASSIGN_OR_RETURN(auto hw, Int64Array(ep.frame_ns, stamped));
  std::vector<std::shared_ptr<arrow::Array>> columns = {frame_index, hw};
  for (const std::string& name : streams) {
    auto aligned = AlignStream(ep, name, *schema, task, options);
    if (!aligned.ok()) return aligned.status().WithContext(ep.where + ": column \"" + name + "\"");
    fields.push_back(arrow::field(name, aligned->value->type(), true, TrajectoryMetadata(task, n, name, *schema)));
    columns.push_back(aligned->value);
    if (StreamClockOf(name, *schema) == StreamClock::kRow) continue;
    std::vector<int64_t> dt(aligned->ns.size());
    for (size_t r = 0; r < dt.size(); ++r) dt[r] = aligned->paired[r] ? aligned->ns[r] - ep.frame_ns[r] : 0;
    REEL_ASSIGN_OR_RETURN(auto ns, Int64Array(aligned->ns, aligned->paired));
    REEL_ASSIGN_OR_RETURN(auto dts, Int64Array(std::move(dt), aligned->paired));
    fields.push_back(arrow::field(name + "_ns", arrow::int64()));
    fields.push_back(arrow::field(name + "_dt_ns", arrow::int64()));
    columns.push_back(ns);
    columns.push_back(dts);
  }
  auto metadata = arrow::key_value_metadata(
      {"reel.method", "reel.tolerance_ns", "reel.imu_clock", "reel.clock_resets"},
      {options.method == AlignMethod::kNearest ? "nearest" : "interpolate", std::to_string(ep.tolerance_ns),
       ep.imu_clock, ResetRows(ep.frame_ns)});
  return arrow::Table::Make(arrow::schema(fields, metadata), columns);
}

Result<std::shared_ptr<arrow::Table>> ImuTable(const Task& task, int64_t n) {
  REEL_ASSIGN_OR_RETURN(auto read, ReadImuEpisode(task, n));
  auto& [ep, imu_samples] = read;
  auto* imu = &imu_samples;
  const size_t k = imu->rows.size();
  const std::vector<int64_t> frame = NearestFrames(ep.frame_ns, imu->clock.ns, imu->rows);
  std::vector<int64_t> dt(k, 0), frame_out(k, 0);
  std::vector<uint8_t> mapped(k), framed(k), all(k, 1);
  for (size_t i = 0; i < k; ++i) {
    mapped[i] = imu->clock.ns[i] != 0;
    framed[i] = frame[i] >= 0;
    frame_out[i] = std::max<int64_t>(frame[i], 0);
    if (framed[i]) dt[i] = imu->clock.ns[i] - ep.frame_ns[frame[i]];
  }
  std::vector<float> flat(k * 6);
  if (k) std::memcpy(flat.data(), imu->samples.values.data(), flat.size() * sizeof(float));
  REEL_ASSIGN_OR_RETURN(auto rows, Int64Array(imu->rows, all));
  REEL_ASSIGN_OR_RETURN(auto device, Int64Array(imu->samples.ts_ns, all));
  REEL_ASSIGN_OR_RETURN(auto ns, Int64Array(imu->clock.ns, mapped));
  REEL_ASSIGN_OR_RETURN(auto frames, Int64Array(std::move(frame_out), framed));
  REEL_ASSIGN_OR_RETURN(auto dts, Int64Array(std::move(dt), framed));
  REEL_ASSIGN_OR_RETURN(auto values, (FixedListArray<arrow::FloatArray>(std::move(flat), 6, all)));
  arrow::FieldVector fields = {arrow::field("row", arrow::int64()), arrow::field("imu_ts_ns", arrow::int64()),
                 arrow::field("ns", arrow::int64()), arrow::field("frame", arrow::int64()),
                 arrow::field("dt_ns", arrow::int64()), arrow::field("imu", values->type())};
  return arrow::Table::Make(
      arrow::schema(fields, arrow::key_value_metadata({"reel.imu_clock"}, {imu->clock.source})),
      {rows, device, ns, frames, dts, values});
}

Result<ImuWindows> ImuWindowsOf(const Task& task, int64_t n, int64_t window, double max_age_s) {
  if (window < 1 || window > 4096)
    return Status::Invalid("an IMU window holds 1 to 4096 samples, got " + std::to_string(window));
  REEL_ASSIGN_OR_RETURN(auto read, ReadImuEpisode(task, n));
  auto& [ep, imu_samples] = read;
  auto* imu = &imu_samples;
  const size_t rows = ep.frame_ns.size();
  ImuWindows out;
  out.window = window;
  out.clock = imu->clock.source;
  out.values.assign(rows * window * 6, 0.0f);
  out.ns.assign(rows * window, 0);
  out.valid.assign(rows * window, 0);
  const int64_t max_age = max_age_s > 0 ? static_cast<int64_t>(std::llround(max_age_s * 1e9)) : 0;
  const std::vector<int32_t> segment = ClockSegments(ep.frame_ns);
  // Samples per segment sorted by time (a repeated stamp once), as PairFrames sees them.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> by(segment.empty() ? 1 : segment.back() + 1);
  for (size_t i = 0; i < imu->rows.size(); ++i) {
    if (imu->clock.ns[i] == 0 || rows == 0) continue;
    const int32_t s = segment[std::min<size_t>(imu->rows[i], rows - 1)];
    by[s].push_back({imu->clock.ns[i], static_cast<int64_t>(i)});
  }
  for (auto& v : by) {
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    v.erase(std::unique(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first == b.first; }), v.end());
  }
  for (size_t r = 0; r < rows; ++r) {
    const int64_t t = ep.frame_ns[r];
    if (t == 0) continue;
    const auto& v = by[segment[r]];
    auto end = std::upper_bound(v.begin(), v.end(), t, [](int64_t x, const auto& s) { return x < s.first; });
    int64_t slot = window - 1;
    for (auto it = end; it != v.begin() && slot >= 0; --slot) {
      --it;
      if (max_age > 0 && t - it->first > max_age) break;
      const size_t cell = r * window + slot;
      out.valid[cell] = 1;
      out.ns[cell] = it->first;
      std::memcpy(&out.values[cell * 6], imu->samples.values[it->second].data(), 6 * sizeof(float));
    }
  }
  return out;
}

namespace {

// One decoded frame (250 x 250 x 3, mN) into its (height, width, channels) cell of `out`.
void PoolFrame(const float* frame, const AlignedForceMatrices& m, int downsample, float* out) {
  const float inv = 1.0f / static_cast<float>(downsample * downsample);
  for (int64_t y = 0; y < m.height; ++y)
    for (int64_t x = 0; x < m.width; ++x)
      for (int64_t c = 0; c < m.channels; ++c) {
        const int64_t source_c = m.channels == 1 ? 2 : c;  // kFz: the fz channel
        float sum = 0.0f;
        for (int dy = 0; dy < downsample; ++dy)
          for (int dx = 0; dx < downsample; ++dx)
            sum += frame[((y * downsample + dy) * kForceMatrixSide + x * downsample + dx) * 3 + source_c];
        out[(y * m.width + x) * m.channels + c] = downsample == 1 ? sum : sum * inv;
      }
}

Result<ResolvedForceMatrixSpec> SpecOf(const Task& task, int64_t n, const std::string& column,
                                       const arrow::DataType& type) {
  REEL_ASSIGN_OR_RETURN(EpisodeEntry e, task.FindEpisode(n));
  EpisodeRow row;
  row.episode_index = n;
  if (auto read = task.ReadEpisodeRow(e); read.ok()) row = *read;
  const auto* list = dynamic_cast<const arrow::ListType*>(&type);
  const bool int16 = list && list->value_type()->id() == arrow::Type::INT16;
  return ResolveForceMatrixSpec(column, row, task.info(), int16 ? "int16" : "float32");
}

// Frame r's sample is `sample[r]`, an index into `values` (-1: none), decoded once per
// sample whatever the order and pooled into row r; a sample whose cell is empty is no sample.
Result<AlignedForceMatrices> DecodeSamples(const arrow::ChunkedArray& values, const std::vector<int64_t>& sample,
                                           const std::vector<int64_t>& dt_ns, const ForceMatrixSpec& spec,
                                           ForcePlane plane, int downsample) {
  if (downsample < 1 || kForceMatrixSide % downsample != 0)
    return Status::Invalid("force-matrix downsample must divide 250, got " + std::to_string(downsample));
  AlignedForceMatrices out;
  out.height = out.width = kForceMatrixSide / downsample;
  out.channels = plane == ForcePlane::kFz ? 1 : 3;
  const int64_t cell = out.height * out.width * out.channels, rows = static_cast<int64_t>(sample.size());
  out.values.assign(static_cast<size_t>(rows * cell), 0.0f);
  out.valid.assign(rows, 0);
  out.dt_ns.assign(rows, 0);
  std::vector<int64_t> order;
  for (int64_t r = 0; r < rows; ++r)
    if (sample[r] >= 0) order.push_back(r);
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return sample[x] < sample[y]; });
  std::vector<float> frame(kForceMatrixValues);
  int64_t decoded = -1;  // the sample `frame` holds
  bool present = false;
  for (int64_t r : order) {
    if (sample[r] != decoded) {
      REEL_ASSIGN_OR_RETURN(present, DecodeForceMatrixCell(values, sample[r], spec, frame.data()));
      decoded = sample[r];
    }
    if (!present) continue;  // a stamped row whose cell is empty: no sample
    PoolFrame(frame.data(), out, downsample, &out.values[r * cell]);
    out.valid[r] = 1;
    out.dt_ns[r] = dt_ns[r];
  }
  return out;
}

}  // namespace

Result<AlignedForceMatrices> PairForceMatrices(const arrow::ChunkedArray& values, const std::vector<int64_t>& stamps,
                                               const std::vector<int64_t>& frame_ns, const ForceMatrixSpec& spec,
                                               ForcePlane plane, int downsample, int64_t tolerance_ns) {
  std::vector<int64_t> sample_rows(stamps.size());
  for (size_t r = 0; r < sample_rows.size(); ++r) sample_rows[r] = static_cast<int64_t>(r);
  const auto p = PairFrames(frame_ns, stamps, sample_rows, tolerance_ns, AlignMethod::kNearest);
  std::vector<int64_t> sample(p.size()), dt(p.size());
  for (size_t r = 0; r < p.size(); ++r) sample[r] = p[r].a, dt[r] = p[r].dt_ns;
  return DecodeSamples(values, sample, dt, spec, plane, downsample);
}

Result<std::unique_ptr<ForceMatrixFrames>> ForceMatrixFrames::Open(const Task& task, int64_t n,
                                                                   const std::string& column, ForcePlane plane,
                                                                   int downsample, double tolerance_s) {
  if (downsample < 1 || kForceMatrixSide % downsample != 0)
    return Status::Invalid("force-matrix downsample must divide 250, got " + std::to_string(downsample));
  std::unique_ptr<ForceMatrixFrames> out(new ForceMatrixFrames());
  REEL_ASSIGN_OR_RETURN(auto schema, SchemaOf(task, n, &out->where_));
  const auto field = schema->GetFieldByName(column);
  if (!field) return Status::NotFound(out->where_ + ": no column \"" + column + "\"");
  if (StreamClockOf(column, *schema) != StreamClock::kScalarNs || field->type()->id() != arrow::Type::LIST)
    return Status::Invalid(out->where_ + ": column \"" + column + "\" is not a force-matrix column stamped by " +
                           column + "_ns");
  REEL_ASSIGN_OR_RETURN(const int64_t tolerance_ns, ToleranceNs(task, tolerance_s, out->where_));
  REEL_ASSIGN_OR_RETURN(Episode ep, ReadEpisode(task, n, {"frame_index", "hardware_ns", column + "_ns"}));
  REEL_ASSIGN_OR_RETURN(auto stamps, Int64Values(*ep.table->GetColumnByName(column + "_ns"), column + "_ns"));
  REEL_ASSIGN_OR_RETURN(auto spec, SpecOf(task, n, column, *field->type()));
  auto source = std::make_shared<internal::ParquetSource>();
  REEL_ASSIGN_OR_RETURN(out->file_, internal::OpenParquet(task.fs(), out->where_, false, source.get()));
  out->source_ = std::move(source);
  out->reading_ = std::make_unique<std::mutex>();
  std::vector<int64_t> sample_rows(stamps.size());
  for (size_t r = 0; r < sample_rows.size(); ++r) sample_rows[r] = static_cast<int64_t>(r);
  out->pairing_ = PairFrames(ep.frame_ns, stamps, sample_rows, tolerance_ns, AlignMethod::kNearest);
  out->column_ = column;
  out->spec_ = spec.spec;
  out->plane_ = plane;
  out->downsample_ = downsample;
  return out;
}

Result<AlignedForceMatrices> ForceMatrixFrames::Decode(const std::vector<int64_t>& frames) const {
  std::vector<int64_t> wanted;  // the samples the frames pair with, ascending, each once
  for (int64_t f : frames) {
    if (f < 0 || f >= rows())
      return Status::Invalid(where_ + ": frame " + std::to_string(f) + " outside the episode's " +
                             std::to_string(rows()) + " rows");
    if (pairing_[f].a >= 0) wanted.push_back(pairing_[f].a);
  }
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  auto read = [&] {
    std::lock_guard<std::mutex> lock(*reading_);
    return internal::ReadListRows(*file_, *source_, column_, wanted, where_);
  }();
  REEL_ASSIGN_OR_RETURN(auto cells, std::move(read));
  const arrow::ChunkedArray values(cells);
  std::vector<int64_t> sample(frames.size(), -1), dt(frames.size(), 0);
  for (size_t i = 0; i < frames.size(); ++i) {
    const FramePairing& p = pairing_[frames[i]];
    if (p.a < 0) continue;
    sample[i] = std::lower_bound(wanted.begin(), wanted.end(), p.a) - wanted.begin();
    dt[i] = p.dt_ns;
  }
  auto out = DecodeSamples(values, sample, dt, spec_, plane_, downsample_);
  if (!out.ok()) return out.status().WithContext(where_ + ": column \"" + column_ + "\"");
  return out;
}

Result<AlignedForceMatrices> AlignForceMatrices(const Task& task, int64_t n, const std::string& column,
                                                ForcePlane plane, int downsample, double tolerance_s) {
  REEL_ASSIGN_OR_RETURN(auto frames, ForceMatrixFrames::Open(task, n, column, plane, downsample, tolerance_s));
  std::vector<int64_t> all(static_cast<size_t>(frames->rows()));
  for (size_t r = 0; r < all.size(); ++r) all[r] = static_cast<int64_t>(r);
  return frames->Decode(all);
}

Result<ResolvedSlamSpec> SlamSpecOf(const Task& task, int64_t n, const std::string& column) {
  REEL_ASSIGN_OR_RETURN(EpisodeEntry e, task.FindEpisode(n));
  EpisodeRow row;
  row.episode_index = n;
  row.missing_columns = {"slam_specs"};
  if (auto read = task.ReadEpisodeRow(e); read.ok()) row = *read;
  return ResolveSlamSpec(column, row, task.info());
}

Result<std::vector<float>> GloveFrames(const Task& task, int64_t n, const std::string& column, bool canonical) {
  std::string where;
  REEL_ASSIGN_OR_RETURN(auto schema, SchemaOf(task, n, &where));
  if (!schema->GetFieldByName(column)) return Status::NotFound(where + ": no column \"" + column + "\"");
  REEL_ASSIGN_OR_RETURN(Episode ep, ReadEpisode(task, n, {"hardware_ns", column}));
  const arrow::ChunkedArray& col = *ep.table->GetColumnByName(column);
  int32_t width = 0;
  auto floats = FixedFloats(col, &width);
  constexpr int kCells = kGloveSide * kGloveSide;
  if (!floats.ok() || width != kCells)
    return Status::Invalid(where + ": column \"" + column + "\" is " + col.type()->ToString() +
                           ", not a glove frame (fixed_size_list<float32>[256])");
  if (canonical && IsLeftGlove(column)) CanonicalLeftGloves(&*floats);
  return std::move(*floats);
}

}  // namespace reel
