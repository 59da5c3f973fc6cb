// ShowJob (include/reel/jobs.h): one episode of a pooled task (its row, schema, sample
// values, decoded families, keypoints files) or of a foreign dataset, as `reel show` prints it.
#include <arrow/api.h>

#include <algorithm>

#include "jobs/summary_internal.h"
#include "reel/decode.h"
#include "reel/jobs.h"

namespace reel {
namespace {

using internal::Json;

// A JSON-string column shown as JSON when it is JSON within reel's bounds.
Json ParseOr(const std::string& text) {
  auto parsed = internal::ParseJson(text, "");
  return parsed.ok() ? std::move(*parsed) : Json(text);  // not JSON: the raw string
}

// A value for people: lists show their first elements and their length.
std::string FormatScalar(const arrow::Scalar& scalar) {
  if (!scalar.is_valid) return "null";
  const auto* list = dynamic_cast<const arrow::BaseListScalar*>(&scalar);
  if (!list) return scalar.ToString();
  const auto& values = *list->value;
  std::string out = "[";
  const int64_t shown = std::min<int64_t>(values.length(), 6);
  for (int64_t i = 0; i < shown; ++i) {
    auto item = values.GetScalar(i);
    out += (i ? ", " : "") + (item.ok() ? FormatScalar(**item) : std::string("?"));
  }
  if (values.length() > shown) out += ", ... (" + std::to_string(values.length()) + " values)";
  return out + "]";
}

Json ColumnsJson(const arrow::Table& t) {
  Json columns = Json::array();
  for (int i = 0; i < t.num_columns(); ++i)
    columns.push_back({{"name", t.schema()->field(i)->name()},
                       {"type", t.schema()->field(i)->type()->ToString()},
                       {"null_count", t.column(i)->null_count()},
                       {"sample", SampleValues(*t.column(i), 3)}});
  return columns;
}

Json ForceMatrixSummary(const std::string& name, const arrow::ChunkedArray& column, const EpisodeRow& row,
                        const InfoJson& info) {
  const auto& type = static_cast<const arrow::ListType&>(*column.type());
  const std::string dtype = type.value_type()->id() == arrow::Type::INT16 ? "int16" : "float32";
  Json j = {{"column", name}};
  auto spec = ResolveForceMatrixSpec(name, row, info, dtype);
  if (!spec.ok()) {
    j["error"] = spec.status().message();
    return j;
  }
  j["encoding"] =
      spec->spec.encoding == ForceMatrixEncoding::kRowDiffQuantized ? "row_diff_quantized" : "row_flat_raw";
  j["dtype"] = dtype;
  j["scale"] = spec->spec.scale;
  j["scale_source"] = ScaleSourceName(spec->source);
  int64_t samples = 0, first = -1;
  std::vector<float> frame(kForceMatrixValues);
  for (int64_t r = 0; r < column.length(); ++r) {
    auto decoded = DecodeForceMatrixCell(column, r, spec->spec, frame.data());
    if (!decoded.ok()) {
      j["error"] = decoded.status().message();
      return j;
    }
    if (!*decoded) continue;
    ++samples;
    if (first >= 0) continue;
    first = r;
    double fz = 0;
    for (int64_t i = 2; i < kForceMatrixValues; i += 3) fz += frame[i];
    j["fz_sum"] = fz;
    j["min"] = *std::min_element(frame.begin(), frame.end());
    j["max"] = *std::max_element(frame.begin(), frame.end());
  }
  j["samples"] = samples;
  j["first_row"] = first;
  return j;
}

Json SlamSummary(const std::string& name, const arrow::Table& t) {
  auto ns = t.GetColumnByName(name + "_ns");
  auto points = DecodeSlam(*t.GetColumnByName(name), ns && ns->type()->id() == arrow::Type::LIST ? ns.get() : nullptr);
  Json s = {{"column", name}};
  if (!points.ok()) {
    s["error"] = points.status().message();
    return s;
  }
  int64_t stamped = 0;
  for (const SlamPoint& p : *points) stamped += p.ns != 0;
  s["points"] = points->size();
  s["stamped_points"] = stamped;
  return s;
}

Json ImuSummary(const arrow::Table& t) {
  auto col = t.GetColumnByName("observation.imu");
  if (!col || col->type()->id() != arrow::Type::LIST) return nullptr;
  auto ts = t.GetColumnByName("imu_ts_ns");
  auto samples = DecodeImu(*col, ts && ts->type()->id() == arrow::Type::LIST ? ts.get() : nullptr);
  if (!samples.ok()) return {{"error", samples.status().message()}};
  return {{"rows", t.num_rows()}, {"samples", samples->values.size()}};
}

Json RowJson(const EpisodeRow& r) {
  return {{"episode_index", r.episode_index},
          {"task_index", r.task_index},
          {"start_frame_index", r.start_frame_index},
          {"end_frame_index", r.end_frame_index},
          {"length", r.length},
          {"created_at", r.created_at},
          {"duration_sec", r.duration_sec},
          {"drop_stats", ParseOr(r.drop_stats)},
          {"video_codec", ParseOr(r.video_codec)},
          {"calibration", ParseOr(r.calibration)},
          {"force_matrix_specs", ParseOr(r.force_matrix_specs)},
          {"slam_specs", ParseOr(r.slam_specs)},
          {"missing_columns", r.missing_columns}};
}

// The data file's columns and its decoded families (force matrices, SLAM, IMU).
Status AddData(const Task& task, const EpisodeEntry& episode, const EpisodeRow& row, Json& j) {
  Json matrices = Json::array(), slam = Json::array(), columns = Json::array(), imu = nullptr;
  if (!episode.data_path.empty()) {
    REEL_ASSIGN_OR_RETURN(auto table, task.ReadData(episode));
    const arrow::Table& t = *table;
    columns = ColumnsJson(t);
    for (int i = 0; i < t.num_columns(); ++i) {
      const std::string& name = t.schema()->field(i)->name();
      if (t.schema()->field(i)->type()->id() != arrow::Type::LIST) continue;
      if (name.size() > 13 && name.ends_with("_force_matrix"))
        matrices.push_back(ForceMatrixSummary(name, *t.column(i), row, task.info()));
      if (name.ends_with("slam_trajectory")) slam.push_back(SlamSummary(name, t));
    }
    imu = ImuSummary(t);
  }
  j["columns"] = std::move(columns);
  j["force_matrices"] = std::move(matrices);
  j["imu"] = std::move(imu);
  j["slam"] = std::move(slam);
  return Status::OK();
}

Result<Json> ShowTaskEpisode(const Task& task, int64_t n, const std::string& keypoints) {
  REEL_ASSIGN_OR_RETURN(EpisodeEntry episode, task.FindEpisode(n));
  auto row = task.ReadEpisodeRow(episode);
  // A missing row is shown as such; a row file that cannot be read is an error.
  if (!row.ok() && row.status().code() != StatusCode::kNotFound) return row.status();
  EpisodeRow defaults;
  defaults.episode_index = n;
  Json j = {{"episode_index", n},
            {"chunk", episode.location.chunk},
            {"file", episode.location.file},
            {"data_path", episode.data_path}};
  if (row.ok()) {
    j["row"] = RowJson(*row);
  } else {
    j["row"] = nullptr;
    j["row_error"] = row.status().message();
  }
  REEL_RETURN_IF_ERROR(AddData(task, episode, row.ok() ? *row : defaults, j));
  Json videos = Json::object();
  for (const auto& [slot, path] : episode.videos) videos[slot] = path;
  j["videos"] = std::move(videos);
  REEL_ASSIGN_OR_RETURN(std::string mirror, KeypointsMirrorOf(task, keypoints));
  if (!mirror.empty()) j["keypoints"] = internal::KeypointsShowJson(task, mirror, n);
  return j;
}

Result<Json> ShowDatasetEpisode(const ForeignDataset& dataset, int64_t n) {
  REEL_ASSIGN_OR_RETURN(auto episodes, dataset.ReadEpisodes());
  REEL_ASSIGN_OR_RETURN(const ForeignEpisode* e, FindForeignEpisode(episodes, n, dataset.root()));
  REEL_ASSIGN_OR_RETURN(auto table, dataset.ReadFrames(*e));
  REEL_ASSIGN_OR_RETURN(Json j, internal::ParseJson(ToJson(*e), "episode"));
  j["format"] = DatasetFormatName(dataset.info().format);
  j["rows"] = table->num_rows();
  j["columns"] = ColumnsJson(*table);
  return j;
}

Result<Json> Show(internal::Locations& at, const std::string& path, int64_t n, const std::string& keypoints) {
  REEL_ASSIGN_OR_RETURN(internal::Opened o, internal::OpenSummarized(at, path));
  if (o.dataset) return ShowDatasetEpisode(*o.dataset, n);
  return ShowTaskEpisode(*o.task, n, keypoints);
}

}  // namespace

std::vector<std::string> SampleValues(const arrow::ChunkedArray& column, int64_t n) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < std::min(n, column.length()); ++i) {
    auto s = column.GetScalar(i);
    std::string text = s.ok() ? FormatScalar(**s) : "?";
    if (text.size() > 100) text = text.substr(0, 97) + "...";
    out.push_back(text);
  }
  return out;
}

Result<std::string> ShowJob(const std::string& path, int64_t episode_index, const std::string& keypoints,
                            const ObjectStoreOptions& store) {
  internal::Locations at(store);
  REEL_ASSIGN_OR_RETURN(Json j, at.Name(Show(at, path, episode_index, keypoints)));
  return internal::Dump(j, -1);
}

}  // namespace reel
