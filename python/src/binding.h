// Shared by the binding files of reel._core: the Status -> exception table and
// numpy allocation. Only the binding layer includes this.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <memory>
#include <string>
#include <utility>

#include "reel/object_store.h"
#include "reel/status.h"

namespace arrow {
class RecordBatchReader;
}

namespace reel {

class Task;

namespace py {

namespace nb = nanobind;

// Raises the reel._errors class of `st.code()` with st.message(). The one table.
[[noreturn]] void RaiseStatus(const Status& st);

// The value a Result declared before a GIL-released block holds until the block assigns
// it: an error, since a Result is a value or an error (reel/status.h aborts on an OK one).
inline Status NotRunYet() { return Status::IOError("internal: the library call did not run"); }

template <typename T>
T Unwrap(Result<T> r) {
  if (!r.ok()) RaiseStatus(r.status());
  return std::move(r).value();
}

// A new uninitialised numpy array (numpy.empty): numpy owns the memory and its
// allocator asks for huge pages on large arrays. Call with the GIL held.
nb::object NumpyEmpty(nb::tuple shape, const char* dtype);

// Indices / times as handed over by the Python layer (int64 / float64, 1-D, contiguous).
using IndexArray = nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using TimeArray = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

// arrow_ext.cc: `reader` exported as an "arrow_array_stream" PyCapsule (the
// Arrow C stream interface; batches handed over, not copied). GIL held.
nb::object StreamCapsule(std::shared_ptr<arrow::RecordBatchReader> reader);
// arrow_ext.cc: Task.data_stream / Task.episodes_stream, tables as Arrow C stream capsules.
void BindArrow(nb::class_<Task>& task);
// samples_ext.cc: Task.imu / Task.slam (decode.h into numpy).
void BindSamples(nb::module_& m, nb::class_<Task>& task);
// writer_ext.cc: reel._core.TaskWriter and EpisodeWriter (the recorder).
void BindWriter(nb::module_& m);
// foreign_ext.cc: reel._core.ForeignDataset (LeRobot v2.x/v3.x, bundles) and is_foreign.
void BindForeign(nb::module_& m);
// ops_ext.cc: the CLI's options structs (ExportOptions, ImportOptions, PackOptions,
// UploadOptions, CheckOptions, SimulateOptions) and export/import/pack/upload/simulate.
void BindOps(nb::module_& m);
// maint_stats_ext.cc: reel._core.rebuild_stats and repair_scale (reel/maintenance.h).
void BindMaintStats(nb::module_& m);
// keypoints_ext.cc: Task.keypoints_tables (reel/keypoints.h), and reel._core.backfill_hand_pose
// and add_columns (reel/maintenance.h).
void BindKeypoints(nb::class_<Task>& task);
void BindKeypointsMaint(nb::module_& m);
// maint_ext.cc: reel._core.migrate (include/reel/maintenance.h).
void BindMaintenance(nb::module_& m);
// serve_ext.cc: reel._core.ServeConfig, ServerThread, sha256_hex, hash_password (serve.h).
void BindServe(nb::module_& m);
// store_ext.cc: reel._core.StorageOptions, read_file, object_store_counters. Bind first:
// other functions take a StorageOptions default.
void BindStore(nb::module_& m);
// A job's report (ToJson of reel/jobs.h) as the Python value `reel <command> --json`
// prints (json.loads of it). GIL held.
nb::object ReportDict(const std::string& report_json);
// OpenLocation with the GIL released.
Result<OpenedLocation> Locate(const std::string& path_or_uri, const ObjectStoreOptions& options);
// video_ext.cc: reel._core.VideoReader and reel._core.encode_rgb.
void BindVideo(nb::module_& m);
// Task.frames: rows of an episode's video for `slot`; RGB uint8 (n, H, W, 3) or
// depth uint16 millimetres (n, H, W), decided by the file.
nb::object TaskFrames(const Task& task, int64_t episode_index, const std::string& slot,
                      IndexArray rows);

}  // namespace py
}  // namespace reel
