// Task.imu / Task.slam: the variable-length sample families (contract §7.2; multi-device
// §4.6, §8.2.4) decoded by the C++ core (decode.h) into flat numpy arrays.
#include <arrow/api.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>

#include "binding.h"
#include "reel/align.h"
#include "reel/decode.h"
#include "reel/task.h"

namespace reel {
namespace py {

using namespace nb::literals;

namespace {

template <typename T>
nb::object ToNumpy(const T* data, size_t n, nb::tuple shape, const char* dtype) {
  nb::object out = NumpyEmpty(shape, dtype);
  if (n) {
    auto buf = nb::cast<nb::ndarray<T, nb::c_contig>>(out);
    std::memcpy(buf.data(), data, n * sizeof(T));
  }
  return out;
}

// The hardware_ns of every frame row (for pairing sample stamps to frames).
Result<std::vector<int64_t>> FrameNs(const arrow::Table& table, const std::string& where) {
  auto col = table.GetColumnByName("hardware_ns");
  if (!col) return Status::NotFound(where + ": no hardware_ns column to pair samples with");
  std::vector<int64_t> out;
  for (const auto& chunk : col->chunks()) {
    if (chunk->type_id() != arrow::Type::INT64) return Status::Invalid(where + ": hardware_ns is not int64");
    const auto& a = static_cast<const arrow::Int64Array&>(*chunk);
    for (int64_t i = 0; i < a.length(); ++i) out.push_back(a.IsNull(i) ? 0 : a.Value(i));
  }
  return out;
}

// Episode N's `columns`, plus `optional` when the episode has it (a sample family's
// parallel stamps column is optional), and a label naming the file for errors.
struct EpisodeColumns {
  std::shared_ptr<arrow::Table> table;
  std::shared_ptr<arrow::ChunkedArray> optional;  // null when absent
  std::string where;
};

Result<EpisodeColumns> ReadEpisodeColumns(const Task& task, int64_t n, std::vector<std::string> columns,
                                          const std::string& optional) {
  REEL_ASSIGN_OR_RETURN(EpisodeEntry e, task.FindEpisode(n));
  EpisodeColumns out;
  out.where = task.Path(e.data_path) + " (episode " + std::to_string(n) + ")";
  REEL_ASSIGN_OR_RETURN(auto schema, task.ReadDataSchema(e));
  const bool has_optional = schema->GetFieldByName(optional) != nullptr;
  if (has_optional) columns.push_back(optional);
  REEL_ASSIGN_OR_RETURN(out.table, task.ReadData(e, columns));
  if (has_optional) out.optional = out.table->GetColumnByName(optional);
  return out;
}

nb::dict Imu(const Task& task, int64_t n) {
  ImuSamples s;
  std::vector<int64_t> rows;
  Status st;
  {
    nb::gil_scoped_release release;
    st = [&]() -> Status {
      REEL_ASSIGN_OR_RETURN(EpisodeColumns c, ReadEpisodeColumns(task, n, {"observation.imu"}, "imu_ts_ns"));
      auto decoded = DecodeImu(*c.table->GetColumnByName("observation.imu"), c.optional.get());
      if (!decoded.ok()) return decoded.status().WithContext(c.where);
      s = std::move(*decoded);
      for (size_t r = 0; r + 1 < s.row_offsets.size(); ++r)
        for (int64_t k = s.row_offsets[r]; k < s.row_offsets[r + 1]; ++k) rows.push_back(static_cast<int64_t>(r));
      return Status::OK();
    }();
  }
  if (!st.ok()) RaiseStatus(st);
  const size_t k = s.values.size();
  nb::dict d;
  d["row"] = ToNumpy(rows.data(), k, nb::make_tuple(k), "int64");
  d["ts_ns"] = ToNumpy(s.ts_ns.data(), s.ts_ns.size(), nb::make_tuple(s.ts_ns.size()), "int64");
  d["values"] = ToNumpy(reinterpret_cast<const float*>(s.values.data()), k * 6, nb::make_tuple(k, 6), "float32");
  return d;
}

nb::dict Slam(const Task& task, int64_t n, const std::string& column) {
  std::vector<SlamPoint> points;
  std::vector<int64_t> frames;
  Status st;
  {
    nb::gil_scoped_release release;
    st = [&]() -> Status {
      REEL_ASSIGN_OR_RETURN(EpisodeColumns c,
                            ReadEpisodeColumns(task, n, {column, "hardware_ns"}, column + "_ns"));
      auto decoded = DecodeSlam(*c.table->GetColumnByName(column), c.optional.get());
      if (!decoded.ok()) return decoded.status().WithContext(c.where + ": column \"" + column + "\"");
      points = std::move(*decoded);
      REEL_ASSIGN_OR_RETURN(auto frame_ns, FrameNs(*c.table, c.where));
      std::vector<int64_t> sample_ns, sample_row;
      for (const SlamPoint& p : points) sample_ns.push_back(p.ns), sample_row.push_back(p.row);
      frames = NearestFrames(frame_ns, sample_ns, sample_row);
      return Status::OK();
    }();
  }
  if (!st.ok()) RaiseStatus(st);
  const size_t k = points.size();
  std::vector<double> flat;
  std::vector<int64_t> ns, rows;
  flat.reserve(k * 8);
  for (const SlamPoint& p : points) {
    flat.insert(flat.end(), {p.t, p.x, p.y, p.z, p.qx, p.qy, p.qz, p.qw});
    ns.push_back(p.ns);
    rows.push_back(p.row);
  }
  nb::dict d;
  d["points"] = ToNumpy(flat.data(), flat.size(), nb::make_tuple(k, 8), "float64");
  d["ns"] = ToNumpy(ns.data(), k, nb::make_tuple(k), "int64");
  d["row"] = ToNumpy(rows.data(), k, nb::make_tuple(k), "int64");
  d["frame"] = ToNumpy(frames.data(), frames.size(), nb::make_tuple(frames.size()), "int64");
  return d;
}

// Task.align / Task.imu_table: reel/align.h's tables as Arrow C stream capsules.
nb::object AlignTable(const Task& task, int64_t n, const std::vector<std::string>& columns, double tolerance_s,
                      const std::string& method, bool canonical_gloves) {
  AlignOptions options;
  options.columns = columns;
  options.tolerance_s = tolerance_s;
  options.method = Unwrap(ParseAlignMethod(method));
  options.canonical_gloves = canonical_gloves;
  Result<std::shared_ptr<arrow::Table>> table = NotRunYet();
  {
    nb::gil_scoped_release release;
    table = AlignEpisode(task, n, options);
  }
  return StreamCapsule(std::make_shared<arrow::TableBatchReader>(Unwrap(std::move(table))));
}

nb::object ImuTableCapsule(const Task& task, int64_t n) {
  Result<std::shared_ptr<arrow::Table>> table = NotRunYet();
  {
    nb::gil_scoped_release release;
    table = ImuTable(task, n);
  }
  return StreamCapsule(std::make_shared<arrow::TableBatchReader>(Unwrap(std::move(table))));
}

// Every row of a glove column as (rows, 16, 16) float32 (reel/align.h GloveFrames).
nb::object Glove(const Task& task, int64_t n, const std::string& column, bool canonical) {
  Result<std::vector<float>> frames = NotRunYet();
  {
    nb::gil_scoped_release release;
    frames = GloveFrames(task, n, column, canonical);
  }
  std::vector<float> values = Unwrap(std::move(frames));
  const size_t rows = values.size() / (kGloveSide * kGloveSide);
  return ToNumpy(values.data(), values.size(), nb::make_tuple(rows, kGloveSide, kGloveSide), "float32");
}

nb::dict ImuWindowsDict(const Task& task, int64_t n, int64_t window, double max_age_s) {
  Result<ImuWindows> w = NotRunYet();
  {
    nb::gil_scoped_release release;
    w = ImuWindowsOf(task, n, window, max_age_s);
  }
  ImuWindows v = Unwrap(std::move(w));
  const size_t rows = v.window ? v.valid.size() / v.window : 0;
  nb::dict d;
  d["values"] = ToNumpy(v.values.data(), v.values.size(), nb::make_tuple(rows, v.window, 6), "float32");
  d["ns"] = ToNumpy(v.ns.data(), v.ns.size(), nb::make_tuple(rows, v.window), "int64");
  d["valid"] = ToNumpy(reinterpret_cast<const bool*>(v.valid.data()), v.valid.size(),
                       nb::make_tuple(rows, v.window), "bool");
  d["clock"] = v.clock;
  return d;
}

ForcePlane PlaneOf(const std::string& plane) {
  if (plane != "full" && plane != "fz") RaiseStatus(Status::Invalid("plane must be \"full\" or \"fz\", got \"" + plane + "\""));
  return plane == "fz" ? ForcePlane::kFz : ForcePlane::kFull;
}

// {values (rows, h, w) for the fz plane or (rows, h, w, 3), valid (rows,), dt_ns (rows,)}.
nb::dict MatricesDict(Result<AlignedForceMatrices> m) {
  AlignedForceMatrices v = Unwrap(std::move(m));
  const size_t rows = v.valid.size();
  nb::dict d;
  d["values"] = v.channels == 1
                    ? ToNumpy(v.values.data(), v.values.size(), nb::make_tuple(rows, v.height, v.width), "float32")
                    : ToNumpy(v.values.data(), v.values.size(), nb::make_tuple(rows, v.height, v.width, 3), "float32");
  d["valid"] = ToNumpy(reinterpret_cast<const bool*>(v.valid.data()), rows, nb::make_tuple(rows), "bool");
  d["dt_ns"] = ToNumpy(v.dt_ns.data(), rows, nb::make_tuple(rows), "int64");
  return d;
}

nb::dict ForceMatricesDict(const Task& task, int64_t n, const std::string& column, const std::string& plane,
                           int downsample, double tolerance_s) {
  const ForcePlane p = PlaneOf(plane);
  Result<AlignedForceMatrices> m = NotRunYet();
  {
    nb::gil_scoped_release release;
    m = AlignForceMatrices(task, n, column, p, downsample, tolerance_s);
  }
  return MatricesDict(std::move(m));
}

ForceMatrixFrames* OpenForceMatrixFrames(const Task& task, int64_t n, const std::string& column,
                                         const std::string& plane, int downsample, double tolerance_s) {
  const ForcePlane p = PlaneOf(plane);
  Result<std::unique_ptr<ForceMatrixFrames>> frames = NotRunYet();
  {
    nb::gil_scoped_release release;
    frames = ForceMatrixFrames::Open(task, n, column, p, downsample, tolerance_s);
  }
  return Unwrap(std::move(frames)).release();
}

nb::dict DecodeFrames(const ForceMatrixFrames& frames, nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig> rows) {
  std::vector<int64_t> wanted(rows.data(), rows.data() + rows.shape(0));
  Result<AlignedForceMatrices> m = NotRunYet();
  {
    nb::gil_scoped_release release;
    m = frames.Decode(wanted);
  }
  return MatricesDict(std::move(m));
}

nb::object Paired(const ForceMatrixFrames& frames) {
  std::vector<uint8_t> paired(static_cast<size_t>(frames.rows()));
  for (size_t r = 0; r < paired.size(); ++r) paired[r] = frames.pairing()[r].a >= 0;
  return ToNumpy(reinterpret_cast<const bool*>(paired.data()), paired.size(), nb::make_tuple(paired.size()), "bool");
}

nb::dict SlamSpec(const Task& task, int64_t n, const std::string& column) {
  Result<ResolvedSlamSpec> spec = NotRunYet();
  {
    nb::gil_scoped_release release;
    spec = SlamSpecOf(task, n, column);
  }
  ResolvedSlamSpec s = Unwrap(std::move(spec));
  nb::module_ json = nb::module_::import_("json");
  nb::dict d;
  d["frame"] = s.frame;
  d["frame_axes"] = json.attr("loads")(s.frame_axes_json);
  d["time"] = json.attr("loads")(s.time_json);
  d["owner"] = json.attr("loads")(s.owner_json);
  d["source"] = SlamSpecSourceName(s.source);
  return d;
}

}  // namespace

void BindSamples(nb::module_& m, nb::class_<Task>& task) {
  nb::class_<ForceMatrixFrames>(m, "ForceMatrixFrames")
      .def_prop_ro("rows", &ForceMatrixFrames::rows)
      .def_prop_ro("paired", &Paired, "bool (rows,): a sample's stamp within tolerance of the frame.")
      .def("decode", &DecodeFrames, "rows"_a,
           "Frames `rows` (int64, any order, repeats allowed): {values, valid, dt_ns}, reading only "
           "the samples they pair with.");
  task.def("imu", &Imu, "episode_index"_a,
           "Episode N's IMU samples: {row (k,), ts_ns (k,) or empty, values (k, 6) float32}.")
      .def("slam", &Slam, "episode_index"_a, "column"_a,
           "A SLAM trajectory column of episode N: {points (k, 8) float64 [t,x,y,z,qx,qy,qz,qw], "
           "ns (k,), row (k,) the row it hangs on, frame (k,) the row whose hardware_ns is nearest "
           "to ns within its clock segment (-1 without a stamp)}.")
      .def("align_table", &AlignTable, "episode_index"_a, "columns"_a, "tolerance_s"_a, "method"_a,
           "canonical_gloves"_a, "reel/align.h AlignEpisode as an arrow_array_stream capsule.")
      .def("imu_table", &ImuTableCapsule, "episode_index"_a,
           "reel/align.h ImuTable as an arrow_array_stream capsule.")
      .def("imu_windows", &ImuWindowsDict, "episode_index"_a, "window"_a, "max_age_s"_a,
           "reel/align.h ImuWindowsOf: {values (rows, K, 6), ns (rows, K), valid (rows, K), clock}.")
      .def("force_matrices", &ForceMatricesDict, "episode_index"_a, "column"_a, "plane"_a, "downsample"_a,
           "tolerance_s"_a, "reel/align.h AlignForceMatrices: {values, valid (rows,), dt_ns (rows,)}.")
      .def("force_matrix_frames", &OpenForceMatrixFrames, "episode_index"_a, "column"_a, "plane"_a, "downsample"_a,
           "tolerance_s"_a, nb::keep_alive<0, 1>(),
           "reel/align.h ForceMatrixFrames::Open: the pairing now, the matrices on decode(rows).")
      .def("slam_spec", &SlamSpec, "episode_index"_a, "column"_a,
           "reel/decode.h ResolveSlamSpec: {frame, frame_axes, time, owner, source}.")
      .def("glove", &Glove, "episode_index"_a, "column"_a, "canonical"_a,
           "A glove column as (rows, 16, 16) float32; the left glove canonical when asked.");
}

}  // namespace py
}  // namespace reel
