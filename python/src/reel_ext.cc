// reel._core: the binding layer. It converts types, releases the GIL around
// I/O and decoding, and maps Status codes to Python exceptions (one table,
// RaiseStatus). Nothing else lives here.
#include <arrow/api.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <thread>

#include "binding.h"
#include "released.h"
#include "reel/jobs.h"
#include "reel/decode.h"
#include "reel/file_group.h"
#include "reel/layout.h"
#include "reel/task.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace reel {
namespace py {

// Status -> the exception classes defined in reel/_errors.py.
void RaiseStatus(const Status& st) {
  const char* cls = "Error";
  switch (st.code()) {
    case StatusCode::kNotFound: cls = "NotFoundError"; break;
    case StatusCode::kInvalid: cls = "InvalidError"; break;
    case StatusCode::kCorruption: cls = "CorruptionError"; break;
    case StatusCode::kPermissionDenied: cls = "PermissionDeniedError"; break;
    case StatusCode::kIOError: cls = "IOError"; break;
    case StatusCode::kNotSupported: cls = "NotSupportedError"; break;
    case StatusCode::kAlreadyExists: cls = "AlreadyExistsError"; break;
    case StatusCode::kOk: break;
  }
  nb::object type = nb::module_::import_("reel._errors").attr(cls);
  PyErr_SetString(type.ptr(), st.message().c_str());
  throw nb::python_error();
}

nb::object NumpyEmpty(nb::tuple shape, const char* dtype) {
  return nb::module_::import_("numpy").attr("empty")(shape, dtype);
}

nb::object ReportDict(const std::string& report_json) {
  // json.loads, looked up once: a reference kept for the life of the process and never
  // dropped (dropping it at exit would run after the interpreter is gone).
  static nb::handle loads = nb::object(nb::module_::import_("json").attr("loads")).release();
  return loads(nb::str(report_json.data(), report_json.size()));
}

namespace {

// Builds the dicts of Task.episodes(). At 100,000 episodes the Python objects are most of
// the cost, so the keys are made once and the column names once per distinct schema (most
// episodes share one); every dict still gets lists of its own.
class EpisodeDicts {
 public:
  nb::dict Make(const Task& task, const EpisodeEntry& e, const Result<EpisodeRow>& row,
                const Result<std::shared_ptr<arrow::Schema>>& schema) {
    nb::dict d;
    d[k_.episode_index] = e.episode_index;
    d[k_.chunk] = e.location.chunk;
    d[k_.file] = e.location.file;
    d[k_.length] = row.ok() ? nb::cast(row->length) : nb::none();
    d[k_.duration_sec] = row.ok() ? nb::cast(row->duration_sec) : nb::none();
    d[k_.has_data] = !e.data_path.empty();
    const FileGroup group = EpisodeFileGroup(task, e, row.ok() ? &*row : nullptr);
    d[k_.file_group] = Interned(FileGroupStateName(group.state));
    nb::list missing;
    for (const std::string& rel : group.missing) missing.append(rel);
    d[k_.missing_files] = missing;
    d[k_.row_source] = RowSourceName(e.row_source);
    nb::dict videos;
    for (const auto& [slot, path] : e.videos) videos[Interned(slot)] = path;
    d[k_.videos] = videos;
    d[k_.columns] = schema.ok() ? nb::list(Columns(*schema)) : nb::list();
    return d;
  }

 private:
  struct Keys {
    nb::str episode_index{"episode_index"}, chunk{"chunk"}, file{"file"}, length{"length"},
        duration_sec{"duration_sec"}, has_data{"has_data"}, file_group{"file_group"},
        missing_files{"missing_files"}, row_source{"row_source"}, videos{"videos"}, columns{"columns"};
  };
  const nb::tuple& Columns(const std::shared_ptr<arrow::Schema>& schema) {
    auto it = columns_.find(schema.get());
    if (it != columns_.end()) return it->second.second;
    nb::list names;
    for (const auto& f : schema->fields()) names.append(Interned(f->name()));
    // The schema is kept alive with its names so that its address is not reused.
    return columns_.emplace(schema.get(), std::make_pair(schema, nb::tuple(names))).first->second.second;
  }
  const nb::str& Interned(const std::string& text) {
    auto it = strings_.find(text);
    if (it == strings_.end()) it = strings_.emplace(text, nb::str(text.c_str(), text.size())).first;
    return it->second;
  }

