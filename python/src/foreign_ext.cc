// reel._core.ForeignDataset: LeRobot v2.x / v3.x and bundle datasets
// (reel/dataset.h) for Python. Type conversion only: the episode index as
// dicts, an episode's rows as an Arrow C stream, decoded frames as numpy, the
// GIL released around every read, errors through RaiseStatus.
#include <arrow/api.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "binding.h"
#include "released.h"
#include "reel/dataset.h"
#include "reel/jobs.h"
#include "reel/layout.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace reel {
namespace py {
namespace {

using U8Buffer = nb::ndarray<uint8_t, nb::c_contig, nb::device::cpu>;

// The dataset plus its episode index, read once at the first call that needs
// it (ReadEpisodes stats every file it names; doing that per frame request
// would dominate small reads). A dataset changed on disk after that needs a new
// open. Safe to use from several Python threads: the index is built under
// `mu`, and ForeignDataset's const methods may run concurrently.
struct PyForeignDataset {
  std::unique_ptr<ForeignDataset> dataset;
  std::mutex mu;
  bool loaded = false;
  std::vector<ForeignEpisode> episodes;

  // Call without the GIL.
  Result<const std::vector<ForeignEpisode>*> Episodes() {
    std::lock_guard<std::mutex> lock(mu);
    if (!loaded) {
      REEL_ASSIGN_OR_RETURN(episodes, dataset->ReadEpisodes());
      loaded = true;
    }
    return &episodes;
  }

