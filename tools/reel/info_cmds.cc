// reel info | ls | show | stats: read-only views of a task; stats --rebuild / --verify
// recompute meta/stats.json from data/ (include/reel/maintenance.h).
#include <arrow/api.h>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <set>
#include <span>
#include <sstream>

#include "cli.h"
#include "foreign_cmds.h"
#include "reel/decode.h"
#include "reel/file_group.h"
#include "reel/jobs.h"
#include "reel/task.h"

namespace reel::cli {
namespace {

struct Common {
  std::string task;
  bool json = false;
  ObjectStoreOptions store;
  std::string keypoints;  // ls, show: the keypoints mirror folder (default: found beside the task)
};

// The input resolved (plain path or URI) and opened as a pooled task.
Result<std::unique_ptr<Task>> OpenTask(const OpenedLocation& loc) {
  TaskOptions options;
  options.fs = loc.fs.get();
  return Task::Open(loc.root, options);
}

// A JSON-string column shown as JSON when it is JSON within reel's bounds.
Json ParseOr(const std::string& text) {
  if (!CheckJsonBounds(text, "").ok()) return text;
  try {
    return Json::parse(text);
  } catch (const std::exception&) {
    return text;  // not JSON: show the raw string
  }
}

Json FeatureJson(const FeatureSpec& f) {
  Json j = {{"dtype", f.dtype}, {"shape", f.shape}};
  if (f.encoding) j["encoding"] = *f.encoding;
  if (f.scale) j["scale"] = *f.scale;
  return j;
}

std::string Shape(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

// ---- info ----------------------------------------------------------------------------

int RunInfo(const Common& c) {
  auto loc = OpenInput(c.task, c.store);
  if (!loc.ok()) return Fail(loc.status());
  if (IsForeignRoot(*loc)) return RunForeignInfo(*loc, c.json);
  auto task = OpenTask(*loc);
  if (!task.ok()) return Fail(task.status());
  const InfoJson& info = (*task)->info();
  auto episodes = (*task)->ListEpisodes();
  if (!episodes.ok()) return Fail(episodes.status());
  int64_t frames = 0;
  double duration = 0;
  // A batch of rows at a time: 100,000 episodes' rows held at once would be about 250 MB.
  (void)(*task)->VisitEpisodeRows(*episodes, {"length", "duration_sec"},
                                  [&](size_t, std::span<const Result<EpisodeRow>> rows) {
                                    for (const auto& row : rows) {
                                      if (!row.ok()) continue;  // `reel check` reports missing or broken rows
                                      frames += row->length;
                                      duration += row->duration_sec;
                                    }
                                    return Status::OK();
                                  });
  std::set<std::string> slots;
  for (const EpisodeEntry& e : *episodes)
    for (const auto& [slot, path] : e.videos) slots.insert(slot);

  Json j;
  j["path"] = c.task;
  j["format"] = DatasetFormatName(DatasetFormat::kPooledEpisodesV1);
  j["version"] = info.format;
  j["task_name"] = info.task_name;
  j["codebase_version"] = info.codebase_version;
  j["app_version"] = info.app_version;
  j["fps"] = info.fps;
  j["chunks_size"] = info.chunks_size;
  j["total_episodes"] = info.total_episodes;
  j["episodes"] = episodes->size();
  j["frames"] = frames;
  j["duration_sec"] = duration;
  // devices, cameras and video_extensions exactly as the model writes them back.
  auto serialized = SerializeInfoJson(info);
  if (!serialized.ok()) return Fail(serialized.status());
  const Json doc = Json::parse(*serialized);
  for (const char* key : {"devices", "cameras", "video_extensions"}) j[key] = doc[key];
  j["video_slots"] = std::vector<std::string>(slots.begin(), slots.end());
  Json owners = Json::object();  // the device <-> column binding (multi-device §6.4)
  for (const auto& [column, keys] : ColumnWriters(info.devices)) owners[column] = keys.front();
  j["column_owners"] = std::move(owners);
  Json features = Json::object();
  for (const auto& [name, f] : info.features) features[name] = FeatureJson(f);
  j["features"] = features;
  j["sensors"] = info.sensors;
  if (c.json) {
    PrintJson(j);
    return kExitOk;
  }
  std::cout << "task        " << info.task_name << "  (" << c.task << ")\n"
            << "format      " << info.format << ", codebase " << info.codebase_version << ", app "
            << info.app_version << "\n"
            << "fps         " << info.fps << "\n"
            << "episodes    " << episodes->size() << " (total_episodes " << info.total_episodes
            << ", chunks_size " << info.chunks_size << ")\n"
            << "frames      " << frames << ", " << std::fixed << std::setprecision(1) << duration
            << " s\n";
  std::cout << "devices\n";
  for (const DeviceEntry& d : info.devices) {
    std::cout << "  " << d.kind << "  " << d.name << "  " << d.key << "  slots:";
    for (const auto& s : d.slots) std::cout << " " << s;
    if (d.rig) std::cout << "  rig " << *d.rig;
    const std::vector<std::string> bound = d.BoundColumns();
    if (!bound.empty()) std::cout << "  writes:";
    for (const auto& column : bound) std::cout << " " << column;
    std::cout << "\n";
  }
  std::cout << "video slots\n";
  for (const auto& [slot, ext] : info.video_extensions) {
    std::cout << "  " << slot << "." << ext;
    if (const CameraSpec* cam = Lookup(info.cameras, slot))
      std::cout << "  " << cam->width << "x" << cam->height;
    else
      std::cout << "  (depth or not a camera)";
    std::cout << (slots.count(slot) ? "" : "  [no files]") << "\n";
  }
  std::cout << "features\n";
  for (const auto& [name, f] : info.features) {
    std::cout << "  " << std::left << std::setw(52) << name << " " << f.dtype << Shape(f.shape);
    if (f.encoding) std::cout << " " << *f.encoding;
    if (f.scale) std::cout << " scale=" << Json(*f.scale).dump();
    std::cout << "\n";
  }
  return kExitOk;
}

// ---- ls ----------------------------------------------------------------------------------

// One episode as `reel ls` shows it, printed as a text line or as JSON.
struct LsEpisode {
  const EpisodeEntry* entry = nullptr;
  const EpisodeRow* row = nullptr;         // null when the row is missing or unreadable
  const arrow::Schema* schema = nullptr;  // the data file's; null when it has none
  FileGroup group;
  Json keypoints;  // null unless a keypoints mirror is shown
};

LsEpisode MakeLsEpisode(const Task& task, const EpisodeEntry& e, const Result<EpisodeRow>& row,
                        const Result<std::shared_ptr<arrow::Schema>>& schema, const std::string& mirror) {
  LsEpisode out{&e, row.ok() ? &*row : nullptr, schema.ok() ? schema->get() : nullptr, {}, Json()};
  out.group = EpisodeFileGroup(task, e, out.row);
  if (!mirror.empty()) out.keypoints = KeypointsLsJson(task, mirror, e.episode_index);
  return out;
}

// `text` as a JSON string: plain ASCII directly, anything else as the JSON library writes it
// (escapes, and invalid UTF-8 replaced as everywhere else in the CLI's JSON).
void AppendJsonString(std::string& out, std::string_view text) {
  const bool plain = std::all_of(text.begin(), text.end(), [](char ch) {
    return ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\';
  });
  if (!plain) {
    out += Json(std::string(text)).dump(-1, ' ', false, Json::error_handler_t::replace);
    return;
  }
  out += '"';
  out += text;
  out += '"';
}

// One line of `reel ls --json`: the object Json would print, written directly (a listing
// of 100,000 episodes spent most of its time building and freeing JSON trees).
void AppendLsJson(std::string& out, const LsEpisode& e) {
  const EpisodeEntry& entry = *e.entry;
  out += "{\"episode_index\":" + std::to_string(entry.episode_index);
  out += ",\"chunk\":" + std::to_string(entry.location.chunk) + ",\"file\":" + std::to_string(entry.location.file);
  out += ",\"length\":" + (e.row ? std::to_string(e.row->length) : std::string("null"));
  out += ",\"duration_sec\":" + (e.row ? Json(e.row->duration_sec).dump() : std::string("null"));
  out += std::string(",\"has_data\":") + (entry.data_path.empty() ? "false" : "true");
  out += ",\"file_group\":";
  AppendJsonString(out, FileGroupStateName(e.group.state));
  out += ",\"missing_files\":[";
  for (size_t i = 0; i < e.group.missing.size(); ++i) {
    if (i) out += ',';
    AppendJsonString(out, e.group.missing[i]);
  }
  out += "],\"row_source\":";
  AppendJsonString(out, RowSourceName(entry.row_source));
  out += ",\"videos\":{";
  for (size_t i = 0; i < entry.videos.size(); ++i) {
    if (i) out += ',';
    AppendJsonString(out, entry.videos[i].first);
    out += ':';
    AppendJsonString(out, entry.videos[i].second);
  }
  out += "},\"columns\":[";
  for (int i = 0; e.schema && i < e.schema->num_fields(); ++i) {
    if (i) out += ',';
    AppendJsonString(out, e.schema->field(i)->name());
  }
  out += ']';
  if (!e.keypoints.is_null())
    out += ",\"keypoints\":" + e.keypoints.dump(-1, ' ', false, Json::error_handler_t::replace);
  out += '}';
}

void PrintLsHeader() {
  std::cout << std::left << std::setw(8) << "N" << std::setw(10) << "chunk/file" << std::right
            << std::setw(8) << "length" << std::setw(10) << "seconds" << "  " << std::left << std::setw(9)
            << "files" << "streams / columns\n";
}

void PrintLsLine(const LsEpisode& e) {
  const EpisodeEntry& entry = *e.entry;
  std::ostringstream cf;
  cf << std::setfill('0') << std::setw(3) << entry.location.chunk << "/" << std::setw(3) << entry.location.file;
  std::cout << std::left << std::setw(8) << entry.episode_index << std::setw(10) << cf.str() << std::right
            << std::setw(8) << (e.row ? std::to_string(e.row->length) : std::string("-")) << std::setw(10)
            << std::fixed << std::setprecision(2) << (e.row ? e.row->duration_sec : 0.0) << "  " << std::left
            << std::setw(9) << FileGroupStateName(e.group.state);
  for (const auto& [slot, path] : entry.videos) std::cout << slot << " ";
  std::cout << "| " << (e.schema ? e.schema->num_fields() : 0) << " columns"
            << (entry.data_path.empty() ? " (no data)" : "")
            << (entry.row_source == RowSource::kEpisodeFile ? "" : std::string(" row:") + RowSourceName(entry.row_source));
  if (!e.group.missing.empty()) {
    std::cout << " | missing:";
    for (const std::string& f : e.group.missing) std::cout << " " << f;
  }
  if (!e.keypoints.is_null()) std::cout << " | keypoints: " << (e.keypoints.empty() ? "-" : e.keypoints.dump());
  std::cout << "\n";
}

// Streamed, one episode at a time: a listing of 100,000 episodes is never one JSON tree in
// memory. --json prints {"episodes": [...]} with one episode per line.
int RunLs(const Common& c) {
  auto loc = OpenInput(c.task, c.store);
  if (!loc.ok()) return Fail(loc.status());
  if (IsForeignRoot(*loc)) return RunForeignLs(*loc, c.json);
  auto task = OpenTask(*loc);
  if (!task.ok()) return Fail(task.status());
  auto episodes = (*task)->ListEpisodes();
  if (!episodes.ok()) return Fail(episodes.status());
  auto mirror = KeypointsMirrorOf(**task, c.keypoints);
  if (!mirror.ok()) return Fail(mirror.status());
  if (!c.json) PrintLsHeader();
  std::string out = c.json ? "{\"episodes\": [" : "";
  auto print = [&](size_t first, auto rows, auto schemas) {
    for (size_t j = 0; j < rows.size(); ++j) {
      const size_t i = first + j;
      const LsEpisode e = MakeLsEpisode(**task, (*episodes)[i], rows[j], schemas[j], *mirror);
      if (!c.json) {
        PrintLsLine(e);
        continue;
      }
      out += i ? ",\n  " : "\n  ";
      AppendLsJson(out, e);
      if (out.size() > (1 << 16)) std::cout << out, out.clear();
    }
    return Status::OK();
  };
  // video_codec: the video slots each row declares, for the file group.
  (void)(*task)->VisitRowsAndSchemas(*episodes, {"length", "duration_sec", "video_codec"}, print);
  if (c.json) std::cout << out << (episodes->empty() ? "" : "\n") << "]}\n";
  return kExitOk;
}

// ---- show -----------------------------------------------------------------------------------

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

std::vector<std::string> Sample(const arrow::ChunkedArray& column, int64_t n) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < std::min(n, column.length()); ++i) {
    auto s = column.GetScalar(i);
    std::string text = s.ok() ? FormatScalar(**s) : "?";
    if (text.size() > 100) text = text.substr(0, 97) + "...";
    out.push_back(text);
  }
  return out;
}

Json ForceMatrixSummary(const std::string& name, const arrow::ChunkedArray& column,
                        const EpisodeRow& row, const InfoJson& info) {
  const auto& type = static_cast<const arrow::ListType&>(*column.type());
  const std::string dtype = type.value_type()->id() == arrow::Type::INT16 ? "int16" : "float32";
  Json j = {{"column", name}};
  auto spec = ResolveForceMatrixSpec(name, row, info, dtype);
  if (!spec.ok()) {
    j["error"] = spec.status().message();
    return j;
  }
  j["encoding"] = spec->spec.encoding == ForceMatrixEncoding::kRowDiffQuantized ? "row_diff_quantized"
                                                                               : "row_flat_raw";
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
    float lo = frame[0], hi = frame[0];
    for (int64_t i = 0; i < kForceMatrixValues; ++i) {
      if (i % 3 == 2) fz += frame[i];
      lo = std::min(lo, frame[i]);
      hi = std::max(hi, frame[i]);
    }
    j["fz_sum"] = fz;
    j["min"] = lo;
    j["max"] = hi;
  }
  j["samples"] = samples;
  j["first_row"] = first;
  return j;
}

