// reel repair-scale (include/reel/maintenance.h): the scale of int16 force-matrix columns
// without a spec in their episode row, decided by the contract's criterion (§7.2.1) and
// written into force_matrix_specs of that row only, through the episode transaction.
#include <arrow/api.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "io/parquet_io.h"
#include "reel/columns.h"
#include "reel/decode.h"
#include "reel/maintenance.h"
#include "reel/task.h"
#include "util/json_util.h"
#include "write/transaction.h"

namespace reel {

namespace {

using internal::Json;

// A frame is in contact when the force sensor's |fz| reaches both this floor (mN, far above
// a sensor's idle noise) and a quarter of the episode's peak: the ratio of small sums is
// dominated by rounding and by the patch's sub-quantum tail.
constexpr double kContactFloorMn = 50.0;
constexpr double kContactShareOfPeak = 0.25;
constexpr int64_t kMinContactFrames = 3;
// A tier is decided when the median ratio and its 10th/90th percentiles lie in
// [0.8, 1.25] x scale. x1 (truncated toward zero): the band is (kMinTruncatedRatio, 1.25].
constexpr double kBandLow = 0.8, kBandHigh = 1.25;
constexpr double kMinTruncatedRatio = 0.02;
constexpr std::array<double, 3> kScaledTiers = {10, 100, 1000};

// The force sensor column whose fz a matrix column is checked against:
// observation.<x>_force_matrix -> observation.<x>_force.
std::string ForceColumnOf(const std::string& matrix_column) {
  constexpr std::string_view kSuffix = "_matrix";
  return matrix_column.substr(0, matrix_column.size() - kSuffix.size());
}

// The force sensor's fz (component 2 of fixed_size_list<float32>[3]) of every row.
Result<std::vector<float>> SensorFz(const arrow::ChunkedArray& force, const std::string& where) {
  std::vector<float> out;
  out.reserve(static_cast<size_t>(force.length()));
  for (const auto& chunk : force.chunks()) {
    const auto* fsl = dynamic_cast<const arrow::FixedSizeListArray*>(chunk.get());
    if (!fsl || fsl->list_type()->list_size() != 3 || fsl->values()->type_id() != arrow::Type::FLOAT)
      return Status::Invalid(where + ": the force column is not fixed_size_list<float32>[3]");
    const float* v = static_cast<const arrow::FloatArray&>(*fsl->values()).raw_values() + fsl->offset() * 3;
    for (int64_t r = 0; r < fsl->length(); ++r) out.push_back(v[3 * r + 2]);
  }
  return out;
}

// Per contact frame, Σ(raw quantized fz plane) / sensor fz. The matrix column is streamed
// batch by batch (a long episode's matrices weigh gigabytes); only contact frames are decoded.
Result<std::vector<double>> ContactRatios(const Task& task, const EpisodeEntry& e, const std::string& matrix,
                                          const std::vector<float>& fz_all) {
  double peak = 0;
  for (float f : fz_all) peak = std::max(peak, std::abs(static_cast<double>(f)));
  const double threshold = std::max(kContactFloorMn, kContactShareOfPeak * peak);
  const ForceMatrixSpec raw{ForceMatrixEncoding::kRowDiffQuantized, "int16", 1.0};
  std::vector<float> frame(kForceMatrixValues);
  std::vector<double> ratios;
  REEL_ASSIGN_OR_RETURN(auto reader, task.OpenData(e, {matrix}));
  int64_t base = 0;
  while (true) {
    std::shared_ptr<arrow::RecordBatch> batch;
    if (auto st = reader->ReadNext(&batch); !st.ok())
      return Status::Corruption(task.Path(e.data_path) + ": " + st.ToString());
    if (!batch) break;
    const arrow::ChunkedArray cells(batch->column(0));
    for (int64_t r = 0; r < batch->num_rows(); ++r) {
      const int64_t row = base + r;
      if (row >= static_cast<int64_t>(fz_all.size())) break;
      const double fz = fz_all[row];
      if (std::abs(fz) < threshold) continue;
      auto present = DecodeForceMatrixCell(cells, r, raw, frame.data());
      if (!present.ok()) return present.status().WithContext(task.Path(e.data_path) + " column " + matrix);
      if (!*present) continue;
      double sum = 0;
      for (int64_t i = 2; i < kForceMatrixValues; i += 3) sum += frame[i];
      ratios.push_back(sum / fz);
    }
    base += batch->num_rows();
  }
  return ratios;
}

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(std::lround(q * static_cast<double>(v.size() - 1)));
  return v[i];
}

// The contract's criterion applied to the evidence in `d` (ratios filled in).
void Decide(ScaleDecision& d, const std::vector<double>& ratios) {
  d.contact_frames = static_cast<int64_t>(ratios.size());
  if (d.contact_frames < kMinContactFrames) {
    d.reason = "refused: no contact (" + std::to_string(d.contact_frames) + " frames with sensor |fz| >= " +
               std::to_string(static_cast<int>(kContactFloorMn)) + " mN, " +
               std::to_string(kMinContactFrames) + " needed); the scale cannot be inferred";
    return;
  }
  d.ratio = Percentile(ratios, 0.5);
  d.ratio_low = Percentile(ratios, 0.1);
  d.ratio_high = Percentile(ratios, 0.9);
  auto in = [&](double lo, double hi) {
    return d.ratio_low > lo && d.ratio_high <= hi && d.ratio > lo && d.ratio <= hi;
  };
  for (double s : kScaledTiers) {
    if (in(kBandLow * s, kBandHigh * s)) {
      d.scale = s;
      d.reason = "ratio ~ " + std::to_string(static_cast<int>(s)) + ": the x" + std::to_string(static_cast<int>(s)) +
                 " tier";
      return;
    }
  }
  if (in(kMinTruncatedRatio, kBandHigh)) {
    d.scale = 1;
    d.reason = "ratio <= 1.25: the uncalibrated x1 tier (truncation toward zero gives ratios below 1; "
               "not a scale)";
    return;
  }
  d.reason = "refused: the per-frame ratios (10th-90th percentile) do not lie within one tier's band "
             "(x1: 0.02-1.25, x10/x100/x1000: 0.8-1.25 x scale)";
}

// The decisions for one episode's int16 force-matrix columns that need one.
Result<std::vector<ScaleDecision>> ExamineEpisode(const Task& task, const EpisodeEntry& e,
                                                  const RepairScaleOptions& options) {
  std::vector<ScaleDecision> out;
  if (e.data_path.empty()) return out;
  REEL_ASSIGN_OR_RETURN(auto schema, task.ReadDataSchema(e));
  EpisodeRow row;
  row.episode_index = e.episode_index;
  if (auto r = task.ReadEpisodeRow(e); r.ok()) row = std::move(r).value();
  for (const auto& field : schema->fields()) {
    const std::string& name = field->name();
    if (ClassifyColumn(name, task.info().sensors) != ColumnFamily::kForceMatrix) continue;
    const auto* list = dynamic_cast<const arrow::ListType*>(field->type().get());
    if (!list || list->value_type()->id() != arrow::Type::INT16) continue;  // float32: scale 1 by type
    auto resolved = ResolveForceMatrixSpec(name, row, task.info(), "int16");
    ScaleDecision d;
    d.episode_index = e.episode_index;
    d.column = name;
    d.current_source = resolved.ok() ? ScaleSourceName(resolved->source) : "unreadable";
    d.current_scale = resolved.ok() ? resolved->spec.scale : 1;
    if (resolved.ok() && resolved->source == ScaleSource::kEpisodeRow && !options.all) continue;
    const std::string force = ForceColumnOf(name);
    if (schema->GetFieldIndex(force) < 0) {
      d.reason = "refused: no force sensor column \"" + force + "\" to check the matrix against";
      out.push_back(std::move(d));
      continue;
    }
    d.force_column = force;
    REEL_ASSIGN_OR_RETURN(auto force_table, task.ReadData(e, {force}));
    REEL_ASSIGN_OR_RETURN(auto fz, SensorFz(*force_table->column(0), task.Path(e.data_path) + " column " + force));
    REEL_ASSIGN_OR_RETURN(auto ratios, ContactRatios(task, e, name, fz));
    Decide(d, ratios);
    out.push_back(std::move(d));
  }
  return out;
}

// Rewrites episode e's row file with the decided columns added to force_matrix_specs; every
// other column as it was. One transaction of that existing N.
Status WriteSpecs(internal::TaskLock& lock, const Task& task, const EpisodeEntry& e,
                  std::vector<ScaleDecision*>& decided) {
  const std::string path = task.Path(e.row_path);
  REEL_ASSIGN_OR_RETURN(auto table, ReadParquetFile(task.fs(), path));
  if (table->num_rows() != 1) return Status::Invalid(path + ": an episodes file holds one row");
  Json specs = Json::object();
  const int col = table->schema()->GetFieldIndex("force_matrix_specs");
  if (col >= 0) {
    std::string text;
    for (const auto& chunk : table->column(col)->chunks()) {
      if (chunk->type_id() != arrow::Type::STRING)
        return Status::Invalid(path + ": force_matrix_specs is not a string column");
      if (chunk->length() > 0 && !chunk->IsNull(0)) text = static_cast<const arrow::StringArray&>(*chunk).GetString(0);
      break;
    }
    if (!text.empty()) {
      REEL_ASSIGN_OR_RETURN(specs, internal::ParseJson(text, path + " force_matrix_specs"));
    }
    if (!specs.is_object()) return Status::Invalid(path + ": force_matrix_specs is not a JSON object");
  }
  for (const ScaleDecision* d : decided)
    specs[d->column] = {{"dtype", "int16"}, {"shape", {250, 250, 3}}, {"encoding", "row_diff_quantized"},
                        {"scale", internal::ScaleJson(*d->scale)}};
  auto array = arrow::MakeArrayFromScalar(arrow::StringScalar(internal::Dump(specs, -1)), 1).ValueOrDie();
  auto field = arrow::field("force_matrix_specs", arrow::utf8());
  auto chunked = std::make_shared<arrow::ChunkedArray>(array);
  auto updated = col >= 0 ? table->SetColumn(col, field, chunked) : table->AddColumn(table->num_columns(), field, chunked);
  if (!updated.ok()) return Status::Invalid(path + ": " + updated.status().ToString());

  REEL_ASSIGN_OR_RETURN(auto txn, internal::EpisodeTransaction::Begin(&lock, e.episode_index));
  REEL_ASSIGN_OR_RETURN(std::string temp, txn->NewTemp(e.row_path, "row"));
  REEL_RETURN_IF_ERROR(internal::WriteParquet(task.fs(), temp, **updated, {.store_schema = false, .row_group_rows = 1}));
  REEL_RETURN_IF_ERROR(txn->CommitFiles());
  for (ScaleDecision* d : decided) d->written = true;
  return Status::OK();
}

}  // namespace