  Keys k_;
  std::map<const arrow::Schema*, std::pair<std::shared_ptr<arrow::Schema>, nb::tuple>> columns_;
  std::map<std::string, nb::str> strings_;
};

// Task.episodes(episodes=None): every episode (one listing), or the N asked for, each found
// by Task::FindEpisode, so that a report or view of one episode costs that episode, not the
// task (issue 31's growth benchmark: 1.4x from 1,000 to 10,000 episodes).
nb::list EpisodesOf(const Task& t, std::optional<std::vector<int64_t>> only) {
  std::vector<EpisodeEntry> eps;
  nb::list out;
  EpisodeDicts dicts;
  Status st;
  {
    nb::gil_scoped_release release;
    st = [&]() -> Status {
      if (!only) {
        REEL_ASSIGN_OR_RETURN(eps, t.ListEpisodes());
      } else {
        for (int64_t n : *only) {
          REEL_ASSIGN_OR_RETURN(EpisodeEntry e, t.FindEpisode(n));
          eps.push_back(std::move(e));
        }
      }
      // A batch at a time, the GIL held only to make the batch's dicts.
      return t.VisitRowsAndSchemas(eps, {"length", "duration_sec", "video_codec"},
                                   [&](size_t first, auto rows, auto schemas) {
                                     nb::gil_scoped_acquire acquire;
                                     for (size_t j = 0; j < rows.size(); ++j)
                                       out.append(dicts.Make(t, eps[first + j], rows[j], schemas[j]));
                                     return Status::OK();
                                   });
    }();
  }
  if (!st.ok()) RaiseStatus(st);
  return out;
}

// CheckJob of a path or URI: the report `reel check --json` prints.
nb::object Check(const std::string& path, const CheckOptions& options, const ObjectStoreOptions& storage) {
  return ReportDict(ToJson(Released([&] { return CheckJob(path, options, storage); })));
}

using ForceMatrixArray = nb::ndarray<nb::numpy, float, nb::shape<250, 250, 3>>;

// The decoded (250, 250, 3) float32 frame at `row` of `column`, with the
// episode's own scale (episodes row -> info.json -> 1); None when the row holds no
// sample (a sparse column's [] cell is data, not a missing file).
std::optional<ForceMatrixArray> ForceMatrix(const Task& task, int64_t n, int64_t row, const std::string& column) {
  auto* out = new float[kForceMatrixValues];
  nb::capsule owner(out, [](void* p) noexcept { delete[] static_cast<float*>(p); });
  Status st;
  bool present = false;
  {
    nb::gil_scoped_release release;
    st = [&]() -> Status {
      REEL_ASSIGN_OR_RETURN(EpisodeEntry e, task.FindEpisode(n));
      // The one row's pages only (Task::ReadDataRows), not the column: a loop over rows stays linear.
      REEL_ASSIGN_OR_RETURN(auto cell, task.ReadDataRows(e, column, {row}));
      auto rows = task.ReadEpisodeRow(e);
      EpisodeRow defaults;
      defaults.episode_index = n;
      const auto& type = static_cast<const arrow::ListType&>(*cell->type());
      const std::string dtype = type.value_type()->id() == arrow::Type::INT16 ? "int16" : "float32";
      REEL_ASSIGN_OR_RETURN(auto spec, ResolveForceMatrixSpec(column, rows.ok() ? *rows : defaults,
                                                              task.info(), dtype));
      auto decoded = DecodeForceMatrixCell(arrow::ChunkedArray(cell), 0, spec.spec, out);
      if (!decoded.ok())
        return decoded.status().WithContext(task.Path(e.data_path) + ": column \"" + column + "\"");
      present = *decoded;
      return Status::OK();
    }();
  }
  if (!st.ok()) RaiseStatus(st);
  if (!present) return std::nullopt;
  return ForceMatrixArray(out, {250, 250, 3}, owner);
}

using EncodedFrames = nb::ndarray<const int16_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using FloatBuffer = nb::ndarray<float, nb::c_contig, nb::device::cpu>;

// Threads for one bulk decode: the cores, at most 8 (a few cores already saturate the
// memory bus on this write-bound loop; more only add thread starts).
int DecodeThreads() {
  static const int threads = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  return threads;
}

// Bulk row_diff_quantized decode of k frames (k, 187500) int16 -> (k, 250, 250, 3) float32.
// The output is allocated by numpy (whose allocator asks for huge pages on large
// arrays), so page faults do not dominate the decode.
nb::object DecodeRowDiffFrames(EncodedFrames encoded, double scale) {
  if (encoded.shape(1) != static_cast<size_t>(kForceMatrixValues))
    RaiseStatus(Status::Invalid("encoded frames must have 187500 values per row, got " +
                                std::to_string(encoded.shape(1))));
  if (!(scale > 0)) RaiseStatus(Status::Invalid("scale must be positive"));
  const size_t k = encoded.shape(0);
  nb::object result = NumpyEmpty(nb::make_tuple(k, 250, 250, 3), "float32");
  float* out = nb::cast<FloatBuffer>(result).data();
  {
    nb::gil_scoped_release release;
    DecodeRowDiffQuantizedFrames(encoded.data(), static_cast<int64_t>(k), scale, out,
                                 DecodeThreads());
  }
  return result;
}

// reel::SlotBase and reel::AllocateSlotNames (reel/layout.h), the collector's slot naming.
void BindSlotNames(nb::module_& m) {
  m.def(
      "slot_base", [](const std::string& name, const std::string& fallback) { return SlotBase(name, fallback); },
      "name"_a, "fallback"_a = "camera",
        "The reference collector's slot_base(): runs of characters other than ASCII letters, digits, "
        "'_' and CJK ideographs become one '_', '_' trimmed at both ends, case kept; `fallback` when "
        "nothing is left (multi-device §2.4).");
  m.def(
      "allocate_slot_names",
      [](const std::string& user_name, const std::string& model_name, const std::vector<std::string>& occupied) {
        AllocatedSlots a = AllocateSlotNames(user_name, model_name, occupied);
        return std::make_pair(a.rgb, a.depth);
      },
      "user_name"_a, "model_name"_a = "", "occupied_rgb_slots"_a = std::vector<std::string>(),
      "The (rgb, depth) slot names the reference collector gives a new RealSense device "
      "(allocate_slot_names, multi-device §4.3): prefix slot_base(user_name) or the model's 'd4xx', "
      "'_n' after both for the n-th device of a prefix.");
}

void BindDetectFormat(nb::module_& m) {
  m.def(
      "detect_format",
      [](const std::string& path, const ObjectStoreOptions& storage) {
        OpenedLocation loc = Unwrap(Locate(path, storage));
        auto f = Unwrap(DetectFormat(loc.fs.get(), loc.root));
        nb::dict d;
        d["format"] = DatasetFormatName(f.format);
        d["version"] = f.version;
        d["evidence"] = f.evidence;
        return d;
      },
      "path"_a, "storage"_a = ObjectStoreOptions(),
      "Detects the dataset format of `path` (a path or URI) from meta/info.json or manifest.json.");
}

// A slot's own frame rate (reel/metadata.h InfoJson::SlotFps, SlotFrameOfRow).
void BindSlotClock(nb::class_<Task>& task) {
  task.def("slot_fps", [](const Task& t, const std::string& slot) { return t.info().SlotFps(slot); }, "slot"_a,
           "The frame rate of `slot`: cameras[slot].fps, a depth slot's device's first camera's, or the task's.");
  task.def(
      "slot_frames",
      [](const Task& t, const std::string& slot, IndexArray rows) {
        const double task_fps = t.info().fps, fps = t.info().SlotFps(slot);
        std::vector<int64_t> out(rows.data(), rows.data() + rows.shape(0));
        for (int64_t& row : out) row = SlotFrameOfRow(row, task_fps, fps);
        return out;
      },
      "slot"_a, "rows"_a,
      "The frame of `slot` each of `rows` shows (SlotFrameOfRow, not clamped): the row itself at the "
      "task's rate.");
}

}  // namespace
}  // namespace py
}  // namespace reel

