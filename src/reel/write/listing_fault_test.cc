// A directory listing that fails (EIO, EACCES) where a decision depends on it: choosing N
// against the live reservations, hiding an episode whose commit journal is present,
// rolling interrupted commits forward, resuming a push, sweeping stale temps. Each must
// return the error; read as "nothing there" it hands one N to two writers, shows a torn
// episode, or leaves a journal behind. A missing directory stays "nothing there".
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "layout/journal.h"
#include "reel/push.h"
#include "reel/recorder.h"
#include "reel/simulate.h"
#include "reel/task.h"
#include "testing/fault_fs.h"
#include "testing/tiny_rig.h"
#include "write/transaction.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

namespace stdfs = std::filesystem;

// Fails ListDir of exactly `path` with `code`, every time; everything else goes to the disk.
class FailingListDir : public testing::FaultFileSystem {
 public:
  FailingListDir(const std::string& path, StatusCode code) {
    Inject({.ops = testing::Ops({testing::FsOp::kListDir}),
            .on = [path](const std::string& p) { return p == path; },
            .stays_down = true,
            .code = code,
            .reason = code == StatusCode::kPermissionDenied ? "opendir: Permission denied" : "opendir: Input/output error"});
  }
  int failed() const { return counted(); }
};

class ListingFaultTest : public ::testing::TestWithParam<StatusCode> {
 protected:
  void SetUp() override {
    std::string tmpl = (stdfs::temp_directory_path() / "reel_listing_fault.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    root_ = dir_ + "/task";
  }
  void TearDown() override { stdfs::remove_all(dir_); }

  // The error a call got: the injected one, with its code and the listed path.
  void ExpectInjected(const Status& st, const std::string& rel) {
    ASSERT_FALSE(st.ok()) << "a failed listing of " << rel << " was read as empty";
    EXPECT_EQ(st.code(), GetParam()) << st.ToString();
    EXPECT_THAT(st.message(), ::testing::HasSubstr(root_ + "/" + rel)) << st.message();
  }

  // Episode 2 of a two-episode task as a commit killed mid-renames leaves it: its journal
  // meta/.commit-2.json, its data and videos in place, its episodes row still a temp.
  void TearEpisodeTwo() {
    ASSERT_OK(testing::RecordTinyEpisodes(root_, 2));
    auto task = Task::Open(root_);
    ASSERT_OK(task);
    auto two = (*task)->FindEpisode(2);
    ASSERT_OK(two);
    row_rel_ = two->row_path;
    // The temp is named as the transaction names its own (a journal is held to that).
    const std::string temp_rel = DirName(row_rel_) + "/" + BaseName(internal::TempPathFor(row_rel_, "commit"));
    stdfs::rename(root_ + "/" + row_rel_, root_ + "/" + temp_rel);
    std::ofstream(root_ + "/meta/.commit-2.json")
        << R"({"episode_index": 2, "renames": [[")" << temp_rel << R"(", ")" << row_rel_ << R"("]]})";
  }

  std::string dir_, root_, row_rel_;
};

// Two writers reserving at once: the second cannot see the first's reservation.
TEST_P(ListingFaultTest, AReservationThatCannotBeSeenIsNotTakenAsFree) {
  auto first = internal::EpisodeTransaction::Reserve(DefaultFileSystem(), root_, 0);
  ASSERT_OK(first);
  ASSERT_EQ((*first)->episode_index(), 1);
  FailingListDir fs(root_ + "/meta/episodes", GetParam());
  auto second = internal::EpisodeTransaction::Reserve(&fs, root_, 0);
  if (second.ok()) ADD_FAILURE() << "second writer got N=" << (*second)->episode_index() << " beside N=1";
  ExpectInjected(second.status(), "meta/episodes");
  EXPECT_GE(fs.failed(), 1);
  // Listed, the reservation keeps the next writer off N=1.
  auto third = internal::EpisodeTransaction::Reserve(DefaultFileSystem(), root_, 0);
  ASSERT_OK(third);
  EXPECT_EQ((*third)->episode_index(), 2);
}

// A reader that cannot list meta/ cannot know which episodes a journal hides.
TEST_P(ListingFaultTest, AReaderThatCannotSeeTheJournalsShowsNoTornEpisode) {
  ASSERT_NO_FATAL_FAILURE(TearEpisodeTwo());
  FailingListDir fs(root_ + "/meta", GetParam());
  auto task = Task::Open(root_, {&fs, 1});
  ASSERT_OK(task);
  auto listed = (*task)->ListEpisodes();
  if (listed.ok())
    for (const EpisodeEntry& e : *listed)
      if (e.episode_index == 2) ADD_FAILURE() << "episode 2 shown while its journal is present (its row is missing)";
  ExpectInjected(listed.status(), "meta");
  auto two = (*task)->FindEpisode(2);
  if (two.ok()) ADD_FAILURE() << "FindEpisode(2) answered while its journal is present";
  ExpectInjected(two.status(), "meta");
  // Listed, the journal hides 2.
  auto good = Task::Open(root_);
  ASSERT_OK(good);
  auto shown = (*good)->ListEpisodes();
  ASSERT_OK(shown);
  ASSERT_EQ(shown->size(), 1u);
  EXPECT_EQ(shown->front().episode_index, 1);
}

// Recovery (TaskLock::Acquire) that cannot list meta/ must not go on as if no commit
// had been interrupted.
TEST_P(ListingFaultTest, RecoveryThatCannotSeeTheJournalsStops) {
  ASSERT_NO_FATAL_FAILURE(TearEpisodeTwo());
  FailingListDir fs(root_ + "/meta", GetParam());
  {
    auto lock = internal::TaskLock::Acquire(&fs, root_);  // released at once where it was taken
    ExpectInjected(lock.status(), "meta");
  }
  EXPECT_TRUE(stdfs::exists(root_ + "/meta/.commit-2.json"));
  auto writer = TaskWriter::Open(root_, [&] {
    TaskWriterOptions o = SimulatedRigOptions("pick", testing::TinyRig());
    o.fs = &fs;
    return o;
  }());
  ExpectInjected(writer.status(), "meta");
  // Listed, the journal is rolled forward.
  auto good = internal::TaskLock::Acquire(DefaultFileSystem(), root_);
  ASSERT_OK(good);
  EXPECT_FALSE(stdfs::exists(root_ + "/meta/.commit-2.json"));
  EXPECT_TRUE(stdfs::exists(root_ + "/" + row_rel_));
}

// A push that cannot list the destination's meta/ cannot tell an interrupted push's
// journal (which hides N there until a push finishes it) from none.
TEST_P(ListingFaultTest, APushThatCannotSeeTheDestinationsJournalsStops) {
  const std::string dest = dir_ + "/dest";
  ASSERT_OK(testing::RecordTinyEpisodes(root_, 2));
  ASSERT_OK(PushTask(root_, DefaultFileSystem(), dest));
  // A push killed after sending every file of 2 but before deleting its journal.
  auto two = (*Task::Open(root_))->FindEpisode(2);
  ASSERT_OK(two);
  std::ofstream(dest + "/meta/.push-2.json")
      << R"({"episode_index": 2, "files": [")" << two->data_path << R"("]})";
  FailingListDir fs(dest + "/meta", GetParam());
  auto pushed = PushTask(root_, &fs, dest);
  ASSERT_FALSE(pushed.ok()) << "the push went on without seeing meta/.push-2.json";
  EXPECT_EQ(pushed.status().code(), GetParam()) << pushed.status().ToString();
  EXPECT_THAT(pushed.status().message(), ::testing::HasSubstr(dest + "/meta")) << pushed.status().message();
  // Listed, the push finishes 2 and its journal goes.
  auto resumed = PushTask(root_, DefaultFileSystem(), dest);
  ASSERT_OK(resumed);
  EXPECT_EQ(resumed->resumed, (std::vector<int64_t>{2}));
  EXPECT_FALSE(stdfs::exists(dest + "/meta/.push-2.json"));
}

// Opening a task for writing sweeps the stale temps; a chunk directory it cannot list is
// an error, not a directory without temps.
TEST_P(ListingFaultTest, ASweepThatCannotListADirectoryStops) {
  ASSERT_OK(testing::RecordTinyEpisodes(root_, 1));
  FailingListDir fs(root_ + "/data/chunk-000", GetParam());
  TaskWriterOptions options = SimulatedRigOptions("pick", testing::TinyRig());
  options.fs = &fs;
  auto writer = TaskWriter::Open(root_, options);
  ExpectInjected(writer.status(), "data/chunk-000");
}

INSTANTIATE_TEST_SUITE_P(EioAndEacces, ListingFaultTest,
                         ::testing::Values(StatusCode::kIOError, StatusCode::kPermissionDenied),
                         [](const ::testing::TestParamInfo<StatusCode>& info) {
                           return info.param == StatusCode::kIOError ? std::string("EIO") : std::string("EACCES");
                         });

// A directory that does not exist is "nothing there", as before: a new task has no meta/.
TEST(ListingFault, AMissingDirectoryHoldsNothing) {
  const std::string root = (stdfs::temp_directory_path() / "reel_listing_missing").string();
  stdfs::remove_all(root);
  auto journals = internal::PendingCommits(DefaultFileSystem(), root);
  ASSERT_OK(journals);
  EXPECT_TRUE(journals->empty());
  auto reserved = internal::EpisodeTransaction::Reserve(DefaultFileSystem(), root, 0);
  ASSERT_OK(reserved);
  EXPECT_EQ((*reserved)->episode_index(), 1);
  reserved->reset();
  stdfs::remove_all(root);
}

}  // namespace
}  // namespace reel
