// Power loss on dataset import (docs/reliability.md "Power loss"): ImportDataset of a
// two-episode LeRobot export, into a task that already holds an episode and into a new
// task, crashed at every sync point (testing/power_loss.h).
#include <gtest/gtest.h>

#include <filesystem>

#include "reel/interop.h"
#include "reel/recorder.h"
#include "reel/simulate.h"
#include "reel/task.h"
#include "testing/power_loss.h"
#include "testing/tiny_rig.h"

namespace reel {
namespace {

namespace stdfs = std::filesystem;

// dir/export: a LeRobot v3.0 export of two tiny episodes.
Status MakeExport(const std::string& dir) {
  REEL_RETURN_IF_ERROR(testing::RecordTinyEpisodes(dir + "/src", 2));
  REEL_ASSIGN_OR_RETURN(auto task, Task::Open(dir + "/src"));
  REEL_RETURN_IF_ERROR(ExportTask(*task, dir + "/export").status());
  stdfs::remove_all(dir + "/src");
  return Status::OK();
}

Status ImportInto(FileSystem* fs, const std::string& source, const std::string& task) {
  ImportOptions options;
  options.fs = fs;
  options.renumber = true;
  REEL_ASSIGN_OR_RETURN(ImportReport report, ImportDataset(source, task, options));
  if (report.episodes != 2) return Status::Invalid("imported " + std::to_string(report.episodes) + " episodes, not 2");
  return Status::OK();
}

TEST(PowerLossTest, DatasetImport) {
  testing::PowerLossCase c;
  c.name = "dataset import (ImportDataset, into a task)";
  c.setup = [](const std::string& dir) -> Status {
    REEL_RETURN_IF_ERROR(MakeExport(dir));
    // The target holds an episode of other content (another seed), so both are imported.
    SimulateOptions rig = testing::TinyRig();
    rig.seed = 2;
    REEL_ASSIGN_OR_RETURN(auto writer, TaskWriter::Open(dir + "/task", SimulatedRigOptions("pick", rig)));
    REEL_ASSIGN_OR_RETURN(auto episode, writer->BeginEpisode());
    REEL_RETURN_IF_ERROR(SimulateEpisode(*episode, rig, 1));
    return episode->Commit().status();
  };
  c.op = [](FileSystem* fs, const std::string& dir) { return ImportInto(fs, dir + "/export", dir + "/task"); };
  c.max_points = 24;  // of ~75-90 sync points, spread evenly (the campaign's time)
  REEL_EXPECT_POWER_LOSS_CLEAN(testing::RunPowerLoss(c));
}

TEST(PowerLossTest, DatasetImportIntoANewTask) {
  testing::PowerLossCase c;
  c.name = "dataset import (ImportDataset, a new task)";
  c.setup = MakeExport;
  c.op = [](FileSystem* fs, const std::string& dir) { return ImportInto(fs, dir + "/export", dir + "/task"); };
  c.max_points = 24;  // of ~75-90 sync points, spread evenly (the campaign's time)
  REEL_EXPECT_POWER_LOSS_CLEAN(testing::RunPowerLoss(c));
}

}  // namespace
}  // namespace reel
