// A pooled_episodes_v1 task made of fuzzed files (info.json, data and episodes parquet,
// a legacy shard, stats.json, tasks.jsonl), read the way the CLI and the Python package
// read it: Task::Open, ListEpisodes, ReadEpisodeRows, ReadData, the column decoders
// (force matrices, IMU, SLAM), ReadStats, ReadTasks; then the conformance checker that
// the server runs on every upload (CheckTask). Everything is read through an in-memory
// FileSystem; input format: fuzz/make_seeds.py "tree".
#include <arrow/api.h>

#include <cstdio>

#include "harness_util.h"
#include "reel/align.h"
#include "reel/check.h"
#include "reel/columns.h"
#include "reel/decode.h"
#include "reel/task.h"

namespace {

void DecodeColumns(const reel::Task& task, const arrow::Table& table, const reel::EpisodeRow& row) {
  using namespace reel;
  std::vector<float> frame;
  for (int i = 0; i < table.num_columns(); ++i) {
    const std::string& name = table.field(i)->name();
    const auto& column = *table.column(i);
    switch (ClassifyColumn(name, task.info().sensors)) {
      case ColumnFamily::kForceMatrix: {
        if (column.type()->id() != arrow::Type::LIST) break;
        const auto& type = static_cast<const arrow::ListType&>(*column.type());
        const std::string dtype = type.value_type()->id() == arrow::Type::INT16 ? "int16" : "float32";
        auto spec = ResolveForceMatrixSpec(name, row, task.info(), dtype);
        if (!spec.ok()) break;
        frame.resize(kForceMatrixValues);
        for (int64_t r = 0; r < column.length() && r < 4; ++r)
          if (!DecodeForceMatrixCell(column, r, spec->spec, frame.data()).ok()) break;
        break;
      }
      case ColumnFamily::kImuSamples: {
        auto ts = table.GetColumnByName("imu_ts_ns");
        (void)DecodeImu(column, ts.get());
        (void)DecodeImu(column, nullptr);
        break;
      }
      case ColumnFamily::kSlamPoints: {
        auto ns = table.GetColumnByName(name + "_ns");
        (void)DecodeSlam(column, ns.get());
        break;
      }
      default:
        break;
    }
  }
}

// The page-level reads (Task::ReadDataRows, ForceMatrixFrames) of every list column: a few
// rows through the file's offset index, which is as much input as the pages themselves.
void ReadRows(const reel::Task& task, const reel::EpisodeEntry& entry, const arrow::Table& table) {
  using namespace reel;
  for (int i = 0; i < table.num_columns(); ++i) {
    if (table.column(i)->type()->id() != arrow::Type::LIST) continue;
    const std::string& name = table.field(i)->name();
    const int64_t rows = table.num_rows();
    (void)task.ReadDataRows(entry, name, rows > 1 ? std::vector<int64_t>{0, rows - 1} : std::vector<int64_t>{0});
    auto frames = ForceMatrixFrames::Open(task, entry.episode_index, name, ForcePlane::kFz, 5);
    if (frames.ok() && (*frames)->rows() > 0) (void)(*frames)->Decode({(*frames)->rows() - 1, 0, 0});
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reel;
  static fuzz::MemFs fs;
  fs.Clear();
  const std::string root = "/mem/task";
  fuzz::UnpackTree(data, size, root, fs);

  TaskOptions options;
  options.fs = &fs;
  options.io_threads = 1;
  auto task = Task::Open(root, options);
  if (task.ok()) {
    auto episodes = (*task)->ListEpisodes();
    if (episodes.ok()) {
      std::vector<EpisodeEntry> first(episodes->begin(),
                                      episodes->begin() + std::min<size_t>(episodes->size(), 4));
      auto rows = (*task)->ReadEpisodeRows(first);
      for (size_t i = 0; i < first.size(); ++i) {
        (void)(*task)->ReadDataSchema(first[i]);
        auto table = (*task)->ReadData(first[i]);
        if (table.ok()) DecodeColumns(**task, **table, rows[i].ok() ? *rows[i] : EpisodeRow{});
        if (table.ok()) ReadRows(**task, first[i], **table);
        (void)(*task)->FindEpisode(first[i].episode_index);
        // Time alignment (reel/align.h) of every stream, both methods, and the IMU tables.
        AlignOptions align;
        (void)AlignEpisode(**task, first[i].episode_index, align);
        align.method = AlignMethod::kInterpolate;
        align.tolerance_s = 0.05;
        (void)AlignEpisode(**task, first[i].episode_index, align);
        (void)ImuTable(**task, first[i].episode_index);
        (void)ImuWindowsOf(**task, first[i].episode_index, 4);
      }
    }
    (void)(*task)->ReadStats();
    (void)(*task)->ReadTasks();
  }
  CheckOptions check;
  check.fs = &fs;
  check.io_threads = 1;
  auto report = CheckTask(root, check);
  if (fuzz::Debug()) {
    fprintf(stderr, "task: open %s, check %s\n", task.status().ToString().c_str(), report.status().ToString().c_str());
    if (report.ok())
      for (const auto& f : report->findings) fprintf(stderr, "  %s %s: %s\n", f.rule.c_str(), f.path.c_str(), f.message.c_str());
  }
  return 0;
}
