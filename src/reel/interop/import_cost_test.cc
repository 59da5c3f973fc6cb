// What an import costs grows with what it imports, not with the target (issue 31): the
// target is listed once per import for numbering and for "already present", not once per
// imported episode. Counted as loads of the target's episode index (each listing of the
// task opens it), never timed.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>

#include "reel/interop.h"
#include "reel/recorder.h"
#include "reel/simulate.h"
#include "reel/task.h"
#include "testing/fault_fs.h"
#include "testing/tiny_rig.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

namespace stdfs = std::filesystem;

// A LeRobot export of `count` tiny episodes whose content no target episode has (seed 2).
Status MakeExport(const std::string& dir, int count) {
  SimulateOptions rig = testing::TinyRig();
  rig.seed = 2;
  REEL_ASSIGN_OR_RETURN(auto writer, TaskWriter::Open(dir + "/src", SimulatedRigOptions("pick", rig)));
  for (int i = 0; i < count; ++i) {
    REEL_ASSIGN_OR_RETURN(auto episode, writer->BeginEpisode());
    REEL_RETURN_IF_ERROR(SimulateEpisode(*episode, rig, episode->episode_index()));
    REEL_RETURN_IF_ERROR(episode->Commit().status());
  }
  REEL_ASSIGN_OR_RETURN(auto task, Task::Open(dir + "/src"));
  REEL_RETURN_IF_ERROR(ExportTask(*task, dir + "/export").status());
  stdfs::remove_all(dir + "/src");
  return Status::OK();
}

class ImportCostTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string tmpl = (stdfs::temp_directory_path() / "reel_import_cost.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    // 40 episodes of one length (3 rows): every one is a candidate by length.
    ASSERT_OK(testing::RecordTinyEpisodes(dir_ + "/target", 40));
    ASSERT_OK(MakeExport(dir_ + "/two", 2));
    ASSERT_OK(MakeExport(dir_ + "/six", 6));
  }
  static void TearDownTestSuite() { stdfs::remove_all(dir_); }

  struct Cost {
    int index_loads = 0;  // listings of the target (each loads its episode index)
    int data_reads = 0;   // target data files opened (a comparison of content)
  };
  // Imports `source` into a copy of the target (made on first use) and counts the work.
  static Cost Import(const std::string& source, const std::string& copy, int64_t want_imported,
                     int64_t want_skipped) {
    if (!stdfs::exists(copy)) stdfs::copy(dir_ + "/target", copy, stdfs::copy_options::recursive);
    testing::FaultFileSystem fs;
    fs.Inject({.ops = testing::Ops({testing::FsOp::kStat}),  // one per load (EpisodeIndex::Load)
               .on = testing::PathsContaining("/meta/.episode_index.parquet"),
               .nth = 0});
    fs.Log(testing::Ops({testing::FsOp::kOpenRandomAccess}));
    ImportOptions options;
    options.fs = &fs;
    options.renumber = true;
    auto report = ImportDataset(source, copy, options);
    EXPECT_OK(report);
    if (!report.ok()) return {-1, -1};
    EXPECT_EQ(report->episodes, want_imported);
    EXPECT_EQ(static_cast<int64_t>(report->skipped.size()), want_skipped);
    Cost cost{fs.counted(), 0};
    for (const std::string& call : fs.calls())
      cost.data_reads += call.find(copy + "/data/chunk-000/episode-") != std::string::npos ? 1 : 0;
    return cost;
  }
  static inline std::string dir_;
};

TEST_F(ImportCostTest, TheTargetIsListedOncePerImportNotPerEpisode) {
  const Cost two = Import(dir_ + "/two/export", dir_ + "/a", 2, 0);
  const Cost six = Import(dir_ + "/six/export", dir_ + "/b", 6, 0);
  EXPECT_GE(two.index_loads, 1);
  EXPECT_EQ(six.index_loads, two.index_loads) << "each imported episode listed the target again";
  // Every target episode has the imported ones' length; none has their videos' sizes, so
  // no target data is read to tell them apart.
  EXPECT_EQ(six.data_reads, 0);
  // Importing the same episodes again finds each already present: one comparison each.
  const Cost again = Import(dir_ + "/six/export", dir_ + "/b", 0, 6);
  EXPECT_EQ(again.index_loads, two.index_loads);
  EXPECT_EQ(again.data_reads, 6);
  auto task = Task::Open(dir_ + "/b");
  ASSERT_OK(task);
  auto episodes = (*task)->ListEpisodes();
  ASSERT_OK(episodes);
  ASSERT_EQ(episodes->size(), 46u);
  EXPECT_EQ(episodes->back().episode_index, 46);  // numbered on from the highest, none skipped
}


// Exporting some episodes (--episodes) finds each on its own: no listing of the task (which
// loads its episode index), so its cost does not grow with the task (issue 31, bench_growth:
// export of 100 episodes took 1.6x longer at 100,000 episodes than at 1,000).
TEST_F(ImportCostTest, ExportingSomeEpisodesListsNoTask) {
  testing::FaultFileSystem fs;
  fs.Inject({.ops = testing::Ops({testing::FsOp::kStat}),  // one per load (EpisodeIndex::Load)
             .on = testing::PathsContaining("/meta/.episode_index.parquet"),
             .nth = 0});
  auto task = Task::Open(dir_ + "/target", {.fs = &fs});
  ASSERT_OK(task);
  ExportOptions options;
  options.episodes = {5, 2, 5};
  auto report = ExportTask(**task, dir_ + "/some", options);
  ASSERT_OK(report);
  EXPECT_EQ(report->episodes, 2);
  EXPECT_EQ(fs.counted(), 0) << "the task was listed";
  options.episodes = {2, 41};
  auto missing = ExportTask(**task, dir_ + "/none", options);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), ::testing::HasSubstr("no episode 41")) << missing.status().ToString();
}

// A batch of rows that is a small part of a large task reads its files instead of loading
// the whole episode index (Task's WorthTheIndex: from about 1/256 of total_episodes on).
TEST_F(ImportCostTest, ASmallPartOfALargeTaskLoadsNoIndex) {
  const std::string copy = dir_ + "/large";
  stdfs::copy(dir_ + "/target", copy, stdfs::copy_options::recursive);
  for (const int64_t total : {40, 32 * 256 + 1}) {  // as declared in info.json
    std::ifstream in(copy + "/meta/info.json");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(copy + "/meta/info.json", std::ios::trunc)
        << std::regex_replace(text, std::regex(R"("total_episodes":\s*\d+)"),
                              "\"total_episodes\": " + std::to_string(total));
    testing::FaultFileSystem fs;
    fs.Inject({.ops = testing::Ops({testing::FsOp::kStat}),
               .on = testing::PathsContaining("/meta/.episode_index.parquet"),
               .nth = 0});
    auto task = Task::Open(copy, {.fs = &fs});
    ASSERT_OK(task);
    std::vector<EpisodeEntry> some;
    for (int64_t n = 1; n <= 32; ++n) some.push_back(*(*task)->FindEpisode(n));
    (void)(*task)->ReadRowsAndSchemas(some, {"length"});
    EXPECT_EQ(fs.counted(), total == 40 ? 1 : 0) << "total_episodes " << total;
  }
}

}  // namespace
}  // namespace reel
