// Power loss on the write layer's commit paths (docs/reliability.md "Power loss"): the
// recorder's commit of a new episode and DeleteEpisode, each crashed at every sync point
// by FaultFileSystem (testing/fault_fs.h) and judged by RunPowerLoss
// (testing/power_loss.h).
#include <gtest/gtest.h>

#include "reel/recorder.h"
#include "reel/simulate.h"
#include "testing/power_loss.h"
#include "testing/tiny_rig.h"

namespace reel {
namespace {

TEST(PowerLossTest, RecorderCommit) {
  testing::PowerLossCase c;
  c.name = "recorder commit (TaskWriter, EpisodeWriter::Commit)";
  c.setup = [](const std::string& dir) { return testing::RecordTinyEpisodes(dir + "/task", 2); };
  c.op = [](FileSystem* fs, const std::string& dir) -> Status {
    TaskWriterOptions options = SimulatedRigOptions("pick", testing::TinyRig());
    options.fs = fs;
    REEL_ASSIGN_OR_RETURN(auto writer, TaskWriter::Open(dir + "/task", options));
    REEL_ASSIGN_OR_RETURN(auto episode, writer->BeginEpisode());
    REEL_RETURN_IF_ERROR(SimulateEpisode(*episode, testing::TinyRig(), episode->episode_index()));
    return episode->Commit().status();
  };
  c.atomic_files = {"meta/info.json", "meta/stats.json"};
  c.volatile_columns = {"wall_time", "created_at"};  // the rig's clock
  c.encoded_videos = true;
  REEL_EXPECT_POWER_LOSS_CLEAN(testing::RunPowerLoss(c));
}

TEST(PowerLossTest, DeleteEpisode) {
  testing::PowerLossCase c;
  c.name = "delete (DeleteEpisode)";
  c.setup = [](const std::string& dir) { return testing::RecordTinyEpisodes(dir + "/task", 2); };
  c.op = [](FileSystem* fs, const std::string& dir) { return DeleteEpisode(dir + "/task", 1, fs); };
  c.whole_tree = true;
  // On main (a RemoveFile per file, no journal) 16 of 20 crashes left a torn file group.
  REEL_EXPECT_POWER_LOSS_CLEAN(testing::RunPowerLoss(c));
}

}  // namespace
}  // namespace reel