  // Episode `n`, or NotFound naming the range. Call without the GIL.
  Result<const ForeignEpisode*> Find(int64_t n) {
    REEL_ASSIGN_OR_RETURN(const std::vector<ForeignEpisode>* eps, Episodes());
    return FindForeignEpisode(*eps, n, dataset->root());
  }
};

// One episode as `reel ls --json` lists it (reel/jobs.h ToJson).
nb::object EpisodeDict(const ForeignEpisode& e) { return ReportDict(ToJson(e)); }

nb::dict InfoDict(const ForeignInfo& info) {
  nb::dict d;
  d["format"] = DatasetFormatName(info.format);
  d["version"] = info.version;
  d["fps"] = info.fps;
  d["robot_type"] = info.robot_type;
  d["name"] = info.name;
  d["total_episodes"] = info.total_episodes;
  d["total_frames"] = info.total_frames;
  d["chunks_size"] = info.chunks_size;
  d["data_path"] = info.data_path;
  d["video_path"] = info.video_path;
  nb::dict features;
  for (const auto& [name, f] : info.features) {
    nb::dict fd;
    fd["dtype"] = f.dtype;
    fd["shape"] = nb::cast(f.shape);
    features[name.c_str()] = fd;
  }
  d["features"] = features;
  d["video_keys"] = nb::cast(info.video_keys);
  d["tasks"] = nb::cast(info.tasks);
  return d;
}

// {key: uint8 (n, H, W, 3)}: rows `rows` of each camera in `keys`, decoded
// without the GIL into reel-owned buffers, then copied once into numpy arrays
// (the frame size is known only after the file is opened).
nb::dict FrameImages(PyForeignDataset& d, int64_t n, IndexArray rows, const std::vector<std::string>& keys) {
  const std::span<const int64_t> wanted(rows.data(), rows.shape(0));
  std::vector<VideoInfo> infos(keys.size());
  std::vector<std::vector<uint8_t>> frames(keys.size());
  Status st;
  {
    nb::gil_scoped_release release;
    st = [&]() -> Status {
      REEL_ASSIGN_OR_RETURN(const ForeignEpisode* e, d.Find(n));
      for (size_t k = 0; k < keys.size(); ++k)
        REEL_RETURN_IF_ERROR(d.dataset->ReadVideoRgb(*e, keys[k], wanted, &infos[k], &frames[k]));
      return Status::OK();
    }();
  }
  if (!st.ok()) RaiseStatus(st);
  nb::dict out;
  for (size_t k = 0; k < keys.size(); ++k) {
    nb::object a = NumpyEmpty(nb::make_tuple(wanted.size(), infos[k].height, infos[k].width, 3), "uint8");
    if (!frames[k].empty()) std::memcpy(nb::cast<U8Buffer>(a).data(), frames[k].data(), frames[k].size());
    out[keys[k].c_str()] = a;
  }
  return out;
}

nb::dict OverlayDict(const OverlayInfo& o) {
  nb::dict d;
  d["name"] = o.name;
  d["kind"] = OverlayKindName(o.kind);
  d["columns"] = nb::cast(o.columns);
  d["episodes"] = nb::cast(o.episodes);
  return d;
}

// Overlays of bundle datasets (reel/dataset.h OverlayKind, reel/interop.h WriteOverlay).
void BindOverlays(nb::module_& m, nb::class_<PyForeignDataset>& dataset) {
  dataset
      .def(
          "overlays",
          [](PyForeignDataset& d) {
            Result<std::vector<OverlayInfo>> overlays = NotRunYet();
            {
              nb::gil_scoped_release release;
              overlays = d.dataset->ListOverlays();
            }
            nb::list out;
            for (const OverlayInfo& o : Unwrap(std::move(overlays))) out.append(OverlayDict(o));
            return out;
          },
          "Every overlay of a bundle dataset as dicts {name, kind, columns, episodes}.")
      .def(
          "overlay_stream",
          [](PyForeignDataset& d, const std::string& episode, const std::string& name) {
            Result<std::shared_ptr<arrow::Table>> table = NotRunYet();
            {
              nb::gil_scoped_release release;
              table = [&]() -> Result<std::shared_ptr<arrow::Table>> {
                REEL_ASSIGN_OR_RETURN(const std::vector<ForeignEpisode>* eps, d.Episodes());
                REEL_ASSIGN_OR_RETURN(const ForeignEpisode* e, FindBundleEpisode(*eps, episode, d.dataset->root()));
                return d.dataset->ReadOverlay(*e, name);
              }();
            }
            return StreamCapsule(std::make_shared<arrow::TableBatchReader>(Unwrap(std::move(table))));
          },
          "episode"_a, "name"_a,
          "Overlay `name` of one episode (a bundle id or a manifest position in decimal), checked, as an "
          "\"arrow_array_stream\" PyCapsule.");
  m.def(
      "write_overlay",
      [](const std::string& path, const std::string& name, const std::string& episode, const std::string& from,
         bool replace, bool dry_run, const ObjectStoreOptions& storage) {
        const OverlayWriteOptions o{.from = from, .replace = replace, .dry_run = dry_run};
        return ReportDict(ToJson(Released([&] { return WriteOverlayJob(path, name, episode, o, storage); })));
      },
      "path"_a, "name"_a, "episode"_a, "source"_a, "replace"_a = false, "dry_run"_a = false,
      "storage"_a = ObjectStoreOptions(), "reel/interop.h WriteOverlay; the report as a dict.");
}

}  // namespace

void BindForeign(nb::module_& m) {
  auto dataset = nb::class_<PyForeignDataset>(m, "ForeignDataset",
                               "A LeRobot v2.x / v3.x or bundle dataset opened read-only (reel/dataset.h).")
      .def_static(
          "open",
          [](const std::string& path, const ObjectStoreOptions& storage) {
            Result<std::unique_ptr<ForeignDataset>> opened = NotRunYet();
            {
              nb::gil_scoped_release release;
              opened = [&]() -> Result<std::unique_ptr<ForeignDataset>> {
                REEL_ASSIGN_OR_RETURN(OpenedLocation loc, OpenLocation(path, storage));
                ForeignOpenOptions options;
                options.fs = loc.fs.get();  // lives until process exit (object_store.h)
                return ForeignDataset::Open(loc.root, options);
              }();
            }
            auto d = std::make_unique<PyForeignDataset>();
            d->dataset = Unwrap(std::move(opened));
            return d;
          },
          "path"_a, "storage"_a = ObjectStoreOptions(),
          "Reads meta/info.json (or manifest.json) and the tasks (a path or URI). NotSupportedError for a pooled or "
          "v1.0 task and for unknown versions; InvalidError for malformed metadata.")
      .def_prop_ro("root", [](const PyForeignDataset& d) { return d.dataset->root(); })
      .def("info", [](const PyForeignDataset& d) { return InfoDict(d.dataset->info()); },
           "The dataset-level metadata reel reads (format, version, fps, features, video_keys, tasks, ...).")
      .def(
          "episodes",
          [](PyForeignDataset& d) {
            Result<const std::vector<ForeignEpisode>*> eps = NotRunYet();
            {
              nb::gil_scoped_release release;
              eps = d.Episodes();
            }
            nb::list out;
            for (const ForeignEpisode& e : *Unwrap(std::move(eps))) out.append(EpisodeDict(e));
            return out;
          },
          "Every episode in episode_index order, as dicts. The index is read and checked once, at "
          "the first call that needs it; a metadata rule violation raises.")
      .def(
          "data_stream",
          [](PyForeignDataset& d, int64_t n, const std::vector<std::string>& columns) {
            Result<std::shared_ptr<arrow::Table>> table = NotRunYet();
            {
              nb::gil_scoped_release release;
              table = [&]() -> Result<std::shared_ptr<arrow::Table>> {
                REEL_ASSIGN_OR_RETURN(const ForeignEpisode* e, d.Find(n));
                return d.dataset->ReadFrames(*e, columns);
              }();
            }
            return StreamCapsule(std::make_shared<arrow::TableBatchReader>(Unwrap(std::move(table))));
          },
          "episode_index"_a, "columns"_a,
          "Episode N's rows of its data file (projected to `columns`; empty = all) as an "
          "\"arrow_array_stream\" PyCapsule. The rows are read when this is called.")
      .def("frame_images", &FrameImages, "episode_index"_a, "rows"_a, "keys"_a,
           "Rows `rows` (int64, 0-based within the episode, any order, repeats allowed) of each "
           "video key: {key: uint8 (n, H, W, 3) RGB24}. LeRobot: the frame nearest to "
           "from_timestamp + timestamp within half a frame period; bundle: frame = row.");
  BindOverlays(m, dataset);
  m.def(
      "is_foreign",
      [](const std::string& path, const ObjectStoreOptions& storage) {
        nb::gil_scoped_release release;
        auto loc = OpenLocation(path, storage);
        if (!loc.ok()) return false;  // the pooled open reports it
        auto f = DetectFormat(loc->fs.get(), loc->root);
        return f.ok() && IsForeignFormat(f->format);
      },
      "path"_a, "storage"_a = ObjectStoreOptions(), "True when `path` is a dataset ForeignDataset reads (LeRobot v2.x/v3.x, bundle).");
}

}  // namespace py
}  // namespace reel
