// reel._core: the options structs the CLI fills from its flags (ExportOptions,
// ImportOptions, PackOptions, UploadOptions, CheckOptions, SimulateOptions), bound as
// classes whose attributes are the structs' fields, and the operations that take them.
// The Python layer (reel/_ops.py) maps keyword arguments onto the attributes; an unknown
// keyword is a TypeError there. Results come back as the dicts `reel <command> --json`
// prints. Every operation releases the GIL.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <functional>
#include <future>
#include <memory>

#include <filesystem>
#include <type_traits>

#include "binding.h"
#include "released.h"
#include "reel/push.h"
#include "reel/check.h"
#include "reel/interop.h"
#include "reel/maintenance.h"
#include "reel/object_store.h"
#include "reel/pack.h"
#include "reel/recorder.h"
#include "reel/simulate.h"
#include "reel/task.h"
#include "reel/upload.h"

namespace reel {
namespace py {

using namespace nb::literals;

namespace {

// "path/to/task/" and "." name the task by its directory, as the CLI does.
std::string TaskDirName(const std::string& path) {
  std::filesystem::path p = std::filesystem::absolute(path).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

nb::list StringList(const std::vector<std::string>& v) {
  nb::list out;
  for (const auto& s : v) out.append(s);
  return out;
}

void BindExport(nb::module_& m) {
  nb::class_<ExportOptions>(m, "ExportOptions",
                            "reel::ExportOptions and its ExportMapping (include/reel/interop.h), flattened: "
                            "the options of `reel export`.")
      .def(nb::init<>())
      .def_prop_rw(
          "format", [](const ExportOptions& o) { return std::string(ExportFormatName(o.format)); },
          [](ExportOptions& o, const std::string& name) { o.format = Unwrap(ParseExportFormat(name)); },
          "\"lerobot-v3\" (default), \"lerobot-v2.1\" or \"bundle\" (CLI --to).")
      .def_prop_rw(
          "state_columns", [](const ExportOptions& o) { return o.mapping.state_columns; },
          [](ExportOptions& o, std::optional<std::vector<std::string>> v) { o.mapping.state_columns = std::move(v); },
          "Fixed-size float columns joined into observation.state, in order; None (default) = every "
          "fixed-size float32 observation.*_state / *_force column; [] = none (CLI --state).")
      .def_prop_rw(
          "action_columns", [](const ExportOptions& o) { return o.mapping.action_columns; },
          [](ExportOptions& o, std::vector<std::string> v) { o.mapping.action_columns = std::move(v); },
          "Columns joined into `action`; [] (default) keeps the pooled placeholder (CLI --action).")
      .def_prop_rw(
          "list_rules",
          [](const ExportOptions& o) {
            std::map<std::string, std::string> out;
            for (const auto& [c, r] : o.mapping.list_rules) out[c] = r == ListRule::kLast ? "last" : "drop";
            return out;
          },
          [](ExportOptions& o, const std::map<std::string, std::string>& v) {
            std::map<std::string, ListRule> rules;
            for (const auto& [c, r] : v) {
              if (r != "last" && r != "drop")
                RaiseStatus(Status::Invalid("list_rules[\"" + c + "\"] = \"" + r + "\": expected \"last\" or \"drop\""));
              rules[c] = r == "last" ? ListRule::kLast : ListRule::kDrop;
            }
            o.mapping.list_rules = std::move(rules);
          },
          "{list column: \"last\" | \"drop\"}; unnamed list columns: \"last\", force matrices \"drop\" "
          "(CLI --last / --drop-list).")
      .def_prop_rw(
          "drop_columns", [](const ExportOptions& o) { return o.mapping.drop_columns; },
          [](ExportOptions& o, std::vector<std::string> v) { o.mapping.drop_columns = std::move(v); },
          "Columns left out entirely (CLI --drop).")
      .def_prop_rw(
          "include_depth", [](const ExportOptions& o) { return o.mapping.include_depth; },
          [](ExportOptions& o, bool v) { o.mapping.include_depth = v; },
          "Export depth slots (default True; CLI --no-depth).")
      .def_prop_rw(
          "image_prefix", [](const ExportOptions& o) { return o.mapping.image_prefix; },
          [](ExportOptions& o, std::string v) { o.mapping.image_prefix = std::move(v); },
          "Key prefix of exported RGB slots (default \"observation.images.\").")
      .def_prop_rw(
          "depth_prefix", [](const ExportOptions& o) { return o.mapping.depth_prefix; },
          [](ExportOptions& o, std::string v) { o.mapping.depth_prefix = std::move(v); },
          "Key prefix of exported depth slots (default \"observation.depth.\").")
      .def_prop_rw(
          "align", [](const ExportOptions& o) { return o.mapping.streams.align; },
          [](ExportOptions& o, bool v) { o.mapping.streams.align = v; },
          "LeRobot: time-aligned force matrices, IMU window, trajectory pose and canonical left glove "
          "(CLI: on unless --no-align).")
      .def_prop_rw(
          "force_matrix",
          [](const ExportOptions& o) { return std::string(ForceMatrixFeatureName(o.mapping.streams.force_matrix)); },
          [](ExportOptions& o, const std::string& v) { o.mapping.streams.force_matrix = Unwrap(ParseForceMatrixFeature(v)); },
          "LeRobot: each force-matrix column as \"full\" [250,250,3], \"fz\" [250,250] or \"none\" "
          "(CLI --force-matrix).")
      .def_prop_rw(
          "imu_window", [](const ExportOptions& o) { return o.mapping.streams.imu_window; },
          [](ExportOptions& o, int64_t v) { o.mapping.streams.imu_window = v; },
          "LeRobot: IMU samples per frame in observation.imu [K,6]; 0 = the newest, held (CLI --imu-window).")
      .def_prop_rw(
          "align_tolerance_s", [](const ExportOptions& o) { return o.mapping.streams.tolerance_s; },
          [](ExportOptions& o, double v) { o.mapping.streams.tolerance_s = v; },
          "Seconds a paired sample may be from its frame; 0 = half a frame (flat: one frame) "
          "(CLI --align-tolerance).")
      .def_prop_rw(
          "canonical_gloves", [](const ExportOptions& o) { return o.mapping.streams.canonical_gloves; },
          [](ExportOptions& o, bool v) { o.mapping.streams.canonical_gloves = v; },
          "LeRobot: the left glove in canonical order (CLI --glove-order).")
      .def_rw("robot_type", &ExportOptions::robot_type, "info.json robot_type (CLI --robot-type).")
      .def_rw("data_files_size_in_mb", &ExportOptions::data_files_size_in_mb,
              "LeRobot v3 data file rollover size (CLI --data-file-mb).")
      .def_rw("video_files_size_in_mb", &ExportOptions::video_files_size_in_mb,
              "LeRobot v3 video file rollover size (CLI --video-file-mb).")
      .def_rw("chunks_size", &ExportOptions::chunks_size, "Files per chunk directory.")
      .def_rw("episodes", &ExportOptions::episodes, "Pooled N to export; [] = all with data (CLI --episodes).")
      .def_rw("replace_existing", &ExportOptions::replace_existing,
              "Replace an existing export at out_dir once the new one is complete (CLI --force).");

  m.def(
      "export_task",
      [](const std::string& task, const std::string& out_dir, const ExportOptions& options,
         const ObjectStoreOptions& storage) {
        // As the CLI: the task read through its location's file system, a URI output uploaded
        // with the marker file last (ExportPublish::kUpload), a local one renamed into place.
        OpenedLocation src = Unwrap(Locate(task, storage));
        OpenedLocation out = Unwrap(Locate(out_dir, storage));
        ExportOptions o = options;
        o.output_fs = out.fs.get();
        o.publish = out.object_store ? ExportPublish::kUpload : ExportPublish::kRename;
        ExportReport r = Released([&]() -> Result<ExportReport> {
          TaskOptions to;
          to.fs = src.fs.get();
          REEL_ASSIGN_OR_RETURN(auto t, Task::Open(src.root, to));
          return ExportTask(*t, out.root, o);
        });
        if (out.object_store) r.out_dir = out.display;
        nb::dict d;
        d["out_dir"] = r.out_dir;
        d["format"] = ExportFormatName(options.format);
        d["episodes"] = r.episodes;
        d["frames"] = r.frames;
        d["videos_copied"] = r.videos_copied;
        d["videos_reencoded"] = r.videos_reencoded;
        d["features"] = StringList(r.features);
        d["warnings"] = StringList(r.warnings);
        return d;
      },
      "task"_a, "out_dir"_a, "options"_a, "storage"_a = ObjectStoreOptions(),
      "Exports the pooled task (a path or URI) to `out_dir` (a path or URI; must not exist unless "
      "replace_existing), `storage` reaching both; the report `reel export --json` prints.");
}

void BindImport(nb::module_& m) {
  nb::class_<ImportOptions>(m, "ImportOptions", "reel::ImportOptions (include/reel/interop.h): `reel import`.")
      .def(nb::init<>())
      .def_rw("task_name", &ImportOptions::task_name,
              "task_name of a new task; \"\" = the directory's name (CLI --task-name).")
      .def_rw("renumber", &ImportOptions::renumber,
              "Import an episode whose number the task holds with different content under a new "
              "number instead of refusing it (CLI --renumber).");
  m.def(
      "import_dataset",
      [](const std::string& source, const std::string& task, const ImportOptions& options,
         const ObjectStoreOptions& storage) {
        std::optional<PushReport> pushed;
        std::optional<OpenedLocation> loc, from;
        ImportOptions o = options;
        std::string src = source;
        if (IsUri(task)) loc = Unwrap(Locate(task, storage));  // Locate releases the GIL itself
        if (IsUri(source)) {
          from = Unwrap(Locate(source, storage));
          o.source_fs = from->fs.get();
          src = from->root;
        }
        ImportReport r = Released([&]() -> Result<ImportReport> {
          if (!loc) return ImportDataset(src, task, o);
          pushed.emplace();
          return ImportDatasetToStore(src, loc->fs.get(), loc->root, o, &*pushed);
        });
        nb::dict d;
        d["task"] = task;
        d["episodes"] = r.episodes;
        d["frames"] = r.frames;
        d["episode_indices"] = r.episode_indices;
        d["videos_copied"] = r.videos_copied;
        d["videos_reencoded"] = r.videos_reencoded;
        d["round_trip"] = r.round_trip;
        nb::list skipped;
        for (const SkippedEpisode& e : r.skipped) {
          nb::dict k;
          k["source_episode"] = e.source_episode;
          k["episode_index"] = e.episode_index;
          skipped.append(k);
        }
        d["skipped"] = skipped;
        d["warnings"] = StringList(r.warnings);
        if (pushed) {
          nb::dict p;
          p["files_sent"] = pushed->files_sent;
          p["bytes_sent"] = pushed->bytes_sent;
          d["pushed"] = p;
        }
        return d;
      },
      "source"_a, "task"_a, "options"_a, "storage"_a = ObjectStoreOptions(),
      "Imports a LeRobot or bundle dataset into the pooled task (a directory, or a URI: a staged change "
      "published with the push protocol); the report `reel import --json` prints.");
}

void BindPack(nb::module_& m) {
  nb::class_<PackOptions>(m, "PackOptions", "reel::PackOptions (include/reel/pack.h): `reel pack`.")
      .def(nb::init<>())
      .def_rw("replace_existing", &PackOptions::replace_existing,
              "Replace an existing zip at zip_path; other files are never replaced (CLI --force).")
      .def_rw("precompress", &PackOptions::precompress,
              "Re-encode RGB .mp4 that is not HEVC to HEVC first (CLI --precompress).")
      .def_rw("precompress_crf", &PackOptions::precompress_crf, "CRF of precompress, 0..51 (CLI --crf).")
      .def_rw("precompress_preset", &PackOptions::precompress_preset, "x265 preset of precompress (CLI --preset).")
      .def_rw("precompress_threads", &PackOptions::precompress_threads, "Encoder threads; 0 = its choice.");
  m.def(
      "pack_episode",
      [](const std::string& task, int64_t n, const std::string& zip_path, const PackOptions& options,
         const ObjectStoreOptions& storage) {
        // The task read through its location's file system; the zip written locally.
        OpenedLocation src = Unwrap(Locate(task, storage));
        const std::string name = src.object_store ? BaseName(src.root) : TaskDirName(task);
        const std::string out = zip_path.empty() ? DefaultSliceName(name, n) : zip_path;
        PackOptions o = options;
        o.task_fs = src.fs.get();
        o.output_fs = DefaultFileSystem();
        PackResult r = Released([&] { return PackEpisode(src.root, n, out, o); });
        nb::list entries;
        for (const PackedEntry& e : r.entries) {
          nb::dict x;
          x["arcname"] = e.arcname;
          x["size"] = e.size;
          x["recompressed"] = e.recompressed;
          entries.append(x);
        }
        nb::dict d;
        d["zip_path"] = r.zip_path;
        d["episode_index"] = r.episode_index;
        d["upload_episode_index"] = r.upload_episode_index;
        d["zip_bytes"] = r.zip_bytes;
        d["entries"] = entries;
        return d;
      },
      "task"_a, "episode_index"_a, "zip_path"_a, "options"_a, "storage"_a = ObjectStoreOptions(),
      "Writes the §9 upload slice of episode N of the task (a path, or a URI reached with `storage`) "
      "to a local zip (zip_path \"\" = ./<task>_ep{(N-1)%1000:06d}.zip); the report `reel pack --json` prints.");
}

// UploadOptions::progress for a Python callable: called with the GIL from the uploading
// thread. An exception it raises cannot cross the upload code: it is reported as unraisable
// and the upload goes on. The callable is released with the GIL held.
// A Python callable held by a C++ callback: released with the GIL held, whichever thread
// drops the last copy.
struct HeldCallable {
  nb::object fn;
  ~HeldCallable() {
    nb::gil_scoped_acquire gil;
    fn.reset();
  }
};

std::function<void(const UploadProgress&)> ProgressCallback(nb::object fn) {
  auto holder = std::make_shared<HeldCallable>();
  holder->fn = std::move(fn);
  return [holder](const UploadProgress& p) {
    nb::gil_scoped_acquire gil;
    try {
      holder->fn(p.episode_index, p.sent, p.total, p.attempt);
    } catch (nb::python_error& e) {
      e.discard_as_unraisable("reel.upload progress callback");
    }
  };
}

// OutboxOptions::events for a Python callable, as ProgressCallback: one dict per event.
std::function<void(const UploadEvent&)> EventCallback(nb::object fn) {
  auto holder = std::make_shared<HeldCallable>();
  holder->fn = std::move(fn);
  return [holder](const UploadEvent& e) {
    nb::gil_scoped_acquire gil;
    try {
      nb::dict d;
      d["time"] = e.time;
      d["event"] = e.event;
      d["episode_index"] = e.episode_index;
      d["state"] = e.state;
      d["sent"] = e.sent;
      d["total"] = e.total;
      d["attempt"] = e.attempt;
      d["detail"] = e.detail;
      d["rule"] = e.rule;
      holder->fn(d);
    } catch (nb::python_error& err) {
      err.discard_as_unraisable("reel.upload events callback");
    }
  };
}

// One episode's result as `reel upload --json` prints it.
nb::dict OutcomeDict(const EpisodeUploadResult& one) {
  const Result<UploadOutcome>& r = one.outcome;
  nb::dict d;
  d["episode_index"] = one.episode_index;
  d["ok"] = r.ok();
  if (r.ok()) {
    d["session_id"] = r->session_id;
    d["already_present"] = r->already_present;
    d["attempts"] = r->attempts;
    d["resumable"] = r->resumable;
    d["deleted"] = r->deleted;
    d["bytes"] = r->bytes;
  } else {
    d["code"] = StatusCodeName(r.status().code());
    d["error"] = r.status().message();
    d["rule"] = r.status().rule();
  }
  return d;
}

void BindUpload(nb::module_& m) {
  nb::class_<UploadOptions>(m, "UploadOptions",
                            "reel::UploadOptions (include/reel/upload.h): `reel upload`. The progress "
                            "callback is upload()'s `progress` argument; the file system is not exposed.")
      .def(nb::init<>())
      .def_rw("server", &UploadOptions::server, "http(s)://host[:port] of the import server (CLI --server).")
      .def_rw("token", &UploadOptions::token, "Bearer token; \"\" = none (CLI --token).")
      .def_rw("username", &UploadOptions::username, "Log in with this user name (CLI --user).")
      .def_rw("password", &UploadOptions::password, "Password of `username` (CLI --password-file).")
      .def_rw("project_id", &UploadOptions::project_id, "Form field project_id (CLI --project-id).")
      .def_rw("name", &UploadOptions::name, "Form field name; \"\" = the task directory's name (CLI --name).")
      .def_rw("precompress", &UploadOptions::precompress, "RGB video to HEVC CRF 30 first (CLI --precompress).")
      .def_rw("max_attempts", &UploadOptions::max_attempts, "Attempts per episode (CLI --retries).")
      .def_rw("backoff_initial_s", &UploadOptions::backoff_initial_s, "First retry delay.")
      .def_rw("backoff_max_s", &UploadOptions::backoff_max_s, "Longest retry delay.")
      .def_rw("connect_timeout_s", &UploadOptions::connect_timeout_s, "Connect timeout.")
      .def_rw("io_timeout_s", &UploadOptions::io_timeout_s, "Per read/write on the socket.")
      .def_rw("resumable_threshold", &UploadOptions::resumable_threshold,
              "Slices above this many bytes use the resumable protocol (CLI --resumable-threshold).")
      .def_rw("chunk_bytes", &UploadOptions::chunk_bytes, "PATCH size of the resumable protocol (CLI --chunk).")
      .def_rw("ca_cert_path", &UploadOptions::ca_cert_path, "Extra CA bundle for https (CLI --ca-cert).");
  nb::enum_<DeleteAfter>(m, "DeleteAfter", "reel::DeleteAfter (include/reel/upload.h): CLI --delete-after.")
      .value("keep", DeleteAfter::kKeep)
      .value("confirmed", DeleteAfter::kConfirmed);
  nb::class_<OutboxOptions>(m, "OutboxOptions",
                            "reel::OutboxOptions (include/reel/upload.h): the durable part of `reel upload` "
                            "(the outbox); `upload` holds the UploadOptions.")
      .def(nb::init<>())
      .def_rw("upload", &OutboxOptions::upload, "The UploadOptions (server, credentials, ...).")
      .def_rw("watch", &OutboxOptions::watch, "Keep running and upload episodes as they are committed (CLI --watch).")
      .def_rw("rescan_s", &OutboxOptions::rescan_s, "With watch: list the task at least this often (CLI --rescan).")
      .def_rw("parallel", &OutboxOptions::parallel, "Episodes sent at once, smallest first (CLI --parallel).")
      .def_rw("delete_after", &OutboxOptions::delete_after, "keep or confirmed (CLI --delete-after).")
      .def_rw("min_free_bytes", &OutboxOptions::min_free_bytes,
              "Delete confirmed episodes oldest-first below this much free space (CLI --min-free).")
      .def_rw("bwlimit_bytes_per_s", &OutboxOptions::bwlimit_bytes_per_s, "CLI --bwlimit; 0 = none.")
      .def_rw("bwlimit_recording_bytes_per_s", &OutboxOptions::bwlimit_recording_bytes_per_s,
              "CLI --bwlimit-recording; 0 = --bwlimit.")
      .def_rw("backoff_initial_s", &OutboxOptions::backoff_initial_s, "First retry delay (full jitter).")
      .def_rw("backoff_max_s", &OutboxOptions::backoff_max_s, "Longest retry delay.");
  m.def(
      "drain_outbox",
      [](const std::string& task, std::vector<int64_t> episodes, const OutboxOptions& options,
         nb::object progress, nb::object events) {
        OutboxOptions o = options;
        if (!progress.is_none()) o.upload.progress = ProgressCallback(std::move(progress));
        if (!events.is_none()) o.events = EventCallback(std::move(events));
        // Ctrl-C reaches Python only through PyErr_CheckSignals, which works in the main
        // thread alone: the outbox runs on its own thread while this one polls for signals
        // and, on one, asks the uploader to stop and waits for it.
        auto interrupted = std::make_shared<std::atomic<bool>>(false);
        o.should_stop = [interrupted] { return interrupted->load(); };
        auto run = std::async(std::launch::async, [&] { return DrainOutbox(task, episodes, o); });
        for (;;) {
          {
            nb::gil_scoped_release release;
            if (run.wait_for(std::chrono::milliseconds(200)) == std::future_status::ready) break;
          }
          if (!interrupted->load() && PyErr_CheckSignals() != 0) interrupted->store(true);
        }
        Result<std::vector<EpisodeUploadResult>> results = run.get();
        o.upload.progress = nullptr;  // drops the callables while the GIL is held
        o.events = nullptr;
        o.should_stop = nullptr;
        if (interrupted->load()) throw nb::python_error();  // the signal's exception, pending
        if (!results.ok()) RaiseStatus(results.status());
        nb::list out;
        for (const EpisodeUploadResult& r : *results) out.append(OutcomeDict(r));
        return out;
      },
      "task"_a, "episodes"_a, "options"_a, "progress"_a = nb::none(), "events"_a = nb::none(),
      "Runs the task's upload outbox (`reel upload`): episodes N (every one with data when empty); one "
      "dict per episode as in `reel upload --json`. `progress(episode_index, sent, total, attempt)` and "
      "`events(dict)` are called with the GIL (an exception they raise is reported as unraisable).");
  m.def(
      "upload_status",
      [](const std::string& task) {
        auto st = ReadOutboxStatus(task);
        if (!st.ok()) RaiseStatus(st.status());
        nb::list jobs;
        for (const OutboxEntry& e : st->entries) {
          nb::dict d;
          d["server"] = e.server;
          d["project"] = e.project;
          d["episode_index"] = e.episode_index;
          d["state"] = e.state;
          d["digest"] = e.digest;
          d["bytes"] = e.bytes;
          d["zip_bytes"] = e.zip_bytes;
          d["sent"] = e.sent;
          d["attempts"] = e.attempts;
          d["last_error"] = e.last_error;
          d["rule"] = e.rule;
          d["session_id"] = e.session_id;
          d["age_s"] = e.age_s;
          d["next_try_in_s"] = e.next_try_in_s;
          jobs.append(d);
        }
        nb::dict counters;
        for (const auto& [name, value] : st->counters) counters[name.c_str()] = value;
        nb::dict out;
        out["jobs"] = jobs;
        out["counters"] = counters;
        return out;
      },
      "task"_a, "The task's upload outbox as `reel upload --status --json` prints it.");
}

void BindSimulate(nb::module_& m) {
  nb::class_<SimulateOptions>(m, "SimulateOptions", "reel::SimulateOptions (include/reel/simulate.h): `reel simulate`.")
      .def(nb::init<>())
      .def_rw("seconds", &SimulateOptions::seconds, "Seconds per episode (CLI --seconds).")
      .def_rw("fps", &SimulateOptions::fps, "Frame rate (CLI --fps).")
      .def_rw("tier", &SimulateOptions::tier, "Force-matrix tier of the left matrices (CLI --tier).")
      .def_rw("seed", &SimulateOptions::seed, "Random seed (CLI --seed).")
      .def_rw("video", &SimulateOptions::video, "Record video streams (CLI --no-video).")
      .def_rw("video_width", &SimulateOptions::video_width, "Every slot's width (CLI --video-size).")
      .def_rw("video_height", &SimulateOptions::video_height, "Every slot's height (CLI --video-size).");
  m.def(
      "simulate",
      [](const std::string& task, int64_t episodes, const SimulateOptions& options) {
        std::vector<std::pair<int64_t, int64_t>> done = Released([&]() -> Result<std::vector<std::pair<int64_t, int64_t>>> {
          REEL_ASSIGN_OR_RETURN(auto writer, TaskWriter::Open(task, SimulatedRigOptions(TaskDirName(task), options)));
          std::vector<std::pair<int64_t, int64_t>> out;
          for (int64_t k = 0; k < episodes; ++k) {
            REEL_ASSIGN_OR_RETURN(auto episode, writer->BeginEpisode());
            REEL_RETURN_IF_ERROR(SimulateEpisode(*episode, options, episode->episode_index()));
            const int64_t n = episode->episode_index(), rows = episode->rows();
            REEL_RETURN_IF_ERROR(episode->Commit().status());
            out.emplace_back(n, rows);
          }
          return out;
        });
        nb::list list;
        for (const auto& [n, rows] : done) {
          nb::dict d;
          d["episode_index"] = n;
          d["length"] = rows;
          d["committed"] = true;
          list.append(d);
        }
        nb::dict d;
        d["episodes"] = list;
        return d;
      },
      "task"_a, "episodes"_a, "options"_a,
      "Records `episodes` episodes of the simulated rig into the task (created if missing); "
      "the report `reel simulate --json` prints.");
}

}  // namespace

void BindPush(nb::module_& m) {
  nb::class_<PushOptions>(m, "PushOptions", "reel::PushOptions (include/reel/push.h): `reel push`.")
      .def(nb::init<>())
      .def_rw("dry_run", &PushOptions::dry_run, "Say what would be sent; send nothing (CLI --dry-run).")
      .def_rw("episodes", &PushOptions::episodes,
              "Push only these episode numbers; empty = every episode (CLI --episodes).")
      .def_rw("verify", &PushOptions::verify,
              "Compare files already at the destination byte for byte, not by size (CLI --verify).")
      .def_rw("lock_lease_s", &PushOptions::lock_lease_s,
              "Seconds the push lock stays valid without renewal (CLI --lock-lease).");
  m.def(
      "push",
      [](const std::string& task, const std::string& destination, const PushOptions& options,
         const ObjectStoreOptions& storage) {
        OpenedLocation dest = Unwrap(Locate(destination, storage));
        PushReport r = Released([&] { return PushTask(task, dest.fs.get(), dest.root, options); });
        nb::dict d;
        d["episodes"] = r.episodes;
        d["sent"] = nb::cast(r.sent);
        d["resumed"] = nb::cast(r.resumed);
        d["present"] = r.present;
        d["files_sent"] = r.files_sent;
        d["bytes_sent"] = r.bytes_sent;
        d["task_files_sent"] = nb::cast(r.task_files_sent);
        d["dry_run"] = r.dry_run;
        return d;
      },
      "task"_a, "destination"_a, "options"_a, "storage"_a,
      "Mirrors a local task to a URI or directory (docs/storage.md); the report `reel push --json` prints.");
}

void BindSplitEpisodes(nb::module_& m) {
  m.def(
      "split_episodes",
      [](const std::string& task, bool dry_run) {
        SplitEpisodesOptions o;
        o.dry_run = dry_run;
        SplitEpisodesReport r = Released([&] { return SplitEpisodes(task, o); });
        nb::list shards;
        for (const SplitShard& s : r.shards) {
          nb::dict sd;
          sd["shard"] = s.shard;
          sd["split"] = nb::cast(s.split);
          sd["kept"] = nb::cast(s.kept);
          sd["files"] = StringList(s.files);
          shards.append(sd);
        }
        nb::dict d;
        d["task"] = task;
        d["dry_run"] = r.dry_run;
        d["episodes_split"] = r.episodes_split;
        d["episodes_kept"] = r.episodes_kept;
        d["shards"] = shards;
        return d;
      },
      "task"_a, "dry_run"_a = false,
      "Splits legacy multi-row episodes shards into one file per episode (docs/maintenance.md); "
      "the report `reel split-episodes --json` prints.");
}

void BindOps(nb::module_& m) {
  nb::class_<CheckOptions>(m, "CheckOptions", "reel::CheckOptions (include/reel/check.h): `reel check`.")
      .def(nb::init<>())
      .def_rw("io_threads", &CheckOptions::io_threads, "I/O threads; 0 = all cores (CLI --threads).")
      .def_rw("recursive", &CheckOptions::recursive,
              "Look for tasks in nested folders too, never through symbolic links (CLI --recursive).")
      .def_rw("max_depth", &CheckOptions::max_depth, "Levels below the folder searched when recursive (CLI --max-depth).")
      .def_rw("deep", &CheckOptions::deep,
              "Read force-matrix columns whole through Arrow instead of counting cells from their "
              "levels (CLI --deep); same findings.")
      .def_rw("episodes", &CheckOptions::episodes,
              "Check only these episodes (N) and the task-level files, none of the walks over the whole "
              "task (CLI --episodes); empty = every episode.");
  BindExport(m);
  BindImport(m);
  BindPack(m);
  BindPush(m);
  BindUpload(m);
  BindSimulate(m);
  BindSplitEpisodes(m);
  BindServe(m);
}

}  // namespace py
}  // namespace reel