int RunShow(const Common& c, int64_t n) {
  auto loc = OpenInput(c.task, c.store);
  if (!loc.ok()) return Fail(loc.status());
  if (IsForeignRoot(*loc)) return RunForeignShow(*loc, n, c.json);
  auto task = OpenTask(*loc);
  if (!task.ok()) return Fail(task.status());
  auto episode = (*task)->FindEpisode(n);
  if (!episode.ok()) return Fail(episode.status());
  const InfoJson& info = (*task)->info();
  auto row = (*task)->ReadEpisodeRow(*episode);
  // A missing row is shown as such; a row file that cannot be read is an error.
  if (!row.ok() && row.status().code() != StatusCode::kNotFound) return Fail(row.status());
  EpisodeRow defaults;
  defaults.episode_index = n;
  const EpisodeRow& r = row.ok() ? *row : defaults;
  Json j = {{"episode_index", n},
            {"chunk", episode->location.chunk},
            {"file", episode->location.file},
            {"data_path", episode->data_path}};
  if (row.ok()) {
    j["row"] = {{"episode_index", r.episode_index},
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
  } else {
    j["row"] = nullptr;
    j["row_error"] = row.status().message();
  }
  Json columns = Json::array(), matrices = Json::array(), slam = Json::array();
  Json imu = nullptr;
  if (!episode->data_path.empty()) {
    auto table = (*task)->ReadData(*episode);
    if (!table.ok()) return Fail(table.status());
    const arrow::Table& t = **table;
    for (int i = 0; i < t.num_columns(); ++i) {
      const auto& field = t.schema()->field(i);
      const auto& column = *t.column(i);
      columns.push_back({{"name", field->name()},
                         {"type", field->type()->ToString()},
                         {"null_count", column.null_count()},
                         {"sample", Sample(column, 3)}});
      const std::string& name = field->name();
      const bool is_list = field->type()->id() == arrow::Type::LIST;
      if (is_list && name.size() > 13 && name.ends_with("_force_matrix"))
        matrices.push_back(ForceMatrixSummary(name, column, r, info));
      if (is_list && name.ends_with("slam_trajectory")) {
        auto ns = t.GetColumnByName(name + "_ns");
        auto points = DecodeSlam(column, ns && ns->type()->id() == arrow::Type::LIST ? ns.get() : nullptr);
        Json s = {{"column", name}};
        if (points.ok()) {
          int64_t stamped = 0;
          for (const SlamPoint& p : *points) stamped += p.ns != 0;
          s["points"] = points->size();
          s["stamped_points"] = stamped;
        } else {
          s["error"] = points.status().message();
        }
        slam.push_back(s);
      }
    }
    if (auto col = t.GetColumnByName("observation.imu"); col && col->type()->id() == arrow::Type::LIST) {
      auto ts = t.GetColumnByName("imu_ts_ns");
      auto samples = DecodeImu(*col, ts && ts->type()->id() == arrow::Type::LIST ? ts.get() : nullptr);
      if (samples.ok())
        imu = {{"rows", t.num_rows()}, {"samples", samples->values.size()}};
      else
        imu = {{"error", samples.status().message()}};
    }
  }
  j["columns"] = columns;
  j["force_matrices"] = matrices;
  j["imu"] = imu;
  j["slam"] = slam;
  Json videos = Json::object();
  for (const auto& [slot, path] : episode->videos) videos[slot] = path;
  j["videos"] = videos;
  auto mirror = KeypointsMirrorOf(**task, c.keypoints);
  if (!mirror.ok()) return Fail(mirror.status());
  if (!mirror->empty()) j["keypoints"] = KeypointsShowJson(**task, *mirror, n);
  if (c.json) {
    PrintJson(j);
    return kExitOk;
  }
  std::cout << "episode " << n << "  chunk " << episode->location.chunk << " file "
            << episode->location.file << "  " << episode->data_path << "\n";
  if (row.ok())
    std::cout << "  length " << r.length << ", " << r.duration_sec << " s, drop_stats "
              << r.drop_stats << "\n";
  else
    std::cout << "  (no episodes row: " << row.status().message() << ")\n";
  for (const Json& col : columns) {
    std::cout << "  " << std::left << std::setw(48) << col["name"].get<std::string>() << " "
              << col["type"].get<std::string>() << "\n";
    std::string joined;
    for (const Json& v : col["sample"]) joined += (joined.empty() ? "" : " | ") + v.get<std::string>();
    if (joined.size() > 150) joined = joined.substr(0, 147) + "...";
    std::cout << "      " << joined << "\n";
  }
  for (const Json& m : matrices)
    std::cout << "  force matrix " << m["column"].get<std::string>() << ": " << m.value("encoding", "?")
              << " scale " << m.value("scale", 0.0) << " (from " << m.value("scale_source", "?")
              << "), " << m.value("samples", 0) << " samples, first frame fz sum "
              << m.value("fz_sum", 0.0) << " mN\n";
  for (const auto& [slot, path] : episode->videos) std::cout << "  video " << slot << ": " << path << "\n";
  if (j.contains("keypoints")) PrintKeypointsShow(j["keypoints"]);
  return kExitOk;
}

// ---- stats ----------------------------------------------------------------------------------

int RunStats(const Common& c) {
  auto loc = OpenInput(c.task, c.store);
  if (!loc.ok()) return Fail(loc.status());
  auto task = OpenTask(*loc);
  if (!task.ok()) return Fail(task.status());
  auto stats = (*task)->ReadStats();
  if (!stats.ok()) return Fail(stats.status());
  Json blocks = Json::object();
  for (const auto& [name, b] : stats->blocks)
    blocks[name] = {{"count", b.count ? Json(*b.count) : Json()},
                    {"needs_rebuild", b.needs_rebuild()},
                    {"dim", b.mean.size()},
                    {"mean", b.mean},
                    {"std", b.std},
                    {"min", b.min},
                    {"max", b.max}};
  if (c.json) {
    PrintJson({{"blocks", blocks}});
    return kExitOk;
  }
  for (const auto& [name, b] : stats->blocks) {
    std::cout << std::left << std::setw(44) << name << " dim " << std::setw(4) << b.mean.size()
              << " count " << (b.count ? std::to_string(*b.count) : "MISSING (needs rebuild)");
    if (!b.mean.empty()) {
      double mean = 0;
      for (double v : b.mean) mean += v;
      std::cout << "  mean(avg) " << mean / static_cast<double>(b.mean.size());
    }
    std::cout << "\n";
  }
  return kExitOk;
}

// --rebuild / --verify: recomputed from data/; --verify (or a dry run) writes nothing and
// exits 1 when the stored file differs (kExitFindings, like check).
struct StatsRebuildArgs {
  bool rebuild = false, verify = false, dry_run = false;
  std::string progress = "auto";
};

int RunStatsRebuild(const Common& c, const StatsRebuildArgs& a) {
  RebuildStatsOptions options;
  options.dry_run = a.verify || a.dry_run;
  options.progress = MakeProgress(a.progress);
  auto r = RebuildStatsJob(c.task, options, c.store);
  if (!r.ok()) return Fail(r.status());
  const bool differs = !r->diffs.empty();
  if (c.json) {
    PrintJson(ToJson(*r));
  } else {
    for (const StatsBlockDiff& d : r->diffs)
      std::cout << d.block << ": " << d.what << ": " << d.detail << "\n";
    std::cout << "recomputed from " << r->episodes << " episodes: "
              << (differs ? std::to_string(r->diffs.size()) + " difference(s) from meta/stats.json"
                          : std::string("meta/stats.json agrees"))
              << (r->written ? "; meta/stats.json rewritten" : options.dry_run ? "; nothing written" : "")
              << "\n";
  }
  return a.verify && differs ? kExitFindings : kExitOk;
}

}  // namespace

