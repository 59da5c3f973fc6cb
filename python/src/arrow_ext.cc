// Tables across the Python boundary through the Arrow C stream interface: a PyCapsule
// named "arrow_array_stream" holding an ArrowArrayStream exported from a C++
// arrow::RecordBatchReader (arrow/c/bridge.h). The buffers are handed over, not copied,
// and the extension never touches pyarrow's Python API: any consumer of the PyCapsule
// interface (pyarrow, polars, DuckDB, ...) can read it.
#include <arrow/api.h>
#include <arrow/c/abi.h>
#include <arrow/c/bridge.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <span>

#include "binding.h"
#include "reel/file_group.h"
#include "reel/task.h"

namespace reel {
namespace py {

using namespace nb::literals;

namespace {

void ReleaseStreamCapsule(PyObject* capsule) noexcept {
  auto* stream = static_cast<ArrowArrayStream*>(PyCapsule_GetPointer(capsule, "arrow_array_stream"));
  if (!stream) {
    PyErr_Clear();
    return;
  }
  // A consumer that imported the stream moved it out and left release null.
  if (stream->release) stream->release(stream);
  delete stream;
}

// One row per episode: what the listing and the episodes rows say, as Arrow columns.
Result<std::shared_ptr<arrow::Table>> EpisodesTable(const Task& task) {
  REEL_ASSIGN_OR_RETURN(auto episodes, task.ListEpisodes());
  arrow::Int64Builder n, chunk, file, length, task_index;
  arrow::DoubleBuilder duration, created;
  arrow::BooleanBuilder has_data;
  arrow::StringBuilder file_group, row_source, data_path, video_codec, drop_stats;
  auto slot_values = std::make_shared<arrow::StringBuilder>();
  arrow::ListBuilder slots(arrow::default_memory_pool(), slot_values);
  auto ok = [](const arrow::Status& s) { return s.ok() ? Status::OK() : Status::Invalid(s.ToString()); };
  // A batch of rows at a time: 100,000 episodes' rows held at once would be about 250 MB.
  auto append = [&](size_t first, std::span<const Result<EpisodeRow>> rows) -> Status {
    for (size_t k = 0; k < rows.size(); ++k) {
      const EpisodeEntry& e = episodes[first + k];
      const Result<EpisodeRow>& row = rows[k];
      REEL_RETURN_IF_ERROR(ok(n.Append(e.episode_index)));
      REEL_RETURN_IF_ERROR(ok(chunk.Append(e.location.chunk)));
      REEL_RETURN_IF_ERROR(ok(file.Append(e.location.file)));
      REEL_RETURN_IF_ERROR(ok(has_data.Append(!e.data_path.empty())));
      const FileGroup group = EpisodeFileGroup(task, e, row.ok() ? &*row : nullptr);
      REEL_RETURN_IF_ERROR(ok(file_group.Append(FileGroupStateName(group.state))));
      REEL_RETURN_IF_ERROR(ok(row_source.Append(RowSourceName(e.row_source))));
      REEL_RETURN_IF_ERROR(ok(e.data_path.empty() ? data_path.AppendNull() : data_path.Append(e.data_path)));
      REEL_RETURN_IF_ERROR(ok(slots.Append()));
      for (const auto& [slot, path] : e.videos) REEL_RETURN_IF_ERROR(ok(slot_values->Append(slot)));
      if (row.ok()) {
        const EpisodeRow& r = *row;
        REEL_RETURN_IF_ERROR(ok(length.Append(r.length)));
        REEL_RETURN_IF_ERROR(ok(task_index.Append(r.task_index)));
        REEL_RETURN_IF_ERROR(ok(duration.Append(r.duration_sec)));
        REEL_RETURN_IF_ERROR(ok(created.Append(r.created_at)));
        REEL_RETURN_IF_ERROR(ok(video_codec.Append(r.video_codec)));
        REEL_RETURN_IF_ERROR(ok(drop_stats.Append(r.drop_stats)));
      } else {
        for (arrow::ArrayBuilder* b : std::initializer_list<arrow::ArrayBuilder*>{
                 &length, &task_index, &duration, &created, &video_codec, &drop_stats})
          REEL_RETURN_IF_ERROR(ok(b->AppendNull()));
      }
    }
    return Status::OK();
  };
  REEL_RETURN_IF_ERROR(task.VisitEpisodeRows(episodes, {}, append));
  std::vector<std::shared_ptr<arrow::Array>> columns;
  for (arrow::ArrayBuilder* b : std::initializer_list<arrow::ArrayBuilder*>{
           &n, &chunk, &file, &length, &duration, &task_index, &created, &has_data, &file_group, &row_source, &data_path,
           &slots, &video_codec, &drop_stats}) {
    std::shared_ptr<arrow::Array> a;
    REEL_RETURN_IF_ERROR(ok(b->Finish(&a)));
    columns.push_back(std::move(a));
  }
  auto schema = arrow::schema({
      arrow::field("episode_index", arrow::int64(), false), arrow::field("chunk", arrow::int64(), false),
      arrow::field("file", arrow::int64(), false), arrow::field("length", arrow::int64()),
      arrow::field("duration_sec", arrow::float64()), arrow::field("task_index", arrow::int64()),
      arrow::field("created_at", arrow::float64()), arrow::field("has_data", arrow::boolean(), false),
      arrow::field("file_group", arrow::utf8(), false), arrow::field("row_source", arrow::utf8(), false), arrow::field("data_path", arrow::utf8()),
      arrow::field("video_slots", arrow::list(arrow::utf8()), false), arrow::field("video_codec", arrow::utf8()),
      arrow::field("drop_stats", arrow::utf8())});
  return arrow::Table::Make(schema, columns);
}

}  // namespace

nb::object StreamCapsule(std::shared_ptr<arrow::RecordBatchReader> reader) {
  auto* stream = new ArrowArrayStream();
  arrow::Status st = arrow::ExportRecordBatchReader(std::move(reader), stream);
  if (!st.ok()) {
    delete stream;
    RaiseStatus(Status::Invalid("exporting an Arrow C stream: " + st.ToString()));
  }
  PyObject* capsule = PyCapsule_New(stream, "arrow_array_stream", &ReleaseStreamCapsule);
  if (!capsule) {
    stream->release(stream);
    delete stream;
    throw nb::python_error();
  }
  return nb::steal(capsule);
}

void BindArrow(nb::class_<Task>& task) {
  task.def(
          "data_stream",
          [](const Task& t, int64_t n, const std::vector<std::string>& columns) {
            Result<std::shared_ptr<arrow::RecordBatchReader>> reader = NotRunYet();
            {
              nb::gil_scoped_release release;
              reader = [&]() -> Result<std::shared_ptr<arrow::RecordBatchReader>> {
                REEL_ASSIGN_OR_RETURN(EpisodeEntry e, t.FindEpisode(n));
                if (e.data_path.empty())
                  return Status::NotFound(t.root() + ": episode " + std::to_string(n) +
                                          " has no data parquet (deleted after upload?)");
                return t.OpenData(e, columns);
              }();
            }
            return StreamCapsule(Unwrap(std::move(reader)));
          },
          "episode_index"_a, "columns"_a,
          "Episode N's data parquet (projected to `columns`; empty = all) as an "
          "\"arrow_array_stream\" PyCapsule. Batches are read as the consumer pulls them.")
      .def(
          "episodes_stream",
          [](const Task& t) {
            Result<std::shared_ptr<arrow::Table>> table = NotRunYet();
            {
              nb::gil_scoped_release release;
              table = EpisodesTable(t);
            }
            auto reader = std::make_shared<arrow::TableBatchReader>(Unwrap(std::move(table)));
            return StreamCapsule(std::move(reader));
          },
          "One row per episode as an \"arrow_array_stream\" PyCapsule.");
}

}  // namespace py
}  // namespace reel
