#include "write/episode_data.h"

#include <arrow/api.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/writer.h>
#include <parquet/properties.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <set>

#include "io/parquet_io.h"
#include "layout/journal.h"

namespace reel::internal {

namespace {

std::shared_ptr<arrow::DataType> Fixed(int32_t n) { return arrow::fixed_size_list(arrow::float32(), n); }

// Width a fixed-size family must have (0 = any, decided by the first sample).
int32_t RequiredWidth(ColumnFamily f) {
  switch (f) {
    case ColumnFamily::kAction: return 1;
    case ColumnFamily::kStateOrForce: return 3;
    case ColumnFamily::kHandPose: return 63;
    case ColumnFamily::kGloveImuQuat: return 64;
    case ColumnFamily::kGloveImuValid: return 16;
    case ColumnFamily::kGlove: return 256;
    default: return 0;
  }
}

}  // namespace

struct EpisodeData::Column {
  std::string name;
  ColumnFamily family;
  int32_t width = 0;  // fixed-size lists
  bool stamped = false;  // stamp columns: a non-zero stamp was appended
  std::shared_ptr<arrow::DataType> type;
  std::unique_ptr<arrow::ArrayBuilder> builder;
  std::shared_ptr<arrow::Array> FinishChunk() {
    std::shared_ptr<arrow::Array> out;
    (void)builder->Finish(&out);
    return out;
  }
};

struct EpisodeData::Segment {
  std::string path;
  std::shared_ptr<arrow::Schema> schema;
  std::unique_ptr<parquet::arrow::FileWriter> writer;
  // The writer's sink: closing the writer writes the footer but leaves the sink open, and
  // only the sink's Close() fsyncs (a commit needs the bytes durable before its journal).
  std::shared_ptr<FsOutputStream> sink;
};

struct EpisodeData::Accumulator {
  int64_t count = 0;
  std::vector<double> sum, sum_sq, min, max;
  explicit Accumulator(int64_t dim)
      : sum(dim, 0.0), sum_sq(dim, 0.0), min(dim, std::numeric_limits<double>::infinity()),
        max(dim, -std::numeric_limits<double>::infinity()) {}
  void Add(const float* v) {
    ++count;
    for (size_t d = 0; d < sum.size(); ++d) {
      const double x = v[d];
      sum[d] += x;
      sum_sq[d] += x * x;
      min[d] = std::min(min[d], x);
      max[d] = std::max(max[d], x);
    }
  }
  void AddZeros(int64_t rows) {
    if (rows <= 0) return;
    count += rows;
    for (size_t d = 0; d < sum.size(); ++d) {
      min[d] = std::min(min[d], 0.0);
      max[d] = std::max(max[d], 0.0);
    }
  }
  StatsBlock Block() const {
    StatsBlock b;
    b.count = count;
    const size_t dim = sum.size();
    b.shape = {static_cast<int64_t>(dim)};
    for (size_t d = 0; d < dim; ++d) {
      if (count == 0) {
        b.mean.push_back(0.0), b.std.push_back(1.0), b.min.push_back(0.0), b.max.push_back(0.0);
        continue;
      }
      const double n = static_cast<double>(count);
      const double mean = sum[d] / n;
      b.mean.push_back(mean);
      b.std.push_back(std::sqrt(std::max(sum_sq[d] / n - mean * mean, 0.0)));
      b.min.push_back(min[d]);
      b.max.push_back(max[d]);
    }
    return b;
  }
};

namespace {

// Appends one "no sample" value for the column's family.
arrow::Status AppendDefault(EpisodeData::Column& c) {
  switch (c.family) {
    case ColumnFamily::kStatus:
      return static_cast<arrow::StringBuilder&>(*c.builder).Append("connected");
    case ColumnFamily::kScalarNs:
    case ColumnFamily::kForensicInt64:
    case ColumnFamily::kKeyInt64:
      return static_cast<arrow::Int64Builder&>(*c.builder).Append(0);
    case ColumnFamily::kForensicInt8:
      return static_cast<arrow::Int8Builder&>(*c.builder).Append(0);
    case ColumnFamily::kForensicInt32:
      return static_cast<arrow::Int32Builder&>(*c.builder).Append(0);
    default: break;
  }
  if (c.type->id() == arrow::Type::FIXED_SIZE_LIST) {
    auto& b = static_cast<arrow::FixedSizeListBuilder&>(*c.builder);
    ARROW_RETURN_NOT_OK(b.Append());
    return static_cast<arrow::FloatBuilder&>(*b.value_builder()).AppendEmptyValues(c.width);
  }
  return static_cast<arrow::ListBuilder&>(*c.builder).Append();  // [] : an empty list, never null
}

Status ArrowOk(const arrow::Status& st, const std::string& what) {
  if (st.ok()) return Status::OK();
  return Status::IOError(what + ": " + st.ToString());
}

// Episode data: no dictionary pages (ParquetWriteOptions::dictionary).
const ParquetWriteOptions kDataParquet{.dictionary = false};

}  // namespace

EpisodeData::EpisodeData(Options options) : options_(std::move(options)) {}

EpisodeData::~EpisodeData() = default;

std::string EpisodeData::TempPath(const std::string& tag) {
  return TempPathFor(options_.final_path, tag);
}

Status EpisodeData::ValidateName(const std::string& name, ColumnFamily family) const {
  if (name.starts_with("status.")) {
    if (name.size() == 7) return Status::Invalid("column \"status.\" needs an id");
    return Status::OK();
  }
  if (!name.starts_with("observation."))
    return Status::Invalid("column \"" + name + "\": observation columns start with \"observation.\"");
  const std::string body = name.substr(12);
  if (name.starts_with("observation.images."))
    return Status::Invalid("column \"" + name + "\": videos are not parquet columns (multi-device §2.4)");
  if (body.starts_with("gripper_1_"))
    return Status::Invalid("column \"" + name + "\": the first gripper has no prefix; gripper_1_ is "
                           "retired (multi-device §2.3)");
  if (body == "slam_pose" || body.ends_with("_slam_pose"))
    return Status::Invalid("column \"" + name + "\": slam_pose is retired; trajectories go in "
                           "*slam_trajectory (multi-device §2.4)");
  for (unsigned char ch : body)
    if (!(std::islower(ch) || std::isdigit(ch) || ch == '_' || ch == '.'))
      return Status::Invalid("column \"" + name + "\": names use lower-case ASCII [a-z0-9_] "
                             "segments (multi-device §2.4)");
  if (family == ColumnFamily::kGlove && body != "left_glove" && body != "right_glove")
    return Status::Invalid("column \"" + name + "\": only left_glove and right_glove exist; a third "
                           "glove is refused (multi-device §4.5)");
  return Status::OK();
}

Result<EpisodeData::Column*> EpisodeData::Ensure(const std::string& name, ColumnFamily family,
                                                 int32_t width,
                                                 std::shared_ptr<arrow::DataType> type) {
  if (auto it = by_name_.find(name); it != by_name_.end()) {
    Column* c = it->second;
    if (c->family != family || !c->type->Equals(*type))
      return Status::Invalid("column \"" + name + "\" was " + c->type->ToString() +
                             " earlier in this episode, now " + type->ToString() +
                             " (one writer, one type per column)");
    return c;
  }
  auto column = std::make_unique<Column>();
  column->name = name;
  column->family = family;
  column->width = width;
  column->type = type;
  auto st = arrow::MakeBuilder(arrow::default_memory_pool(), type, &column->builder);
  if (!st.ok()) return Status::Invalid("column \"" + name + "\": " + st.ToString());
  // Rows of the current (unflushed) group that came before the first sample.
  for (int64_t r = flushed_rows_; r < rows_; ++r)
    REEL_RETURN_IF_ERROR(ArrowOk(AppendDefault(*column), name));
  if (flushed_rows_ > 0) schema_grew_ = true;
  Column* raw = column.get();
  by_name_[name] = raw;
  columns_.push_back(std::move(column));
  if (family == ColumnFamily::kGlove) {
    auto acc = std::make_unique<Accumulator>(width);
    acc->AddZeros(rows_);  // zero-filled rows count (contract §4)
    stats_[name] = std::move(acc);
  }
  return raw;
}

int64_t EpisodeData::ApproxRowBytes(const FrameRow& row) const {
  int64_t bytes = 8 * 8;  // key columns
  for (const auto& [name, values] : row.fixed()) bytes += 4 * static_cast<int64_t>(values.size());
  bytes += 8 * static_cast<int64_t>(row.scalars().size());
  for (const auto& [name, value] : row.statuses()) bytes += static_cast<int64_t>(value.size()) + 4;
  bytes += 32 * static_cast<int64_t>(row.imu().ts_ns.size());
  for (const auto& [name, slam] : row.slam())
    bytes += 8 * static_cast<int64_t>(slam.points.size() + slam.ns.size());
  for (const auto& [name, frame] : row.force_matrices()) {
    auto it = options_.force_matrix_specs.find(name);
    const bool raw = it != options_.force_matrix_specs.end() &&
                     it->second.encoding != ForceMatrixEncoding::kRowDiffQuantized;
    bytes += (raw ? 4 : 2) * static_cast<int64_t>(frame.size());
  }
  return bytes;
}

// Every value of `row` is checked before any builder is touched, so a rejected row leaves no trace.
Status EpisodeData::ValidateRow(const FrameRow& row) {
  for (const auto& [name, values] : row.fixed()) {
    const ColumnFamily f = name == "action" ? ColumnFamily::kAction : ClassifyColumn(name, {});
    if (name != "action") REEL_RETURN_IF_ERROR(ValidateName(name, f));
    const int32_t want = RequiredWidth(f);
    if (want == 0)
      return Status::Invalid("column \"" + name + "\" is not a fixed-size float family (glove, "
                             "*_state, *_force, *_hand_pose, *_imu_quat, *_imu_valid, action)");
    if (static_cast<int32_t>(values.size()) != want)
      return Status::Invalid("column \"" + name + "\" takes " + std::to_string(want) +
                             " values per row, got " + std::to_string(values.size()));
  }
  for (const auto& [name, value] : row.scalars()) {
    const ColumnFamily f = ClassifyColumn(name, {});
    if (f != ColumnFamily::kScalarNs && f != ColumnFamily::kForensicInt64 &&
        f != ColumnFamily::kForensicInt8 && f != ColumnFamily::kForensicInt32)
      return Status::Invalid("column \"" + name + "\" is not a scalar column (*_ns, depth_ns, "
                             "host_ns, rgb_dup, depth_dup, ts_src, rgb_gap, depth_gap)");
    if (f == ColumnFamily::kScalarNs) REEL_RETURN_IF_ERROR(ValidateName(name, f));
  }
  for (const auto& [name, value] : row.statuses()) REEL_RETURN_IF_ERROR(ValidateName(name, ColumnFamily::kStatus));
  for (const auto& [name, slam] : row.slam()) {
    if (ClassifyColumn(name, {}) != ColumnFamily::kSlamPoints)
      return Status::Invalid("column \"" + name + "\" is not a *slam_trajectory column");
    REEL_RETURN_IF_ERROR(ValidateName(name, ColumnFamily::kSlamPoints));
  }
  for (const auto& [name, frame] : row.force_matrices()) {
    if (ClassifyColumn(name, {}) != ColumnFamily::kForceMatrix)
      return Status::Invalid("column \"" + name + "\" is not a *_force_matrix column");
    REEL_RETURN_IF_ERROR(ValidateName(name, ColumnFamily::kForceMatrix));
    if (static_cast<int64_t>(frame.size()) != kForceMatrixValues)
      return Status::Invalid("column \"" + name + "\": a force matrix has 250x250x3 = 187500 values, got " +
                             std::to_string(frame.size()));
  }

  return Status::OK();
}

// The key columns (always present), raw_hw_ns when given, and action ([0.0] unless given).
Status EpisodeData::AppendKeys(const FrameRow& row, std::map<std::string, bool>& touched) {
  const int64_t r = rows_;
  Column* c = nullptr;
  auto key = [&](const char* name, ColumnFamily family, std::shared_ptr<arrow::DataType> type) {
    return Ensure(name, family, 0, type);
  };
  REEL_ASSIGN_OR_RETURN(c, key("episode_index", ColumnFamily::kKeyInt64, arrow::int64()));
  REEL_RETURN_IF_ERROR(ArrowOk(static_cast<arrow::Int64Builder&>(*c->builder).Append(options_.episode_index), c->name));
  REEL_ASSIGN_OR_RETURN(c, key("frame_index", ColumnFamily::kKeyInt64, arrow::int64()));
  REEL_RETURN_IF_ERROR(ArrowOk(static_cast<arrow::Int64Builder&>(*c->builder).Append(r), c->name));
  REEL_ASSIGN_OR_RETURN(c, key("timestamp", ColumnFamily::kTimestamp, arrow::float32()));
  REEL_RETURN_IF_ERROR(ArrowOk(static_cast<arrow::FloatBuilder&>(*c->builder).Append(static_cast<float>(row.timestamp)), c->name));
  REEL_ASSIGN_OR_RETURN(c, key("task_index", ColumnFamily::kKeyInt64, arrow::int64()));
  REEL_RETURN_IF_ERROR(ArrowOk(static_cast<arrow::Int64Builder&>(*c->builder).Append(0), c->name));
  REEL_ASSIGN_OR_RETURN(c, key("wall_time", ColumnFamily::kWallTime, arrow::float64()));
  REEL_RETURN_IF_ERROR(ArrowOk(static_cast<arrow::DoubleBuilder&>(*c->builder).Append(row.wall_time), c->name));
  REEL_ASSIGN_OR_RETURN(c, key("hardware_ns", ColumnFamily::kKeyInt64, arrow::int64()));
  REEL_RETURN_IF_ERROR(ArrowOk(static_cast<arrow::Int64Builder&>(*c->builder).Append(row.hardware_ns), c->name));
  if (row.raw_hw_ns) {
    REEL_ASSIGN_OR_RETURN(c, key("raw_hw_ns", ColumnFamily::kKeyInt64, arrow::int64()));
    REEL_RETURN_IF_ERROR(ArrowOk(static_cast<arrow::Int64Builder&>(*c->builder).Append(*row.raw_hw_ns), c->name));
    touched["raw_hw_ns"] = true;
  }
  // action is always written ([0.0] unless given).
  {
    auto it = row.fixed().find("action");
    REEL_ASSIGN_OR_RETURN(c, Ensure("action", ColumnFamily::kAction, 1, Fixed(1)));
    auto& b = static_cast<arrow::FixedSizeListBuilder&>(*c->builder);
    REEL_RETURN_IF_ERROR(ArrowOk(b.Append(), "action"));
    REEL_RETURN_IF_ERROR(ArrowOk(static_cast<arrow::FloatBuilder&>(*b.value_builder())
                                     .Append(it == row.fixed().end() ? 0.0f : it->second[0]),
                                 "action"));
    touched["action"] = true;
  }
  return Status::OK();
}

// Fixed-size float columns (glove, state, force, hand pose, IMU quaternions and validity).
Status EpisodeData::AppendFixed(const FrameRow& row, std::map<std::string, bool>& touched) {
  Column* c = nullptr;
  for (const auto& [name, values] : row.fixed()) {
    if (name == "action") continue;
    const ColumnFamily f = ClassifyColumn(name, {});
    const int32_t w = RequiredWidth(f);
    REEL_ASSIGN_OR_RETURN(c, Ensure(name, f, w, Fixed(w)));
    auto& b = static_cast<arrow::FixedSizeListBuilder&>(*c->builder);
    REEL_RETURN_IF_ERROR(ArrowOk(b.Append(), name));
    REEL_RETURN_IF_ERROR(ArrowOk(static_cast<arrow::FloatBuilder&>(*b.value_builder()).AppendValues(values.data(), w), name));
    if (auto it = stats_.find(name); it != stats_.end()) it->second->Add(values.data());
    touched[name] = true;
    if (f == ColumnFamily::kGlove) REEL_RETURN_IF_ERROR(EnsureHandPosePlaceholders());
  }
  return Status::OK();
}

// int64 timestamps and the forensic int8/int32/int64 columns.
Status EpisodeData::AppendScalars(const FrameRow& row, std::map<std::string, bool>& touched) {
  Column* c = nullptr;
  for (const auto& [name, value] : row.scalars()) {
    const ColumnFamily f = ClassifyColumn(name, {});
    auto type = f == ColumnFamily::kForensicInt8 ? arrow::int8()
                : f == ColumnFamily::kForensicInt32 ? arrow::int32() : arrow::int64();
    REEL_ASSIGN_OR_RETURN(c, Ensure(name, f, 0, type));
    arrow::Status st;
    if (f == ColumnFamily::kForensicInt8)
      st = static_cast<arrow::Int8Builder&>(*c->builder).Append(static_cast<int8_t>(value));
    else if (f == ColumnFamily::kForensicInt32)
      st = static_cast<arrow::Int32Builder&>(*c->builder).Append(static_cast<int32_t>(value));
    else
      st = static_cast<arrow::Int64Builder&>(*c->builder).Append(value);
    REEL_RETURN_IF_ERROR(ArrowOk(st, name));
    if (value != 0) c->stamped = true;
    touched[name] = true;
  }
  return Status::OK();
}

// The row's IMU samples with their own timestamps (imu_ts_ns, observation.imu).
Status EpisodeData::AppendImu(const FrameRow& row, std::map<std::string, bool>& touched) {
  Column* c = nullptr;
  if (!row.imu().samples.empty()) {
    REEL_ASSIGN_OR_RETURN(c, Ensure("imu_ts_ns", ColumnFamily::kImuTimestamps, 0, arrow::list(arrow::int64())));
    auto& ts = static_cast<arrow::ListBuilder&>(*c->builder);
    REEL_RETURN_IF_ERROR(ArrowOk(ts.Append(), "imu_ts_ns"));
    REEL_RETURN_IF_ERROR(ArrowOk(static_cast<arrow::Int64Builder&>(*ts.value_builder())
                                     .AppendValues(row.imu().ts_ns), "imu_ts_ns"));
    touched["imu_ts_ns"] = true;
    REEL_ASSIGN_OR_RETURN(c, Ensure("observation.imu", ColumnFamily::kImuSamples, 0, arrow::list(Fixed(6))));
    auto& outer = static_cast<arrow::ListBuilder&>(*c->builder);
    auto& inner = static_cast<arrow::FixedSizeListBuilder&>(*outer.value_builder());
    auto& values = static_cast<arrow::FloatBuilder&>(*inner.value_builder());
    REEL_RETURN_IF_ERROR(ArrowOk(outer.Append(), "observation.imu"));
    auto& acc = stats_["observation.imu"];
    if (!acc) acc = std::make_unique<Accumulator>(6);
    for (const auto& s : row.imu().samples) {
      REEL_RETURN_IF_ERROR(ArrowOk(inner.Append(), "observation.imu"));
      REEL_RETURN_IF_ERROR(ArrowOk(values.AppendValues(s.data(), 6), "observation.imu"));
      acc->Add(s.data());  // counted per sample (contract §4)
    }
    touched["observation.imu"] = true;
  }
  return Status::OK();
}

// SLAM trajectory points and their _ns stamps.
Status EpisodeData::AppendSlam(const FrameRow& row, std::map<std::string, bool>& touched) {
  Column* c = nullptr;
  for (const auto& [name, slam] : row.slam()) {
    REEL_ASSIGN_OR_RETURN(c, Ensure(name, ColumnFamily::kSlamPoints, 0, arrow::list(arrow::float64())));
    auto& pts = static_cast<arrow::ListBuilder&>(*c->builder);
    REEL_RETURN_IF_ERROR(ArrowOk(pts.Append(), name));
    REEL_RETURN_IF_ERROR(ArrowOk(static_cast<arrow::DoubleBuilder&>(*pts.value_builder()).AppendValues(slam.points), name));
    touched[name] = true;
    const std::string ns_name = name + "_ns";
    REEL_ASSIGN_OR_RETURN(c, Ensure(ns_name, ColumnFamily::kSlamStamps, 0, arrow::list(arrow::int64())));
    auto& ns = static_cast<arrow::ListBuilder&>(*c->builder);
    REEL_RETURN_IF_ERROR(ArrowOk(ns.Append(), ns_name));
    REEL_RETURN_IF_ERROR(ArrowOk(static_cast<arrow::Int64Builder&>(*ns.value_builder()).AppendValues(slam.ns), ns_name));
    touched[ns_name] = true;
    if (std::any_of(slam.ns.begin(), slam.ns.end(), [](int64_t t) { return t != 0; })) c->stamped = true;
  }
  return Status::OK();
}

// Force matrices, encoded by the column's spec (contract §7.2.1).
Status EpisodeData::AppendForceMatrices(const FrameRow& row, std::map<std::string, bool>& touched) {
  Column* c = nullptr;
  for (const auto& [name, frame] : row.force_matrices()) {
    auto spec_it = options_.force_matrix_specs.find(name);
    ForceMatrixSpec spec = spec_it != options_.force_matrix_specs.end()
                               ? spec_it->second
                               : *ForceMatrixSpecForTier("int16x100");
    const bool quantized = spec.encoding == ForceMatrixEncoding::kRowDiffQuantized;
    REEL_ASSIGN_OR_RETURN(c, Ensure(name, ColumnFamily::kForceMatrix, 0,
                                    arrow::list(quantized ? arrow::int16() : arrow::float32())));
    auto& list = static_cast<arrow::ListBuilder&>(*c->builder);
    REEL_RETURN_IF_ERROR(ArrowOk(list.Append(), name));
    if (quantized) {
      std::vector<int16_t> encoded(kForceMatrixValues);
      EncodeRowDiffQuantized(frame.data(), spec.scale, encoded.data());
      REEL_RETURN_IF_ERROR(ArrowOk(static_cast<arrow::Int16Builder&>(*list.value_builder()).AppendValues(encoded), name));
    } else {
      REEL_RETURN_IF_ERROR(ArrowOk(static_cast<arrow::FloatBuilder&>(*list.value_builder()).AppendValues(frame), name));
    }
    touched[name] = true;
  }
  return Status::OK();
}

// status.* strings.
Status EpisodeData::AppendStatuses(const FrameRow& row, std::map<std::string, bool>& touched) {
  Column* c = nullptr;
  for (const auto& [name, value] : row.statuses()) {
    REEL_ASSIGN_OR_RETURN(c, Ensure(name, ColumnFamily::kStatus, 0, arrow::utf8()));
    REEL_RETURN_IF_ERROR(ArrowOk(static_cast<arrow::StringBuilder&>(*c->builder).Append(value), name));
    touched[name] = true;
  }
  return Status::OK();
}

Status EpisodeData::Append(const FrameRow& row) {
  REEL_RETURN_IF_ERROR(ValidateRow(row));
  std::map<std::string, bool> touched;  // columns given a value on this row
  REEL_RETURN_IF_ERROR(AppendKeys(row, touched));
  REEL_RETURN_IF_ERROR(AppendFixed(row, touched));
  // Hand pose is written on every episode, gloves or not (contract §7.2 "恒写占位零";
  // multi-device §4.5 "恒写列，无解算时全零占位"): zero placeholders that backfill-hand-pose
  // fills later, never counted in stats (§4). A glove brings them beside itself (AppendFixed).
  if (rows_ == 0) REEL_RETURN_IF_ERROR(EnsureHandPosePlaceholders());
  REEL_RETURN_IF_ERROR(AppendScalars(row, touched));
  REEL_RETURN_IF_ERROR(AppendImu(row, touched));
  REEL_RETURN_IF_ERROR(AppendSlam(row, touched));
  REEL_RETURN_IF_ERROR(AppendForceMatrices(row, touched));
  REEL_RETURN_IF_ERROR(AppendStatuses(row, touched));
  // Every other known column gets its "no sample" value on this row.
  static const std::set<std::string> kKeys = {"episode_index", "frame_index", "timestamp",
                                              "task_index", "wall_time", "hardware_ns"};
  for (auto& col : columns_) {
    if (kKeys.count(col->name) || touched.count(col->name)) continue;
    REEL_RETURN_IF_ERROR(ArrowOk(AppendDefault(*col), col->name));
    if (auto it = stats_.find(col->name); it != stats_.end() && col->family == ColumnFamily::kGlove)
      it->second->AddZeros(1);
  }
  ++rows_;
  buffered_bytes_ += ApproxRowBytes(row);
  if (rows_ - flushed_rows_ >= options_.row_group_rows || buffered_bytes_ >= options_.row_group_bytes)
    REEL_RETURN_IF_ERROR(FlushRowGroup());
  return Status::OK();
}

Status EpisodeData::OpenSegment() {
  auto segment = std::make_unique<Segment>();
  segment->path = TempPath("seg" + std::to_string(segments_.size()));
  arrow::FieldVector fields;
  for (const auto& c : columns_) fields.push_back(arrow::field(c->name, c->type, /*nullable=*/false));
  segment->schema = arrow::schema(fields);
  REEL_RETURN_IF_ERROR(options_.fs->CreateDirs(DirName(options_.final_path)));
  Segment& seg = *segment;
  segments_.push_back(std::move(segment));  // registered first, so Discard() removes it on failure
  REEL_ASSIGN_OR_RETURN(auto file, options_.fs->NewWritableFile(seg.path));
  seg.sink = std::make_shared<FsOutputStream>(std::move(file), seg.path);
  auto writer = parquet::arrow::FileWriter::Open(*seg.schema, arrow::default_memory_pool(), seg.sink,
                                                 ParquetWriterProperties(kDataParquet), ParquetArrowProperties(kDataParquet));
  if (!writer.ok()) return Status::IOError(seg.path + ": " + writer.status().ToString());
  seg.writer = std::move(*writer);
  schema_grew_ = false;
  return Status::OK();
}

Status EpisodeData::CloseSegment() {
  if (segments_.empty() || !segments_.back()->writer) return Status::OK();
  auto& seg = *segments_.back();
  arrow::Status st = seg.writer->Close();
  seg.writer.reset();
  if (st.ok()) st = seg.sink->Close();  // fsyncs
  seg.sink.reset();
  if (!st.ok()) return Status::IOError(seg.path + ": " + st.ToString());
  return Status::OK();
}

Status EpisodeData::FlushRowGroup() {
  const int64_t n = rows_ - flushed_rows_;
  if (n == 0) return Status::OK();
  if (segments_.empty() || schema_grew_) {
    REEL_RETURN_IF_ERROR(CloseSegment());
    REEL_RETURN_IF_ERROR(OpenSegment());
  }
  std::vector<std::shared_ptr<arrow::Array>> arrays;
  for (auto& c : columns_) arrays.push_back(c->FinishChunk());
  auto& seg = *segments_.back();
  auto batch = arrow::RecordBatch::Make(seg.schema, n, arrays);
  auto table = arrow::Table::FromRecordBatches({batch});
  if (!table.ok()) return Status::IOError(seg.path + ": " + table.status().ToString());
  arrow::Status st = seg.writer->WriteTable(**table, n);
  if (!st.ok()) return Status::IOError(seg.path + ": " + st.ToString());
  flushed_rows_ = rows_;
  buffered_bytes_ = 0;
  return Status::OK();
}

Status EpisodeData::EnsureHandPosePlaceholders() {
  for (const char* name : {"observation.left_hand_pose", "observation.right_hand_pose"})
    REEL_RETURN_IF_ERROR(Ensure(name, ColumnFamily::kHandPose, 63, Fixed(63)).status());
  return Status::OK();
}

bool EpisodeData::DropUnstampedColumns() {
  auto unstamped = [](const std::unique_ptr<Column>& c) {
    return (c->family == ColumnFamily::kScalarNs || c->family == ColumnFamily::kSlamStamps) &&
           !c->stamped;
  };
  bool dropped = false;
  for (const auto& c : columns_)
    if (unstamped(c)) {
      by_name_.erase(c->name);
      dropped = true;
    }
  std::erase_if(columns_, unstamped);
  return dropped;
}

Result<std::string> EpisodeData::Finish() {
  if (rows_ == 0) return std::string();
  REEL_RETURN_IF_ERROR(FlushRowGroup());
  REEL_RETURN_IF_ERROR(CloseSegment());
  // Rewriting without the unstamped columns costs one more pass over the file; callers
  // that send stamps never pay it.
  const bool dropped = DropUnstampedColumns();
  if (segments_.size() == 1 && !dropped) return segments_.front()->path;
  return MergeSegments();
}

Result<std::string> EpisodeData::MergeSegments() {
  // Rewrites the segments into one file with the final schema, row group by row group.
  arrow::FieldVector fields;
  for (const auto& c : columns_) fields.push_back(arrow::field(c->name, c->type, false));
  auto schema = arrow::schema(fields);
  const std::string path = TempPath("merged");
  REEL_ASSIGN_OR_RETURN(auto file, options_.fs->NewWritableFile(path));
  auto sink = std::make_shared<FsOutputStream>(std::move(file), path);
  auto writer = parquet::arrow::FileWriter::Open(*schema, arrow::default_memory_pool(), sink,
                                                 ParquetWriterProperties(kDataParquet), ParquetArrowProperties(kDataParquet));
  if (!writer.ok()) return Status::IOError(path + ": " + writer.status().ToString());
  segments_.push_back(std::make_unique<Segment>());
  segments_.back()->path = path;  // so Discard() removes it on failure
  for (size_t s = 0; s + 1 < segments_.size(); ++s) {
    REEL_ASSIGN_OR_RETURN(auto reader, OpenParquet(options_.fs, segments_[s]->path, false));
    for (int g = 0; g < reader->num_row_groups(); ++g) {
      auto part = reader->ReadRowGroup(g);
      if (!part.ok()) return Status::Corruption(segments_[s]->path + ": " + part.status().ToString());
      const int64_t n = (*part)->num_rows();
      std::vector<std::shared_ptr<arrow::ChunkedArray>> columns;
      for (auto& c : columns_) {
        if (auto existing = (*part)->GetColumnByName(c->name)) {
          columns.push_back(existing);
          continue;
        }
        for (int64_t i = 0; i < n; ++i) REEL_RETURN_IF_ERROR(ArrowOk(AppendDefault(*c), c->name));
        columns.push_back(std::make_shared<arrow::ChunkedArray>(c->FinishChunk()));
      }
      auto table = arrow::Table::Make(schema, columns, n);
      arrow::Status st = (*writer)->WriteTable(*table, n);
      if (!st.ok()) return Status::IOError(path + ": " + st.ToString());
    }
  }
  arrow::Status st = (*writer)->Close();
  if (st.ok()) st = sink->Close();  // fsyncs
  if (!st.ok()) return Status::IOError(path + ": " + st.ToString());
  for (size_t s = 0; s + 1 < segments_.size(); ++s) (void)options_.fs->RemoveFile(segments_[s]->path);
  segments_.erase(segments_.begin(), segments_.end() - 1);
  return path;
}

void EpisodeData::Discard() {
  for (auto& seg : segments_) {
    if (seg->writer) (void)seg->writer->Close();
    seg->writer.reset();
    auto info = options_.fs->Stat(seg->path);
    if (info.ok() && info->type != FileType::kNotFound) (void)options_.fs->RemoveFile(seg->path);
  }
  segments_.clear();
}

std::vector<std::pair<std::string, ColumnFamily>> EpisodeData::Columns() const {
  std::vector<std::pair<std::string, ColumnFamily>> out;
  for (const auto& c : columns_) out.emplace_back(c->name, c->family);
  return out;
}

int32_t EpisodeData::WidthOf(const std::string& column) const {
  auto it = by_name_.find(column);
  return it == by_name_.end() ? 0 : it->second->width;
}

OrderedMap<StatsBlock> EpisodeData::Stats() const {
  OrderedMap<StatsBlock> out;
  for (const auto& c : columns_)
    if (auto it = stats_.find(c->name); it != stats_.end()) out.emplace_back(c->name, it->second->Block());
  return out;
}

}  // namespace reel::internal