Result<RepairScaleReport> RepairScale(const std::string& root, const RepairScaleOptions& options, FileSystem* fs) {
  if (fs == nullptr) fs = DefaultFileSystem();
  REEL_ASSIGN_OR_RETURN(internal::TaskLock lock, internal::TaskLock::Acquire(fs, root));
  REEL_ASSIGN_OR_RETURN(auto task, Task::Open(root, {fs, 0, EpisodeIndexMode::kRead}));
  REEL_ASSIGN_OR_RETURN(auto episodes, task->ListEpisodes());
  if (!options.episodes.empty())
    std::erase_if(episodes, [&](const EpisodeEntry& e) {
      return std::find(options.episodes.begin(), options.episodes.end(), e.episode_index) == options.episodes.end();
    });
  RepairScaleReport report;
  report.applied = options.apply;
  for (const EpisodeEntry& e : episodes) {
    REEL_ASSIGN_OR_RETURN(auto decisions, ExamineEpisode(*task, e, options));
    ++report.episodes_examined;
    std::vector<ScaleDecision*> decided;
    const size_t first = report.decisions.size();
    for (ScaleDecision& d : decisions) report.decisions.push_back(std::move(d));
    for (size_t i = first; i < report.decisions.size(); ++i)
      if (report.decisions[i].scale) decided.push_back(&report.decisions[i]);
    if (options.apply && !decided.empty()) {
      if (e.row_source != RowSource::kEpisodeFile) {
        for (ScaleDecision* d : decided)
          d->reason += e.row_source == RowSource::kLegacyShard
                           ? "; not written: the row is in a legacy shard (run reel split-episodes first)"
                           : "; not written: the episode has no episodes row";
      } else {
        REEL_RETURN_IF_ERROR(WriteSpecs(lock, *task, e, decided));
        ++report.rows_written;
      }
    }
    if (options.progress)
      options.progress({"episodes examined", report.episodes_examined, static_cast<int64_t>(episodes.size()),
                        "episode " + std::to_string(e.episode_index)});
  }
  return report;
}

}  // namespace reel