NB_MODULE(_core, m) {
  using namespace reel;
  using namespace reel::py;
  m.doc() = "reel's C++ core (pooled_episodes_v1 reader, checker, video decoding)";
  m.attr("__version__") = REEL_VERSION;

  BindStore(m);  // StorageOptions first: it is a default argument below
  BindDetectFormat(m);
  BindSlotNames(m);
  m.def("decode_row_diff_frames", &DecodeRowDiffFrames, "encoded"_a, "scale"_a,
        "Decodes k row_diff_quantized force matrices (k, 187500) int16 into (k, 250, 250, 3) "
        "float32: int32 cumulative sum per row of 750, int16 wrap, then / scale.");

  BindMaintenance(m);
  BindOps(m);  // CheckOptions first: check's default argument is one
  m.def(
      "info_summary",
      [](const std::string& path, const ObjectStoreOptions& storage) {
        return ReportDict(Released([&] { return InfoJob(path, storage); }));
      },
      "path"_a, "storage"_a = ObjectStoreOptions(), "reel/jobs.h InfoJob: the document `reel info --json` prints.");
  m.def(
      "show_episode",
      [](const std::string& path, int64_t n, const std::string& keypoints, const ObjectStoreOptions& storage) {
        return ReportDict(Released([&] { return ShowJob(path, n, keypoints, storage); }));
      },
      "path"_a, "episode_index"_a, "keypoints"_a = "", "storage"_a = ObjectStoreOptions(),
      "reel/jobs.h ShowJob: the document `reel show N --json` prints.");
  m.def(
      "stats_summary",
      [](const std::string& path, const ObjectStoreOptions& storage) {
        return ReportDict(Released([&] { return StatsJob(path, storage); }));
      },
      "path"_a, "storage"_a = ObjectStoreOptions(), "reel/jobs.h StatsJob: the document `reel stats --json` prints.");
  m.def("check", &Check, "path"_a, "options"_a = CheckOptions(), "storage"_a = ObjectStoreOptions(),
        "Checks a task or a folder of tasks (a path or URI; reel/jobs.h CheckJob); the report `reel check "
        "--json` prints.");

  nb::class_<Task> task_cls(m, "Task", "A pooled_episodes_v1 task opened for reading.");
  task_cls
      .def_static(
          "open",
          [](const std::string& path, const ObjectStoreOptions& storage, const std::string& episode_index) {
            static const std::map<std::string, EpisodeIndexMode> modes = {
                {"update", EpisodeIndexMode::kUpdate}, {"read", EpisodeIndexMode::kRead}, {"off", EpisodeIndexMode::kOff}};
            auto mode = modes.find(episode_index);
            if (mode == modes.end())
              RaiseStatus(Status::Invalid("episode_index must be \"update\", \"read\" or \"off\", not \"" +
                                          episode_index + "\""));
            Result<std::unique_ptr<Task>> t = NotRunYet();
            {
              nb::gil_scoped_release release;
              t = [&]() -> Result<std::unique_ptr<Task>> {
                REEL_ASSIGN_OR_RETURN(OpenedLocation loc, OpenLocation(path, storage));
                TaskOptions options;
                options.fs = loc.fs.get();  // lives until process exit (object_store.h)
                options.episode_index = mode->second;
                return Task::Open(loc.root, options);
              }();
            }
            return Unwrap(std::move(t));
          },
          "path"_a, "storage"_a = ObjectStoreOptions(), "episode_index"_a = "update",
          "Opens a task at a path or URI (s3://bucket/path; `storage` says how to reach it); "
          "episode_index: \"update\", \"read\" or \"off\" (TaskOptions::episode_index).")
      .def(
          "read_file",
          [](const Task& t, const std::string& relative) -> nb::object {
            Result<std::string> bytes = NotRunYet();
            {
              nb::gil_scoped_release release;
              bytes = t.fs()->ReadFile(t.Path(relative));
            }
            if (!bytes.ok() && bytes.status().code() == StatusCode::kNotFound) return nb::none();
            const std::string& b = Unwrap(std::move(bytes));
            return nb::bytes(b.data(), b.size());
          },
          "relative"_a, "A file of the task (path relative to its root) as bytes; None when missing.")
      .def_prop_ro("root", &Task::root)
      .def("info_json", [](const Task& t) { return Unwrap(SerializeInfoJson(t.info())); },
           "info.json as reel models it (unknown keys kept), as JSON text.")
      .def("episodes", &EpisodesOf, "episodes"_a = nb::none(),
           "Every episode, sorted by N, as dicts (the fields of `reel ls --json`); with `episodes`, "
           "only those N in the order given, each found without listing the task (NotFound for one "
           "the task does not hold).")
      .def("force_matrix", &ForceMatrix, "episode_index"_a, "row"_a, "column"_a,
           "Decoded force matrix (250, 250, 3) float32 in mN, with the episode's own scale; None "
           "when the row holds no sample.")
      .def("frames", &TaskFrames, "episode_index"_a, "slot"_a, "rows"_a,
           "Frames shown at `rows` (int64, any order, repeats allowed) of episode N's video for "
           "`slot`: RGB uint8 (n, H, W, 3), or depth uint16 millimetres (n, H, W) for a depth stream.")
;
  BindArrow(task_cls);
  BindSlotClock(task_cls);
  BindSamples(m, task_cls);
  BindKeypoints(task_cls);

  BindVideo(m);
  BindWriter(m);
  BindForeign(m);
  BindMaintStats(m);
  BindKeypointsMaint(m);
}
