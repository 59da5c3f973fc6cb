// Power loss on push (docs/reliability.md "Power loss"): PushTask to a local destination
// (new, and one already holding the task's first episodes) and a staged change
// (ChangeStoredTask recording one episode), the destination crashed at every sync point
// (testing/power_loss.h). The local task is read through the real file system.
#include <gtest/gtest.h>

#include <filesystem>

#include "push/push_internal.h"
#include "reel/push.h"
#include "reel/recorder.h"
#include "reel/simulate.h"
#include "testing/power_loss.h"
#include "testing/tiny_rig.h"

namespace reel {
namespace {

Status Push(FileSystem* fs, const std::string& dir) {
  REEL_ASSIGN_OR_RETURN(PushReport report, PushTask(dir + "/task", fs, dir + "/dest"));
  if (report.sent.empty()) return Status::Invalid("nothing was pushed");
  return Status::OK();
}

// What a reader does on the destination: nothing to roll forward (a push is resumed by
// the next push, and readers hide an episode whose push journal is present).
Status ReadOnly(const std::string&) { return Status::OK(); }

TEST(PowerLossTest, PushToANewDestination) {
  testing::PowerLossCase c;
  c.name = "push (PushTask, a new local destination)";
  c.task = "dest";
  c.setup = [](const std::string& dir) { return testing::RecordTinyEpisodes(dir + "/task", 2); };
  c.op = Push;
  c.reopen = ReadOnly;
  c.max_points = 40;
  REEL_EXPECT_POWER_LOSS_CLEAN(testing::RunPowerLoss(c));
}

TEST(PowerLossTest, PushOfANewEpisode) {
  testing::PowerLossCase c;
  c.name = "push (PushTask, one new episode)";
  c.task = "dest";
  c.setup = [](const std::string& dir) -> Status {
    REEL_RETURN_IF_ERROR(testing::RecordTinyEpisodes(dir + "/task", 2));
    REEL_RETURN_IF_ERROR(PushTask(dir + "/task", DefaultFileSystem(), dir + "/dest").status());
    return testing::RecordTinyEpisodes(dir + "/task", 1);
  };
  c.op = Push;
  c.reopen = ReadOnly;
  c.atomic_files = {"meta/info.json", "meta/stats.json"};
  c.max_points = 40;
  // Task files replace theirs whole, old or new (by rename on a disk), and go before the
  // episodes: total_episodes never falls behind a visible episode, so no crash leaves a
  // finding (before both: a torn info.json, and numbering.total_episodes between).
  REEL_EXPECT_POWER_LOSS_CLEAN(testing::RunPowerLoss(c));
}

TEST(PowerLossTest, StagedChange) {
  testing::PowerLossCase c;
  c.name = "staged change (ChangeStoredTask, recording one episode)";
  c.task = "dest";
  c.setup = [](const std::string& dir) -> Status {
    REEL_RETURN_IF_ERROR(testing::RecordTinyEpisodes(dir + "/task", 2));
    return PushTask(dir + "/task", DefaultFileSystem(), dir + "/dest").status();
  };
  c.op = [](FileSystem* fs, const std::string& dir) -> Status {
    return ChangeStoredTask(fs, dir + "/dest", [](FileSystem* staging, const std::string& root) -> Status {
             TaskWriterOptions options = SimulatedRigOptions("pick", testing::TinyRig());
             options.fs = staging;
             REEL_ASSIGN_OR_RETURN(auto writer, TaskWriter::Open(root, options));
             REEL_ASSIGN_OR_RETURN(auto episode, writer->BeginEpisode());
             REEL_RETURN_IF_ERROR(SimulateEpisode(*episode, testing::TinyRig(), episode->episode_index()));
             return episode->Commit().status();
           }).status();
  };
  // The next staged change's recovery (without its lock: the crashed "process" is this one,
  // whose pid the lock names).
  c.reopen = [](const std::string& root) { return internal::RecoverStagedPushes(DefaultFileSystem(), root).status(); };
  c.atomic_files = {"meta/info.json", "meta/stats.json"};
  c.volatile_columns = {"wall_time", "created_at"};  // the rig's clock
  c.encoded_videos = true;
  c.max_points = 40;
  REEL_EXPECT_POWER_LOSS_CLEAN(testing::RunPowerLoss(c));
}

}  // namespace
}  // namespace reel
