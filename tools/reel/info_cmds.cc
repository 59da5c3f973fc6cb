// reel info | ls | show | stats: read-only views of a task; stats --rebuild / --verify
// recompute meta/stats.json from data/ (include/reel/maintenance.h).
#include <arrow/api.h>

#include <algorithm>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>

#include "cli.h"
#include "foreign_cmds.h"
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

std::string Shape(const Json& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + shape[i].dump();
  return s + "]";
}

// ---- info ----------------------------------------------------------------------------
// Each command's text is a view of the document --json prints (reel/jobs.h).

void PrintDevices(const Json& j) {
  std::cout << "devices\n";
  for (const Json& d : j["devices"]) {
    const std::string key = d.value("key", "");
    std::cout << "  " << d.value("kind", "") << "  " << d.value("name", "") << "  " << key << "  slots:";
    for (const Json& slot : d.value("slots", Json::array())) std::cout << " " << slot.get<std::string>();
    if (d.contains("rig")) std::cout << "  rig " << d["rig"].dump();
    std::string bound;
    for (const auto& [column, owner] : j["column_owners"].items())
      if (owner == key) bound += " " + column;
    if (!bound.empty()) std::cout << "  writes:" << bound;
    std::cout << "\n";
  }
}

void PrintTaskInfo(const Json& j) {
  std::cout << "task        " << j["task_name"].get<std::string>() << "  (" << j["path"].get<std::string>() << ")\n"
            << "format      " << j["version"].get<std::string>() << ", codebase "
            << j["codebase_version"].get<std::string>() << ", app " << j["app_version"].get<std::string>() << "\n"
            << "fps         " << j["fps"].get<double>() << "\n"
            << "episodes    " << j["episodes"].dump() << " (total_episodes " << j["total_episodes"].dump()
            << ", chunks_size " << j["chunks_size"].dump() << ")\n"
            << "frames      " << j["frames"].dump() << ", " << std::fixed << std::setprecision(1)
            << j["duration_sec"].get<double>() << " s\n";
  PrintDevices(j);
  std::cout << "video slots\n";
  const Json& slots = j["video_slots"];
  for (const auto& [slot, ext] : j["video_extensions"].items()) {
    std::cout << "  " << slot << "." << ext.get<std::string>();
    if (const Json& cams = j["cameras"]; cams.contains(slot))
      std::cout << "  " << cams[slot].value("width", 0) << "x" << cams[slot].value("height", 0);
    else
      std::cout << "  (depth or not a camera)";
    std::cout << (std::find(slots.begin(), slots.end(), slot) != slots.end() ? "" : "  [no files]") << "\n";
  }
  std::cout << "features\n";
  for (const auto& [name, f] : j["features"].items()) {
    std::cout << "  " << std::left << std::setw(52) << name << " " << f["dtype"].get<std::string>() << Shape(f["shape"]);
    if (f.contains("encoding")) std::cout << " " << f["encoding"].get<std::string>();
    if (f.contains("scale")) std::cout << " scale=" << f["scale"].dump();
    std::cout << "\n";
  }
}

int RunInfo(const Common& c) {
  auto doc = InfoJob(c.task, c.store);
  if (!doc.ok()) return Fail(doc.status());
  const Json j = Json::parse(*doc);
  if (c.json) PrintJson(j);
  else if (j["format"] == DatasetFormatName(DatasetFormat::kPooledEpisodesV1)) PrintTaskInfo(j);
  else PrintForeignInfo(j);
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

void PrintColumns(const Json& columns, int width) {
  for (const Json& col : columns) {
    std::string joined;
    for (const Json& v : col["sample"]) joined += (joined.empty() ? "" : " | ") + v.get<std::string>();
    if (joined.size() > 150) joined = joined.substr(0, 147) + "...";
    std::cout << "  " << std::left << std::setw(width) << col["name"].get<std::string>() << " "
              << col["type"].get<std::string>() << "\n      " << joined << "\n";
  }
}

void PrintTaskEpisode(const Json& j) {
  std::cout << "episode " << j["episode_index"].dump() << "  chunk " << j["chunk"].dump() << " file "
            << j["file"].dump() << "  " << j["data_path"].get<std::string>() << "\n";
  if (const Json& r = j["row"]; !r.is_null())
    std::cout << "  length " << r["length"].dump() << ", " << r["duration_sec"].get<double>() << " s, drop_stats "
              << (r["drop_stats"].is_string() ? r["drop_stats"].get<std::string>() : r["drop_stats"].dump()) << "\n";
  else
    std::cout << "  (no episodes row: " << j["row_error"].get<std::string>() << ")\n";
  PrintColumns(j["columns"], 48);
  for (const Json& m : j["force_matrices"])
    std::cout << "  force matrix " << m["column"].get<std::string>() << ": " << m.value("encoding", "?")
              << " scale " << m.value("scale", 0.0) << " (from " << m.value("scale_source", "?")
              << "), " << m.value("samples", 0) << " samples, first frame fz sum "
              << m.value("fz_sum", 0.0) << " mN\n";
  for (const auto& [slot, path] : j["videos"].items())
    std::cout << "  video " << slot << ": " << path.get<std::string>() << "\n";
  if (j.contains("keypoints")) PrintKeypointsShow(j["keypoints"]);
}

void PrintDatasetEpisode(const Json& j) {
  std::cout << "episode " << j["episode_index"].dump() << "  " << j["data_path"].get<std::string>() << " rows ["
            << j["from_row"].dump() << ", " << j["to_row"].dump() << ")  length " << j["length"].dump() << "\n";
  for (const Json& t : j["tasks"]) std::cout << "  task: " << t.get<std::string>() << "\n";
  PrintColumns(j["columns"], 40);
  for (const auto& [key, v] : j["videos"].items())
    std::cout << "  video " << key << ": " << v["path"].get<std::string>() << "  [" << v["from_timestamp"].get<double>()
              << ", " << v["to_timestamp"].get<double>() << ") s\n";
}

int RunShow(const Common& c, int64_t n) {
  auto doc = ShowJob(c.task, n, c.keypoints, c.store);
  if (!doc.ok()) return Fail(doc.status());
  const Json j = Json::parse(*doc);
  if (c.json) PrintJson(j);
  else if (j.contains("format")) PrintDatasetEpisode(j);
  else PrintTaskEpisode(j);
  return kExitOk;
}

// ---- stats ----------------------------------------------------------------------------------

int RunStats(const Common& c) {
  auto doc = StatsJob(c.task, c.store);
  if (!doc.ok()) return Fail(doc.status());
  const Json j = Json::parse(*doc);
  if (c.json) {
    PrintJson(j);
    return kExitOk;
  }
  for (const auto& [name, b] : j["blocks"].items()) {
    std::cout << std::left << std::setw(44) << name << " dim " << std::setw(4) << b["dim"].dump() << " count "
              << (b["count"].is_null() ? "MISSING (needs rebuild)" : b["count"].dump());
    if (!b["mean"].empty()) {
      double mean = 0;
      for (const Json& v : b["mean"]) mean += v.get<double>();
      std::cout << "  mean(avg) " << mean / static_cast<double>(b["mean"].size());
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
