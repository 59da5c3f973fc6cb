// `reel export --to flat` (docs/interop.md "The flat table"): one row per IMU sample with
// the frame-level signals interpolated to the sample's time on the frame clock; one row per
// frame for an episode without IMU samples. Written as flat.parquet (one row group per
// episode or more) and flat.json, the marker, last.
#include <arrow/api.h>
#include <parquet/arrow/writer.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "interop/aligned_features.h"
#include "interop/export_internal.h"
#include "io/parquet_io.h"
#include "reel/align.h"
#include "reel/decode.h"

namespace reel::internal {
namespace {

using OJson = nlohmann::ordered_json;

constexpr const char* kImuNames[6] = {"acc_x", "acc_y", "acc_z", "gyro_x", "gyro_y", "gyro_z"};

// A frame-level signal of the flat table.
struct Signal {
  std::string column;
  StreamClock clock = StreamClock::kRow;  // kScalarNs, kRow or kSlamNs
  int32_t width = 0;                      // values per sample (8 for a trajectory)
};

// Scalar-stamped force vectors (X with X_ns), row-clock *_state vectors and trajectories.
std::vector<Signal> FlatSignals(const arrow::Schema& schema) {
  std::vector<Signal> out;
  for (const auto& field : schema.fields()) {
    const std::string& name = field->name();
    const StreamClock clock = StreamClockOf(name, schema);
    const auto& t = *field->type();
    const bool floats = t.id() == arrow::Type::FIXED_SIZE_LIST &&
                        static_cast<const arrow::FixedSizeListType&>(t).value_type()->id() == arrow::Type::FLOAT;
    const int32_t w = floats ? static_cast<const arrow::FixedSizeListType&>(t).list_size() : 0;
    if (clock == StreamClock::kScalarNs && floats && name.ends_with("_force")) out.push_back({name, clock, w});
    if (clock == StreamClock::kRow && floats && name.ends_with("_state")) out.push_back({name, clock, w});
    if (clock == StreamClock::kSlamNs) out.push_back({name, clock, 8});
  }
  return out;
}

// The rows of the flat table for one episode: where each sample is on the frame clock.
struct Targets {
  std::vector<int64_t> ns;         // on the frame clock; 0 = unknown (never paired)
  std::vector<int64_t> row;        // the data row it hangs on
  std::vector<uint8_t> has_imu;    // 0: a frame row of an episode without IMU samples
  std::vector<int64_t> imu_ts, frame;
  std::vector<uint8_t> framed;
  std::vector<float> imu;          // 6 per target
  std::string clock;               // reel.imu_clock, or "none"
};

Result<Targets> TargetsOf(const Task& task, int64_t n, const std::vector<int64_t>& frame_ns) {
  Targets t;
  auto table = ImuTable(task, n);
  if (!table.ok() && table.status().code() != StatusCode::kNotFound) return table.status();
  if (!table.ok() || (*table)->num_rows() == 0) {  // no IMU: one row per frame
    t.clock = "none";
    t.ns = frame_ns;
    for (size_t r = 0; r < frame_ns.size(); ++r) {
      t.row.push_back(static_cast<int64_t>(r));
      t.frame.push_back(static_cast<int64_t>(r));
    }
    const size_t k = frame_ns.size();
    t.has_imu.assign(k, 0), t.imu_ts.assign(k, 0), t.framed.assign(k, 1), t.imu.assign(k * 6, 0.0f);
    return t;
  }
  const arrow::Table& imu = **table;
  auto meta = imu.schema()->metadata();
  t.clock = meta && meta->Contains("reel.imu_clock") ? *meta->Get("reel.imu_clock") : "";
  t.ns = Int64ColumnValues(imu, "ns");
  t.row = Int64ColumnValues(imu, "row");
  t.imu_ts = Int64ColumnValues(imu, "imu_ts_ns");
  t.frame = Int64ColumnValues(imu, "frame");
  auto frame_col = arrow::Concatenate(imu.GetColumnByName("frame")->chunks());
  if (!frame_col.ok()) return Status::IOError(frame_col.status().ToString());
  t.has_imu.assign(t.ns.size(), 1);
  for (int64_t i = 0; i < (*frame_col)->length(); ++i) t.framed.push_back((*frame_col)->IsValid(i));
  auto values = arrow::Concatenate(imu.GetColumnByName("imu")->chunks());
  if (!values.ok()) return Status::IOError(values.status().ToString());
  const auto& list = static_cast<const arrow::FixedSizeListArray&>(**values);
  const float* v = static_cast<const arrow::FloatArray&>(*list.values()).raw_values() + list.value_offset(0);
  t.imu.assign(v, v + list.length() * 6);
  return t;
}

// A sample's "row" for PairFrames is an index into the targets: its segment is that
// target's. A frame-level sample of data row r takes the first target hanging on row r or
// later (targets are in row order), so it is paired only within its own clock segment.
std::vector<int64_t> TargetOfRow(const Targets& t, int64_t rows) {
  std::vector<int64_t> out(static_cast<size_t>(rows), 0);
  size_t k = 0;
  for (int64_t r = 0; r < rows; ++r) {
    while (k + 1 < t.row.size() && t.row[k] < r) ++k;
    out[r] = static_cast<int64_t>(k);
  }
  return out;
}

// One signal's samples: per sample its stamp, data row and `width` values (as double).
struct Samples {
  std::vector<int64_t> ns, row;
  std::vector<double> values;
};

Result<Samples> SamplesOf(const arrow::Table& pooled, const Signal& s, const std::vector<int64_t>& frame_ns) {
  Samples out;
  if (s.clock == StreamClock::kSlamNs) {
    REEL_ASSIGN_OR_RETURN(auto points,
                          DecodeSlam(*pooled.GetColumnByName(s.column), pooled.GetColumnByName(s.column + "_ns").get()));
    for (const SlamPoint& p : points) {
      out.ns.push_back(p.ns), out.row.push_back(p.row);
      out.values.insert(out.values.end(), {p.t, p.x, p.y, p.z, p.qx, p.qy, p.qz, p.qw});
    }
    return out;
  }
  auto combined = arrow::Concatenate(pooled.GetColumnByName(s.column)->chunks());
  if (!combined.ok()) return Status::IOError(combined.status().ToString());
  const auto& list = static_cast<const arrow::FixedSizeListArray&>(**combined);
  const float* v = static_cast<const arrow::FloatArray&>(*list.values()).raw_values();
  // kScalarNs: stamped by X_ns (0 = no new sample); kRow: the row's frame time, an
  // all-zero row being no sample (§5.5).
  const std::vector<int64_t> stamps =
      s.clock == StreamClock::kScalarNs ? Int64ColumnValues(pooled, s.column + "_ns") : frame_ns;
  for (int64_t r = 0; r < list.length(); ++r) {
    const float* x = v + list.value_offset(r);
    bool any = !list.IsNull(r) && s.clock == StreamClock::kScalarNs;
    for (int32_t k = 0; k < s.width && !any && !list.IsNull(r); ++k) any = x[k] != 0.0f;
    out.ns.push_back(any ? stamps[r] : 0);
    out.row.push_back(r);
    for (int32_t k = 0; k < s.width; ++k) out.values.push_back(list.IsNull(r) ? 0.0 : x[k]);
  }
  return out;
}

// The signal interpolated at every target (PairFrames kInterpolate), null where none.
Result<std::shared_ptr<arrow::Array>> SignalColumn(const arrow::Table& pooled, const Signal& s, const Targets& t,
                                                   const std::vector<int64_t>& frame_ns, int64_t tolerance_ns) {
  REEL_ASSIGN_OR_RETURN(Samples samples, SamplesOf(pooled, s, frame_ns));
  const std::vector<int64_t> of_row = TargetOfRow(t, pooled.num_rows());
  std::vector<int64_t> sample_target(samples.row.size());
  for (size_t i = 0; i < samples.row.size(); ++i) sample_target[i] = of_row.empty() ? 0 : of_row[samples.row[i]];
  const auto p = PairFrames(t.ns, samples.ns, sample_target, tolerance_ns, AlignMethod::kInterpolate);
  const bool pose = s.clock == StreamClock::kSlamNs;
  const size_t k = p.size();
  std::vector<double> x(k * s.width, 0.0);
  std::vector<uint8_t> ok(k, 0);
  for (size_t j = 0; j < k; ++j) {
    const FramePairing& fp = p[j];
    if (fp.a < 0) continue;
    ok[j] = 1;
    const double* a = &samples.values[fp.a * s.width];
    const double* b = fp.b >= 0 ? &samples.values[fp.b * s.width] : a;
    double* out = &x[j * s.width];
    for (int32_t c = 0; c < s.width; ++c) out[c] = a[c] + fp.w * (b[c] - a[c]);
    if (pose && fp.b >= 0) SlerpQuaternion(a + 4, b + 4, fp.w, out + 4);
  }
  // list<T> with `width` values a row, null rows empty: a parquet round trip of a
  // fixed_size_list with null rows fails in pyarrow ("Expected all lists to be of size=3").
  std::vector<double> kept;
  std::vector<int32_t> offsets = {0};
  for (size_t j = 0; j < k; ++j) {
    if (ok[j]) kept.insert(kept.end(), x.begin() + j * s.width, x.begin() + (j + 1) * s.width);
    offsets.push_back(static_cast<int32_t>(kept.size()));
  }
  const auto length = static_cast<int64_t>(kept.size());  // before the vector is moved away
  std::shared_ptr<arrow::Array> flat;
  if (pose) {
    flat = std::make_shared<arrow::DoubleArray>(length, arrow::Buffer::FromVector(std::move(kept)));
  } else {
    flat = std::make_shared<arrow::FloatArray>(length, arrow::Buffer::FromVector(std::vector<float>(kept.begin(), kept.end())));
  }
  auto bitmap = arrow::AllocateEmptyBitmap(static_cast<int64_t>(k));
  if (!bitmap.ok()) return Status::IOError("flat bitmap: " + bitmap.status().ToString());
  int64_t nulls = 0;
  for (size_t j = 0; j < k; ++j) {
    if (ok[j]) arrow::bit_util::SetBit((*bitmap)->mutable_data(), static_cast<int64_t>(j));
    else ++nulls;
  }
  return std::shared_ptr<arrow::Array>(std::make_shared<arrow::ListArray>(
      arrow::list(flat->type()), static_cast<int64_t>(k), arrow::Buffer::FromVector(std::move(offsets)), flat,
      std::shared_ptr<arrow::Buffer>(std::move(*bitmap)), nulls));
}

Result<std::shared_ptr<arrow::Array>> Int64Nullable(const std::vector<int64_t>& v, const std::vector<uint8_t>& ok) {
  arrow::Int64Builder b;
  for (size_t i = 0; i < v.size(); ++i) (void)(ok[i] ? b.Append(v[i]) : b.AppendNull());
  std::shared_ptr<arrow::Array> out;
  if (!b.Finish(&out).ok()) return Status::IOError("flat int64 column");
  return out;
}

// Exported episode i's flat table.
Result<std::shared_ptr<arrow::Table>> FlatEpisode(const ExportSource& src, size_t i, const std::vector<Signal>& signals,
                                                  int64_t tolerance_ns, std::string* clock, int64_t* frames_read) {
  std::vector<std::string> warnings;  // of the feature table, which the flat table does not use
  REEL_ASSIGN_OR_RETURN(auto frames, ReadEpisodeFrames(src, i, &warnings));
  const arrow::Table& pooled = *frames.pooled;
  *frames_read = pooled.num_rows();
  const std::vector<int64_t> frame_ns = Int64ColumnValues(pooled, "hardware_ns");
  const int64_t n_ep = src.episodes[i].episode_index;
  REEL_ASSIGN_OR_RETURN(Targets t, TargetsOf(*src.task, n_ep, frame_ns));
  *clock = t.clock;
  const size_t k = t.ns.size();
  std::vector<uint8_t> all(k, 1), mapped(k);
  for (size_t j = 0; j < k; ++j) mapped[j] = t.ns[j] != 0;
  arrow::FieldVector fields;
  std::vector<std::shared_ptr<arrow::Array>> columns;
  auto add = [&](const std::string& name, std::shared_ptr<arrow::Array> a) {
    fields.push_back(arrow::field(name, a->type()));
    columns.push_back(std::move(a));
  };
  REEL_ASSIGN_OR_RETURN(auto ep, Int64Nullable(std::vector<int64_t>(k, n_ep), all));
  add("episode_index", ep);
  REEL_ASSIGN_OR_RETURN(auto imu_ts, Int64Nullable(t.imu_ts, t.has_imu));
  add("imu_ts_ns", imu_ts);
  REEL_ASSIGN_OR_RETURN(auto ns, Int64Nullable(t.ns, mapped));
  add("ns", ns);
  REEL_ASSIGN_OR_RETURN(auto frame, Int64Nullable(t.frame, t.framed));
  add("frame_index", frame);
  for (int c = 0; c < 6; ++c) {
    arrow::FloatBuilder b;
    for (size_t j = 0; j < k; ++j) (void)(t.has_imu[j] ? b.Append(t.imu[j * 6 + c]) : b.AppendNull());
    std::shared_ptr<arrow::Array> a;
    (void)b.Finish(&a);
    add(kImuNames[c], a);
  }
  for (const Signal& s : signals) {
    REEL_ASSIGN_OR_RETURN(auto a, SignalColumn(pooled, s, t, frame_ns, tolerance_ns));
    add(s.column, a);
  }
  return arrow::Table::Make(arrow::schema(fields), columns, static_cast<int64_t>(k));
}

}  // namespace

Status WriteFlat(const ExportSource& src, const std::string& dir, const ExportOptions& options, ExportReport* report) {
  FileSystem* fs = src.out_fs;
  const std::vector<Signal> signals = FlatSignals(*src.schema);
  const int64_t tolerance_ns = ToleranceNs(src.streams, src.task->info().fps, 1.0);
  const std::string path = JoinPath(dir, "flat.parquet");
  REEL_ASSIGN_OR_RETURN(auto file, fs->NewWritableFile(path));
  auto sink = std::make_shared<FsOutputStream>(std::move(file), path);
  std::unique_ptr<parquet::arrow::FileWriter> writer;
  OJson episodes = OJson::array();
  int64_t rows = 0;
  for (size_t i = 0; i < src.episodes.size(); ++i) {
    ReportExported(options, src, i);
    std::string clock;
    int64_t frames = 0;
    REEL_ASSIGN_OR_RETURN(auto table, FlatEpisode(src, i, signals, tolerance_ns, &clock, &frames));
    if (!writer) {
      report->features = table->schema()->field_names();
      const ParquetWriteOptions o;
      auto w = parquet::arrow::FileWriter::Open(*table->schema(), arrow::default_memory_pool(), sink,
                                                ParquetWriterProperties(o), ParquetArrowProperties(o));
      if (!w.ok()) return Status::IOError(path + ": " + w.status().ToString());
      writer = std::move(w).ValueOrDie();
    }
    arrow::Status st = writer->WriteTable(*table, 64 * 1024);
    if (!st.ok()) return Status::IOError(path + ": " + st.ToString());
    episodes.push_back(
        {{"episode_index", src.episodes[i].episode_index}, {"frames", frames}, {"rows", table->num_rows()}, {"imu_clock", clock}});
    rows += table->num_rows();
    report->frames += frames;
  }
  if (writer) {
    arrow::Status st = writer->Close();
    if (st.ok()) st = sink->Close();
    if (!st.ok()) return Status::IOError(path + ": " + st.ToString());
  }
  REEL_RETURN_IF_ERROR(fs->SyncFile(path));
  OJson signal_json = OJson::array();
  for (const Signal& s : signals) signal_json.push_back({{"column", s.column}, {"clock", StreamClockName(s.clock)}});
  OJson meta{{"format", "reel-flat"},
             {"version", 1},
             {"task_name", src.task->info().task_name},
             {"fps", src.task->info().fps},
             {"tolerance_ns", tolerance_ns},
             {"rows", rows},
             {"signals", signal_json},
             {"episodes", episodes}};
  REEL_RETURN_IF_ERROR(WriteJsonFile(fs, JoinPath(dir, "flat.json"), meta));
  report->episodes = static_cast<int64_t>(src.episodes.size());
  return Status::OK();
}

}  // namespace reel::internal
