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

#include <type_traits>

#include "binding.h"
#include "released.h"
#include "reel/jobs.h"
#include "reel/task.h"

namespace reel {
namespace py {

using namespace nb::literals;

namespace {

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
        return ReportDict(ToJson(Released([&] { return ExportJob(task, out_dir, options, storage); })));
      },
      "task"_a, "out_dir"_a, "options"_a, "storage"_a = ObjectStoreOptions(),
      "Exports the pooled task (a path or URI) to `out_dir` (a path or URI; must not exist unless "
      "replace_existing), `storage` reaching both (reel/jobs.h ExportJob); the report `reel export --json` prints.");
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
        return ReportDict(ToJson(Released([&] { return ImportJob(source, task, options, storage); })));
      },
      "source"_a, "task"_a, "options"_a, "storage"_a = ObjectStoreOptions(),
      "Imports a LeRobot or bundle dataset into the pooled task (a directory, or a URI: a staged change "
      "published with the push protocol; reel/jobs.h ImportJob); the report `reel import --json` prints.");
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
        return ReportDict(ToJson(Released([&] { return PackJob(task, n, zip_path, options, storage); })));
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
      holder->fn(ReportDict(ToJson(e)));
    } catch (nb::python_error& err) {
      err.discard_as_unraisable("reel.upload events callback");
    }
  };
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
        return ReportDict(ToJson(*results));
      },
      "task"_a, "episodes"_a, "options"_a, "progress"_a = nb::none(), "events"_a = nb::none(),
      "Runs the task's upload outbox (`reel upload`): episodes N (every one with data when empty); the "
      "report `reel upload --json` prints, {episodes, all_landed}. `progress(episode_index, sent, total, attempt)` and "
      "`events(dict)` are called with the GIL (an exception they raise is reported as unraisable).");
  m.def(
      "upload_status",
      [](const std::string& task) { return ReportDict(ToJson(Released([&] { return ReadOutboxStatus(task); }))); },
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
      [](const std::string& task, int64_t count, const SimulateOptions& rig, int64_t episode_index, bool replace,
         bool abort_last, bool profile) {
        SimulateTaskOptions o;
        o.count = count;
        o.rig = rig;
        o.episode_index = episode_index;
        o.replace = replace;
        o.abort_last = abort_last;
        o.profile = profile;
        return ReportDict(ToJson(Released([&] { return SimulateTask(task, o); })));
      },
      "task"_a, "count"_a, "options"_a, "episode_index"_a = 0, "replace"_a = false, "abort_last"_a = false,
      "profile"_a = false,
      "Records `count` episodes of the simulated rig into the task (created if missing; reel/simulate.h "
      "SimulateTask); the report `reel simulate --json` prints.");
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
        return ReportDict(ToJson(Released([&] { return PushJob(task, destination, options, storage); })));
      },
      "task"_a, "destination"_a, "options"_a, "storage"_a,
      "Mirrors a local task to a URI or directory (docs/storage.md); the report `reel push --json` prints.");
}

void BindDelete(nb::module_& m) {
  m.def(
      "delete_episodes",
      [](const std::string& task, const std::vector<int64_t>& episodes, bool dry_run) {
        return ReportDict(ToJson(Released([&] { return DeleteJob(task, episodes, dry_run); })));
      },
      "task"_a, "episodes"_a, "dry_run"_a = false,
      "reel/jobs.h DeleteJob: episodes' data and videos deleted (`reel delete`); the report `--json` prints.");
}

void BindSplitEpisodes(nb::module_& m) {
  m.def(
      "split_episodes",
      [](const std::string& task, bool dry_run) {
        SplitEpisodesOptions o;
        o.dry_run = dry_run;
        return ReportDict(ToJson(Released([&] { return SplitEpisodes(task, o); })));
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
  BindDelete(m);
  BindServe(m);
}

}  // namespace py
}  // namespace reel
