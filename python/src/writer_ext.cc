// reel._core.TaskWriter / EpisodeWriter: the recorder (include/reel/recorder.h) for
// Python. Converts dicts and numpy arrays to TaskWriterOptions / FrameRow and releases
// the GIL around appends, pushes, commits and aborts. The context-manager behaviour
// (commit on success, abort on an exception) lives in the Python layer.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>

#include <initializer_list>

#include "binding.h"
#include "reel/recorder.h"

namespace reel {
namespace py {

using namespace nb::literals;

namespace {

template <typename T>
T Get(const nb::dict& d, const char* key, T fallback) {
  return d.contains(key) && !d[key].is_none() ? nb::cast<T>(d[key]) : fallback;
}

std::vector<std::string> Strings(nb::handle seq) {
  std::vector<std::string> out;
  for (nb::handle h : seq) out.push_back(nb::cast<std::string>(h));
  return out;
}

// A key of `d` that is not in `known` is a caller's typo: TypeError naming the known ones.
void RejectUnknown(const nb::dict& d, std::initializer_list<const char*> known, const char* what) {
  for (auto [k, v] : d) {
    const std::string key = nb::cast<std::string>(nb::str(k));
    bool ok = false;
    for (const char* name : known) ok = ok || key == name;
    if (ok) continue;
    std::string names;
    for (const char* name : known) names += (names.empty() ? "" : ", ") + std::string(name);
    throw nb::type_error((std::string(what) + ": unknown option '" + key + "' (known: " + names + ")").c_str());
  }
}

// The dict documented in reel.TaskWriter (python/reel/_writer.py).
TaskWriterOptions OptionsFrom(const nb::dict& d) {
  RejectUnknown(d, {"task_name", "fps", "app_version", "devices", "force_matrix_tiers", "slam_trajectories",
                    "progress_watermark", "row_group_rows", "row_group_bytes", "video"},
                "TaskWriter");
  TaskWriterOptions o;
  o.task_name = Get<std::string>(d, "task_name", "");
  o.fps = Get<double>(d, "fps", 30.0);
  o.app_version = Get<std::string>(d, "app_version", o.app_version);
  o.progress_watermark = Get<int64_t>(d, "progress_watermark", 0);
  o.row_group_rows = Get<int64_t>(d, "row_group_rows", o.row_group_rows);
  o.row_group_bytes = Get<int64_t>(d, "row_group_bytes", o.row_group_bytes);
  if (d.contains("devices"))
    for (nb::handle h : nb::cast<nb::list>(d["devices"])) {
      nb::dict dev = nb::cast<nb::dict>(h);
      RejectUnknown(dev, {"key", "kind", "name", "slots", "calibration_json", "sensor_column", "sensor_columns", "rig"},
                    "TaskWriter devices[]");
      o.devices.push_back({Get<std::string>(dev, "key", ""), Get<std::string>(dev, "kind", ""),
                           Get<std::string>(dev, "name", ""),
                           dev.contains("slots") ? Strings(dev["slots"]) : std::vector<std::string>{},
                           Get<std::string>(dev, "calibration_json", ""), Get<std::string>(dev, "sensor_column", ""),
                           dev.contains("sensor_columns") ? Strings(dev["sensor_columns"]) : std::vector<std::string>{},
                           Get<int64_t>(dev, "rig", 0)});
    }
  if (d.contains("force_matrix_tiers"))
    for (auto [k, v] : nb::cast<nb::dict>(d["force_matrix_tiers"]))
      o.force_matrix_tiers[nb::cast<std::string>(k)] = nb::cast<std::string>(v);
  if (d.contains("slam_trajectories"))
    for (nb::handle h : nb::cast<nb::list>(d["slam_trajectories"])) {
      nb::dict s = nb::cast<nb::dict>(h);
      RejectUnknown(s, {"column", "frame", "frame_axes_json", "time_json", "owner_json", "source_slot"},
                    "TaskWriter slam_trajectories[]");
      o.slam_trajectories.push_back({Get<std::string>(s, "column", ""), Get<std::string>(s, "frame", ""),
                                     Get<std::string>(s, "frame_axes_json", ""), Get<std::string>(s, "time_json", ""),
                                     Get<std::string>(s, "owner_json", ""), Get<std::string>(s, "source_slot", "")});
    }
  if (d.contains("video") && !d["video"].is_none()) {
    nb::dict v = nb::cast<nb::dict>(d["video"]);
    RejectUnknown(v, {"slots", "codec", "preset", "crf", "gop", "depth_ffv1", "keep_task_depth_codec", "depth_preset",
                      "queue_drop", "queue_frames"},
                  "TaskWriter video");
    if (v.contains("slots"))
      for (nb::handle h : nb::cast<nb::list>(v["slots"])) {
        nb::dict s = nb::cast<nb::dict>(h);
        RejectUnknown(s, {"slot", "width", "height", "depth", "master_slot", "fps"}, "TaskWriter video slots[]");
        o.video.slots.push_back({Get<std::string>(s, "slot", ""), Get<int>(s, "width", 0), Get<int>(s, "height", 0),
                                 Get<bool>(s, "depth", false), Get<std::string>(s, "master_slot", ""),
                                 Get<double>(s, "fps", 0.0)});
      }
    o.video.rgb.codec = Get<std::string>(v, "codec", o.video.rgb.codec);
    o.video.rgb.preset = Get<std::string>(v, "preset", o.video.rgb.preset);
    o.video.rgb.crf = Get<int>(v, "crf", o.video.rgb.crf);
    o.video.rgb.gop = Get<int>(v, "gop", o.video.rgb.gop);
    o.video.depth_ffv1 = Get<bool>(v, "depth_ffv1", false);
    o.video.keep_task_depth_codec = Get<bool>(v, "keep_task_depth_codec", o.video.keep_task_depth_codec);
    o.video.depth_preset = Get<std::string>(v, "depth_preset", o.video.depth_preset);
    o.video.queue_full = Get<bool>(v, "queue_drop", false) ? QueueFullPolicy::kDrop : QueueFullPolicy::kBlock;
    o.video.queue_frames = Get<int>(v, "queue_frames", o.video.queue_frames);
  }
  return o;
}

using F32 = nb::ndarray<const float, nb::c_contig, nb::device::cpu>;
using F64 = nb::ndarray<const double, nb::c_contig, nb::device::cpu>;
using I64 = nb::ndarray<const int64_t, nb::c_contig, nb::device::cpu>;

std::vector<float> Floats(nb::handle h) {
  F32 a = nb::cast<F32>(h);
  return std::vector<float>(a.data(), a.data() + a.size());
}

// The row dict documented in reel.Episode.append.
FrameRow RowFrom(const nb::dict& d) {
  FrameRow row;
  row.timestamp = Get<double>(d, "timestamp", 0.0);
  row.wall_time = Get<double>(d, "wall_time", 0.0);
  row.hardware_ns = Get<int64_t>(d, "hardware_ns", 0);
  if (d.contains("raw_hw_ns") && !d["raw_hw_ns"].is_none()) row.raw_hw_ns = nb::cast<int64_t>(d["raw_hw_ns"]);
  if (d.contains("fixed"))
    for (auto [k, v] : nb::cast<nb::dict>(d["fixed"])) row.SetFixed(nb::cast<std::string>(k), Floats(v));
  if (d.contains("scalars"))
    for (auto [k, v] : nb::cast<nb::dict>(d["scalars"])) row.SetScalar(nb::cast<std::string>(k), nb::cast<int64_t>(v));
  if (d.contains("status"))
    for (auto [k, v] : nb::cast<nb::dict>(d["status"]))
      row.SetStatus(nb::cast<std::string>(k), nb::cast<std::string>(v));
  if (d.contains("imu") && !d["imu"].is_none()) {
    nb::tuple t = nb::cast<nb::tuple>(d["imu"]);
    I64 ts = nb::cast<I64>(t[0]);
    F32 samples = nb::cast<F32>(t[1]);
    if (samples.size() != ts.size() * 6)
      RaiseStatus(Status::Invalid("imu: " + std::to_string(ts.size()) + " timestamps but " +
                                  std::to_string(samples.size()) + " values (6 per sample expected)"));
    for (size_t i = 0; i < ts.size(); ++i) {
      std::array<float, 6> s;
      std::copy(samples.data() + 6 * i, samples.data() + 6 * i + 6, s.begin());
      row.AddImuSample(ts.data()[i], s);
    }
  }
  if (d.contains("slam"))
    for (auto [k, v] : nb::cast<nb::dict>(d["slam"])) {
      nb::tuple t = nb::cast<nb::tuple>(v);
      F64 points = nb::cast<F64>(t[0]);
      I64 ns = nb::cast<I64>(t[1]);
      if (points.size() != ns.size() * 8)
        RaiseStatus(Status::Invalid("slam " + nb::cast<std::string>(k) + ": " + std::to_string(ns.size()) +
                                    " stamps but " + std::to_string(points.size()) + " values (8 per point)"));
      for (size_t i = 0; i < ns.size(); ++i) {
        std::array<double, 8> p;
        std::copy(points.data() + 8 * i, points.data() + 8 * i + 8, p.begin());
        row.AddSlamPoint(nb::cast<std::string>(k), p, ns.data()[i]);
      }
    }
  if (d.contains("force"))
    for (auto [k, v] : nb::cast<nb::dict>(d["force"])) {
      nb::tuple t = nb::cast<nb::tuple>(v);
      row.SetForceMatrix(nb::cast<std::string>(k), Floats(t[0]), nb::cast<int64_t>(t[1]));
    }
  return row;
}

void Check(const Status& st) {
  if (!st.ok()) RaiseStatus(st);
}

// Hands one frame to the slot's stream with the GIL released.
template <typename PushFn>
void Push(EpisodeWriter& e, const std::string& slot, PushFn push) {
  Status st;
  {
    nb::gil_scoped_release release;
    auto stream = e.Video(slot);
    st = stream.ok() ? push(**stream) : stream.status();
  }
  Check(st);
}

}  // namespace

void BindWriter(nb::module_& m) {
  nb::class_<EpisodeWriter>(m, "EpisodeWriter", "One episode being recorded (recorder.h).")
      .def_prop_ro("episode_index", &EpisodeWriter::episode_index)
      .def_prop_ro("rows", &EpisodeWriter::rows)
      .def(
          "append",
          [](EpisodeWriter& e, const nb::dict& d) {
            FrameRow row = RowFrom(d);
            Status st;
            {
              nb::gil_scoped_release release;
              st = e.AppendFrame(row);
            }
            Check(st);
          },
          "row"_a)
      .def(
          "push_rgb",
          [](EpisodeWriter& e, const std::string& slot, nb::ndarray<const uint8_t, nb::c_contig, nb::device::cpu> rgb) {
            Push(e, slot, [&](VideoStream& v) { return v.PushRgb({rgb.data(), rgb.size()}); });
          },
          "slot"_a, "rgb"_a)
      .def(
          "push_depth",
          [](EpisodeWriter& e, const std::string& slot, nb::ndarray<const uint16_t, nb::c_contig, nb::device::cpu> mm) {
            Push(e, slot, [&](VideoStream& v) { return v.PushDepth({mm.data(), mm.size()}); });
          },
          "slot"_a, "mm"_a)
      .def("count_drop", &EpisodeWriter::CountDrop, "key"_a, "n"_a)
      .def("commit",
           [](EpisodeWriter& e) {
             Result<CommittedEpisode> r = NotRunYet();
             {
               nb::gil_scoped_release release;
               r = e.Commit();
             }
             CommittedEpisode c = Unwrap(std::move(r));
             nb::dict d;
             d["episode_index"] = c.episode_index;
             d["length"] = c.length;
             d["data_path"] = c.data_path;
             return d;
           })
      .def("abort", [](EpisodeWriter& e) {
        Status st;
        {
          nb::gil_scoped_release release;
          st = e.Abort();
        }
        Check(st);
      });

  nb::class_<TaskWriter>(m, "TaskWriter", "Writes episodes into a pooled task (recorder.h).")
      .def_static(
          "open",
          [](const std::string& root, const nb::dict& options) {
            TaskWriterOptions o = OptionsFrom(options);
            Result<std::unique_ptr<TaskWriter>> w = NotRunYet();
            {
              nb::gil_scoped_release release;
              w = TaskWriter::Open(root, std::move(o));
            }
            return Unwrap(std::move(w));
          },
          "root"_a, "options"_a)
      .def_prop_ro("root", &TaskWriter::root)
      .def("begin_episode", [](TaskWriter& w, std::optional<int64_t> n, bool replace) {
        Result<std::unique_ptr<EpisodeWriter>> e = NotRunYet();
        {
          nb::gil_scoped_release release;
          e = n ? w.BeginEpisode(*n, replace) : w.BeginEpisode();
        }
        return Unwrap(std::move(e));
      }, "n"_a = nb::none(), "replace"_a = false, nb::keep_alive<0, 1>());
}

}  // namespace py
}  // namespace reel
