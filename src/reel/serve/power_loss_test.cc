// Power loss on the import server's commit (docs/reliability.md "Power loss"): ImportSlice
// of one packed episode into a task holding two, crashed at every sync point
// (testing/power_loss.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <type_traits>

#include "reel/pack.h"
#include "reel/serve.h"
#include "testing/power_loss.h"
#include "testing/tiny_rig.h"

namespace reel {
namespace {

namespace stdfs = std::filesystem;

// ImportSlice's options struct, whatever serve.h calls it (issue 26 item 1 renames it).
template <typename R, typename A, typename B, typename C>
C ThirdParameter(R (*)(A, B, C));
using SliceImportOptions = std::remove_cvref_t<decltype(ThirdParameter(&ImportSlice))>;

TEST(PowerLossTest, ServerImport) {
  testing::PowerLossCase c;
  c.name = "server import (ImportSlice)";
  c.task = "server/pick";
  c.setup = [](const std::string& dir) -> Status {
    // The server's task holds N=1,2; the rig's copy of it records N=3, packed as a slice.
    REEL_RETURN_IF_ERROR(testing::RecordTinyEpisodes(dir + "/server/pick", 2));
    stdfs::create_directories(dir + "/rig");
    stdfs::copy(dir + "/server/pick", dir + "/rig/pick", stdfs::copy_options::recursive);
    REEL_RETURN_IF_ERROR(testing::RecordTinyEpisodes(dir + "/rig/pick", 1));
    REEL_RETURN_IF_ERROR(PackEpisode(dir + "/rig/pick", 3, dir + "/slice.zip").status());
    stdfs::remove_all(dir + "/rig");
    return Status::OK();
  };
  c.op = [](FileSystem* fs, const std::string& dir) -> Status {
    ImportRequest request;
    request.project = "pick";
    request.zip_path = dir + "/slice.zip";
    SliceImportOptions options;
    options.fs = fs;
    const ImportOutcome outcome = ImportSlice(dir + "/server", request, options);
    if (outcome.http_status != 201)
      return Status::IOError("import answered " + std::to_string(outcome.http_status) + " " + outcome.rule + ": " +
                             outcome.message);
    return Status::OK();
  };
  c.atomic_files = {"meta/info.json", "meta/stats.json"};
  c.whole_tree = true;
  REEL_EXPECT_POWER_LOSS_CLEAN(testing::RunPowerLoss(c));
}

}  // namespace
}  // namespace reel