std::vector<std::string> SampleColumn(const arrow::ChunkedArray& column, int64_t n) {
  return Sample(column, n);
}

void AddInfoCommands(CLI::App& app, int& exit_code) {
  auto add = [&](const char* name, const char* help) {
    auto common = std::make_shared<Common>();
    auto* cmd = app.add_subcommand(name, help);
    cmd->add_option("task", common->task,
                    "task directory or URI (s3://bucket/path), or a LeRobot v2/v3 or bundle dataset")
        ->required();
    AddJsonFlag(cmd, common->json);
    AddStoreOptions(cmd, common->store);
    return std::make_pair(cmd, common);
  };
  auto [info, info_args] = add("info", "Summarise a task: format, fps, episodes, devices, slots, features");
  info->callback([&exit_code, a = info_args] { exit_code = RunInfo(*a); });
  auto [ls, ls_args] = add("ls", "One line per episode: N, chunk/file, length, streams, columns, keypoints parts");
  auto keypoints_option = [](CLI::App* cmd, Common& common) {
    cmd->add_option("--keypoints", common.keypoints,
                    "the task's keypoints mirror folder (contract §10; default: keypoints_output/<task> beside the "
                    "task or up to three levels above, shown only when found)");
  };
  keypoints_option(ls, *ls_args);
  ls->callback([&exit_code, a = ls_args] { exit_code = RunLs(*a); });
  auto [show, show_args] = add("show", "One episode: its row, schema, sample values, decoded families, keypoints files");
  keypoints_option(show, *show_args);
  auto n = std::make_shared<int64_t>(0);
  show->add_option("episode", *n,
                   "global episode number N (1-based); LeRobot: episode_index, bundle: manifest "
                   "position (0-based)")
      ->required();
  show->callback([&exit_code, a = show_args, n] { exit_code = RunShow(*a, *n); });
  auto [stats, stats_args] = add("stats", "The task's stats.json blocks");
  auto rb = std::make_shared<StatsRebuildArgs>();
  auto* rebuild = stats->add_flag("--rebuild", rb->rebuild,
                                  "recompute meta/stats.json from data/ (contract §4 accumulator) and write it");
  stats->add_flag("--verify", rb->verify,
                  "recompute and compare with meta/stats.json; exit 1 with a per-block diff when they differ")
      ->excludes(rebuild);
  stats->add_flag("--dry-run", rb->dry_run, "with --rebuild: report the differences, write nothing");
  AddProgressOption(stats, rb->progress);
  stats->callback([&exit_code, a = stats_args, rb] {
    if (rb->dry_run && !rb->rebuild) {
      exit_code = UsageFail("--dry-run goes with --rebuild");
    } else if (rb->rebuild || rb->verify) {
      exit_code = RunStatsRebuild(*a, *rb);
    } else {
      exit_code = RunStats(*a);
    }
  });
}

}  // namespace reel::cli
