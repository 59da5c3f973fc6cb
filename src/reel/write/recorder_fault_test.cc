// Crash safety of the recorder's commit protocol (include/reel/recorder.h, top comment).
//
// Two kinds of faults are injected at every fault-able file-system call of one commit:
//  * an error (EIO, or an ENOSPC-like IOError) returned by the k-th call: Commit must
//    return a non-OK Status, and after a plain TaskWriter::Open the task is either the
//    snapshot taken before (nothing of the new episode visible, its number recycled)
//    or the snapshot plus the whole new episode;
//  * a crash (the process dies) at the k-th call, simulated in a forked child that
//    calls _exit(): before recovery readers see all or nothing, and after it the task
//    is again all or nothing.
// Each k starts from a fresh copy of the same one-episode task.
#include <arrow/table.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "reel/check.h"
#include "reel/fs.h"
#include "reel/metadata.h"
#include "reel/recorder.h"
#include "reel/simulate.h"
#include "reel/task.h"
#include "testing/fault_fs.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

namespace stdfs = std::filesystem;

// ---- injected faults (testing/fault_fs.h) --------------------------------------------

using testing::FsOp;

enum class Fault { kEIO, kENOSPC, kCrash };
const char* FaultName(Fault f) {
  switch (f) {
    case Fault::kEIO: return "EIO";
    case Fault::kENOSPC: return "ENOSPC";
    case Fault::kCrash: return "crash";
  }
  return "?";
}

constexpr int kCrashExit = 86;

// The calls a fault can hit: every one that writes, syncs, renames or removes a file.
constexpr testing::FsOps kCommitOps =
    testing::Ops({FsOp::kNewWritableFile, FsOp::kAppend, FsOp::kWriteAt, FsOp::kSync, FsOp::kClose, FsOp::kRename,
                  FsOp::kSyncDir, FsOp::kSyncFile, FsOp::kRemoveFile});

// The k-th of those calls (0: none, count only) fails as `fault` says: an IOError naming
// EIO or ENOSPC (a failing Append or WriteAt writes half its data first: a torn write), or
// the end of the process (_exit(kCrashExit); only in a child).
testing::InjectedFault CommitFault(int k, Fault fault) {
  return {.ops = kCommitOps,
          .nth = k,
          .reason = fault == Fault::kENOSPC ? "No space left on device" : "Input/output error",
          .half_write = true,
          .exit_code = fault == Fault::kCrash ? kCrashExit : 0};
}

// ---- task helpers -------------------------------------------------------------------------

using Tree = std::map<std::string, std::string>;  // relative path -> bytes

const char* kLock = "meta/episodes/.lock";
const char* kMarker = "meta/recycled_episode.json";
// N=1 and N=2 with the default chunks_size (contract §2).
const char* kData1 = "data/chunk-000/episode-000.parquet";
const char* kRow1 = "meta/episodes/chunk-000/episode-000.parquet";
const char* kData2 = "data/chunk-000/episode-001.parquet";
const char* kRow2 = "meta/episodes/chunk-000/episode-001.parquet";

bool IsDotPath(const std::string& rel) {
  for (const auto& part : stdfs::path(rel))
    if (part.string().starts_with(".")) return true;
  return false;
}

Tree ReadTree(const std::string& root) {
  Tree out;
  for (const auto& e : stdfs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    const std::string rel = stdfs::relative(e.path(), root).string();
    if (rel == kLock) continue;
    auto bytes = DefaultFileSystem()->ReadFile(e.path().string());
    out[rel] = bytes.ok() ? *bytes : "<unreadable>";
  }
  return out;
}

std::vector<std::string> Keys(const Tree& t, bool dot) {
  std::vector<std::string> out;
  for (const auto& [k, v] : t)
    if (IsDotPath(k) == dot) out.push_back(k);
  return out;
}

SimulateOptions ShortSim() {
  SimulateOptions sim;
  sim.seconds = 0.3;
  sim.fps = 10;
  sim.video_width = 64;  // every video slot of the rig, tiny: the faults are in the files
  sim.video_height = 48;
  return sim;
}

// Episode 2's video files: one per slot of the rig.
std::vector<std::string> Videos2() {
  std::vector<std::string> out;
  for (const VideoSlotOptions& s : RigVideoSlots(ShortSim())) {
    const VideoKind kind = !s.depth ? VideoKind::kRgb
                           : HaveHevc12Encoder() ? VideoKind::kDepthHevc : VideoKind::kDepthFfv1;
    out.push_back("videos/chunk-000/" + s.slot + "/episode-001." + VideoExtension(kind));
  }
  return out;
}

TaskWriterOptions WriterOptions(FileSystem* fs) {
  TaskWriterOptions options = SimulatedRigOptions("pick", ShortSim());
  options.fs = fs;
  return options;
}

// Records one episode through `fs`, `at_commit` injected just before Commit. Returns the
// Commit result; a failure earlier than Commit is reported through ADD_FAILURE and an error
// Status.
Result<CommittedEpisode> RecordOne(const std::string& root, testing::FaultFileSystem* fs, int64_t expect_n,
                                   const testing::InjectedFault& at_commit) {
  auto writer = TaskWriter::Open(root, WriterOptions(fs));
  if (!writer.ok()) {
    ADD_FAILURE() << "Open: " << writer.status().ToString();
    return writer.status();
  }
  auto episode = (*writer)->BeginEpisode();
  if (!episode.ok()) {
    ADD_FAILURE() << "BeginEpisode: " << episode.status().ToString();
    return episode.status();
  }
  EXPECT_EQ((*episode)->episode_index(), expect_n);
  Status st = SimulateEpisode(**episode, ShortSim(), (*episode)->episode_index());
  if (!st.ok()) {
    ADD_FAILURE() << "SimulateEpisode: " << st.ToString();
    return st;
  }
  fs->Inject(at_commit);
  return (*episode)->Commit();
}

// A plain TaskWriter::Open: rolls forward a journal, removes dead writers' temps.
void Recover(const std::string& root, const std::string& what) {
  auto writer = TaskWriter::Open(root, WriterOptions(nullptr));
  EXPECT_OK(writer) << what << ": recovery Open failed";
}

int64_t NextNumber(const std::string& root) {
  auto writer = TaskWriter::Open(root, WriterOptions(nullptr));
  EXPECT_OK(writer);
  if (!writer.ok()) return -1;
  auto episode = (*writer)->BeginEpisode();
  EXPECT_OK(episode);
  if (!episode.ok()) return -1;
  const int64_t n = (*episode)->episode_index();
  EXPECT_OK((*episode)->Abort());
  return n;
}

std::string ErrorFindings(const std::string& root) {
  auto report = CheckTask(root);
  if (!report.ok()) return "CheckTask failed: " + report.status().ToString();
  std::string out;
  for (const Finding& f : report->findings)
    if (f.severity == Severity::kError) out += "  " + f.rule + " " + f.path + ": " + f.message + "\n";
  return out;
}

std::vector<int64_t> VisibleEpisodes(const std::string& root) {
  std::vector<int64_t> out;
  auto task = Task::Open(root);
  EXPECT_OK(task);
  if (!task.ok()) return out;
  auto episodes = (*task)->ListEpisodes();
  EXPECT_OK(episodes);
  if (!episodes.ok()) return out;
  for (const EpisodeEntry& e : *episodes) out.push_back(e.episode_index);
  return out;
}

std::optional<int64_t> StatsCount(const std::string& stats_text, const std::string& block) {
  auto stats = ParseStatsJson(stats_text, "stats.json");
  if (!stats.ok()) return std::nullopt;
  for (const auto& [name, b] : stats->blocks)
    if (name == block) return b.count;
  return std::nullopt;
}

// ---- fixture ------------------------------------------------------------------------

class RecorderFaultTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string tmpl = JoinPath(::testing::TempDir(), "reel_recorder_fault.XXXXXX");
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = new std::string(tmpl);
    base_ = new std::string(JoinPath(*dir_, "base"));
    // One good episode, recorded through the plain file system.
    testing::FaultFileSystem plain;
    auto done = RecordOne(*base_, &plain, 1, CommitFault(0, Fault::kEIO));
    ASSERT_OK(done);
    snapshot_ = new Tree(ReadTree(*base_));
    ASSERT_TRUE(snapshot_->count(kData1) && snapshot_->count(kRow1));
    ASSERT_TRUE(Keys(*snapshot_, /*dot=*/true).empty())
        << ::testing::PrintToString(Keys(*snapshot_, true));
    // K: the fault-able calls of one clean commit (counting pass).
    const std::string count_dir = JoinPath(*dir_, "count");
    stdfs::copy(*base_, count_dir, stdfs::copy_options::recursive);
    testing::FaultFileSystem counter;
    auto second = RecordOne(count_dir, &counter, 2, CommitFault(0, Fault::kEIO));
    ASSERT_OK(second);
    calls_ = counter.counted();
    log_ = new std::vector<std::string>(counter.calls());
  }
  static void TearDownTestSuite() {
    if (dir_) stdfs::remove_all(*dir_);
    delete dir_;
    delete base_;
    delete snapshot_;
    delete log_;
    dir_ = base_ = nullptr;
    snapshot_ = nullptr;
    log_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(snapshot_, nullptr) << "suite setup failed";
    ASSERT_GT(calls_, 10) << "the counting pass saw too few calls: " << ::testing::PrintToString(*log_);
  }

  // A fresh copy of the one-episode task.
  std::string Fresh(const std::string& name) {
    const std::string root = JoinPath(*dir_, name);
    stdfs::remove_all(root);
    stdfs::copy(*base_, root, stdfs::copy_options::recursive);
    return root;
  }

  // Asserts all-or-nothing after recovery; returns whether N=2 was committed.
  // `may_remain` is a dotfile the failing call itself was meant to remove.
  bool ExpectAllOrNothing(const std::string& root, const std::string& what,
                          const std::string& may_remain = "") {
    const Tree now = ReadTree(root);
    std::vector<std::string> dots;
    for (const std::string& d : Keys(now, true))
      if (JoinPath(root, d) != may_remain) dots.push_back(d);
    if (strict_) {
      EXPECT_TRUE(dots.empty()) << what << ": dotfiles left after recovery: " << ::testing::PrintToString(dots);
    } else {
      // Known bugs (see the skipped *Strict tests): temps of this live process and
      // WriteFileAtomic temps are left. Journals never are.
      for (const std::string& d : dots)
        EXPECT_TRUE(d.find(".reel-") != std::string::npos || d.find(".tmp") != std::string::npos)
            << what << ": unexpected dotfile left after recovery: " << d;
      EXPECT_TRUE(now.count("meta/.commit-2.json") == 0) << what << ": journal left after recovery";
    }

    bool committed = now.count(kData2) > 0 || now.count(kRow2) > 0;
    for (const std::string& v : Videos2()) committed = committed || now.count(v) > 0;
    std::set<std::string> expect_files;
    for (const std::string& k : Keys(*snapshot_, false)) expect_files.insert(k);
    if (committed) {
      expect_files.insert(kData2);
      expect_files.insert(kRow2);
      for (const std::string& v : Videos2()) expect_files.insert(v);
      if (!strict_ && now.count(kMarker)) expect_files.insert(kMarker);  // known bug, see *Strict
    } else if (now.count(kMarker)) {
      expect_files.insert(kMarker);
      EXPECT_THAT(now.at(kMarker), ::testing::HasSubstr("\"episode_index\":2"))
          << what << ": recycled marker does not name N=2: " << now.at(kMarker);
    }
    const auto visible = Keys(now, false);
    EXPECT_EQ(std::set<std::string>(visible.begin(), visible.end()), expect_files)
        << what << (committed ? " (committed)" : " (not committed)");

    // The previously committed episode never changes.
    EXPECT_TRUE(now.count(kData1) && now.at(kData1) == snapshot_->at(kData1)) << what << ": " << kData1 << " changed";
    EXPECT_TRUE(now.count(kRow1) && now.at(kRow1) == snapshot_->at(kRow1)) << what << ": " << kRow1 << " changed";

    auto task = Task::Open(root);
    EXPECT_OK(task) << what;
    if (committed) {
      EXPECT_TRUE(now.count(kData2) && now.count(kRow2)) << what << ": half an episode";
      EXPECT_EQ(VisibleEpisodes(root), (std::vector<int64_t>{1, 2})) << what;
      if (task.ok()) EXPECT_EQ((*task)->info().total_episodes, 2) << what;
      EXPECT_EQ(StatsCount(now.at("meta/stats.json"), "observation.left_glove"), 6) << what;  // 3 + 3 rows
      if (task.ok()) {
        auto e = (*task)->FindEpisode(2);
        EXPECT_OK(e) << what;
        if (e.ok()) {
          auto table = (*task)->ReadData(*e, {"episode_index"});
          EXPECT_OK(table) << what;
          if (table.ok()) EXPECT_EQ((*table)->num_rows(), 3) << what;
        }
      }
    } else {
      // Nothing of N=2: every task file is byte-identical to the snapshot.
      for (const auto& [k, bytes] : *snapshot_)
        EXPECT_TRUE(now.count(k) && now.at(k) == bytes) << what << ": " << k << " changed";
      EXPECT_EQ(VisibleEpisodes(root), (std::vector<int64_t>{1})) << what;
    }
    const std::string errors = ErrorFindings(root);
    EXPECT_TRUE(errors.empty()) << what << ": reel::CheckTask errors:\n" << errors;
    return committed;
  }

  static std::string* dir_;
  static bool strict_;
  void CrashLoop();
 public:
  static std::vector<std::string>* log_for_helpers() { return log_; }
 protected:
  static std::string* base_;
  static Tree* snapshot_;
  static int calls_;
  static std::vector<std::string>* log_;
};

// Which calls (1-based) to fail: every call except the parquet writer's many Appends, of
// which the first and last of each file and every 16th are kept (all of them with
// REEL_FAULT_ALL_CALLS=1); plus K+1 (no fault).
std::vector<int> FaultPoints() {
  const std::vector<std::string>& log = *RecorderFaultTest::log_for_helpers();
  const bool all = std::getenv("REEL_FAULT_ALL_CALLS") != nullptr;
  std::vector<int> out;
  for (size_t i = 0; i < log.size(); ++i) {
    const bool append = log[i].starts_with("Append ");
    const bool first = append && (i == 0 || log[i - 1] != log[i]);
    const bool last = append && (i + 1 == log.size() || log[i + 1] != log[i]);
    if (all || !append || first || last || i % 16 == 0) out.push_back(static_cast<int>(i) + 1);
  }
  out.push_back(static_cast<int>(log.size()) + 1);
  return out;
}

std::string* RecorderFaultTest::dir_ = nullptr;
bool RecorderFaultTest::strict_ = false;
std::string* RecorderFaultTest::base_ = nullptr;
Tree* RecorderFaultTest::snapshot_ = nullptr;
int RecorderFaultTest::calls_ = 0;
std::vector<std::string>* RecorderFaultTest::log_ = nullptr;

TEST_F(RecorderFaultTest, CountingPassCoversTheCommitProtocol) {
  // Sanity of the harness: the counted commit writes temps, a journal, renames, syncs dirs
  // and removes the journal.
  bool journal_written = false, renamed = false, dir_synced = false, journal_removed = false;
  for (const std::string& line : *log_) {
    if (line.starts_with("NewWritableFile ") && line.find("/meta/") != std::string::npos &&
        line.find(".commit-2.json") != std::string::npos)
      journal_written = true;
    if (line.starts_with("Rename ")) renamed = true;
    if (line.starts_with("SyncDir ")) dir_synced = true;
    if (line.starts_with("RemoveFile ") && line.ends_with("/meta/.commit-2.json")) journal_removed = true;
  }
  EXPECT_TRUE(journal_written && renamed && dir_synced && journal_removed) << ::testing::PrintToString(*log_);
}

// Error faults: Commit returns a Status, never throws or crashes; recovery is all or nothing.
void RunErrorFaults(Fault fault, int calls,
                    const std::function<std::string(const std::string&)>& fresh,
                    const std::function<bool(const std::string&, const std::string&, const std::string&)>& check) {
  int committed = 0, rolled_back = 0;
  for (int k : FaultPoints()) {
    const std::string root = fresh("k" + std::to_string(k));
    testing::FaultFileSystem fs;
    std::optional<Result<CommittedEpisode>> done;
    try {
      done.emplace(RecordOne(root, &fs, 2, CommitFault(k, fault)));
    } catch (const std::exception& e) {
      ADD_FAILURE() << "k=" << k << ": Commit threw " << e.what();
      continue;
    } catch (...) {
      ADD_FAILURE() << "k=" << k << ": Commit threw";
      continue;
    }
    std::string what = std::string(FaultName(fault)) + " at call " + std::to_string(k) + "/" +
                       std::to_string(calls);
    if (fs.fired()) what += " (" + std::string(testing::FsOpName(*fs.failed_op())) + " " + fs.failed_path() + ")";
    if (k > calls) {
      EXPECT_FALSE(fs.fired()) << what;
      EXPECT_TRUE(done->ok()) << what << ": " << done->status().ToString();
    } else {
      EXPECT_TRUE(fs.fired()) << what << ": the fault was never reached";
      // Removing the reservation / recycled marker after the commit is best effort.
      if (!(*fs.failed_op() == FsOp::kRemoveFile && done->ok()))
        EXPECT_FALSE(done->ok()) << what << ": Commit returned OK although a call failed";
    }
    const bool remove_failed = fs.fired() && *fs.failed_op() == FsOp::kRemoveFile;
    const std::string may_remain = remove_failed ? fs.failed_path() : std::string();
    Recover(root, what);
    const bool is_committed = check(root, what, may_remain);
    if (done->ok()) EXPECT_TRUE(is_committed) << what << ": Commit returned OK but N=2 is not there";
    EXPECT_EQ(NextNumber(root), is_committed ? 3 : 2) << what;
    (is_committed ? committed : rolled_back)++;
    stdfs::remove_all(root);
  }
  // Both outcomes occur: faults before the journal roll back, faults after roll forward.
  EXPECT_GT(committed, 1);
  EXPECT_GT(rolled_back, 1);
}

TEST_F(RecorderFaultTest, CommitWithEIOAtEveryCallIsAllOrNothing) {
  RunErrorFaults(Fault::kEIO, calls_, [&](const std::string& n) { return Fresh("eio-" + n); },
                 [&](const std::string& r, const std::string& w, const std::string& m) {
                   return ExpectAllOrNothing(r, w, m);
                 });
}

TEST_F(RecorderFaultTest, CommitWithENOSPCAtEveryCallIsAllOrNothing) {
  RunErrorFaults(Fault::kENOSPC, calls_, [&](const std::string& n) { return Fresh("nospc-" + n); },
                 [&](const std::string& r, const std::string& w, const std::string& m) {
                   return ExpectAllOrNothing(r, w, m);
                 });
}

// The same with the dotfile and marker checks on.
TEST_F(RecorderFaultTest, CommitWithEIOAtEveryCallIsAllOrNothingStrict) {
  strict_ = true;
  RunErrorFaults(Fault::kEIO, calls_, [&](const std::string& n) { return Fresh("strict-" + n); },
                 [&](const std::string& r, const std::string& w, const std::string& m) {
                   return ExpectAllOrNothing(r, w, m);
                 });
  strict_ = false;
}

TEST_F(RecorderFaultTest, FailedBeginEpisodeLeavesNoReservation) {
  strict_ = true;
  // The reservation dotfile is written with NewWritableFile, Append, Sync, Close.
  for (int k = 1; k <= 4; ++k) {
    const std::string root = Fresh("begin-" + std::to_string(k));
    const std::string what = "EIO at reservation call " + std::to_string(k);
    {
      testing::FaultFileSystem fs;
      auto writer = TaskWriter::Open(root, WriterOptions(&fs));
      ASSERT_OK(writer);
      fs.Inject(CommitFault(k, Fault::kEIO));
      auto episode = (*writer)->BeginEpisode();
      EXPECT_FALSE(episode.ok()) << what;
      EXPECT_TRUE(fs.fired()) << what;
    }
    Recover(root, what);
    ExpectAllOrNothing(root, what);
    EXPECT_EQ(NextNumber(root), 2) << what << ": the failed reservation consumed N=2";
    stdfs::remove_all(root);
  }
  strict_ = false;
}

// ---- crashes (forked child, _exit at the k-th call) ---------------------------------------

// Runs RecordOne(root, crash at call k) in a child; returns its exit status (-1: hung).
int CrashChild(const std::string& root, int k) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    testing::FaultFileSystem fs;
    auto writer = TaskWriter::Open(root, WriterOptions(&fs));
    if (!writer.ok()) ::_exit(2);
    auto episode = (*writer)->BeginEpisode();
    if (!episode.ok() || (*episode)->episode_index() != 2) ::_exit(3);
    if (!SimulateEpisode(**episode, ShortSim(), 2).ok()) ::_exit(4);
    fs.Inject(CommitFault(k, Fault::kCrash));
    auto done = (*episode)->Commit();
    ::_exit(done.ok() ? 0 : 5);
  }
  if (pid < 0) return -2;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool JournalPresent(const std::string& root) {
  return stdfs::exists(JoinPath(root, "meta/.commit-2.json"));
}

TEST_F(RecorderFaultTest, CrashAtEveryCallIsAllOrNothing) { CrashLoop(); }

TEST_F(RecorderFaultTest, CrashAtEveryCallIsAllOrNothingStrict) {
  strict_ = true;
  CrashLoop();
  strict_ = false;
}

void RecorderFaultTest::CrashLoop() {
  int committed = 0, rolled_back = 0;
  for (int k : FaultPoints()) {
    const std::string root = Fresh("crash-" + std::to_string(k));
    const std::string what = "crash at call " + std::to_string(k) + "/" + std::to_string(calls_) +
                             " (" + (k <= calls_ ? (*log_)[k - 1] : std::string("none")) + ")";
    const int rc = CrashChild(root, k);
    ASSERT_EQ(rc, k <= calls_ ? kCrashExit : 0) << what;
    // Before recovery: readers see N=2 whole or not at all.
    const bool journal = JournalPresent(root);
    const std::vector<int64_t> seen = VisibleEpisodes(root);
    if (journal) {
      EXPECT_EQ(seen, (std::vector<int64_t>{1})) << what << ": an episode whose journal exists is visible";
    }
    const std::string errors = ErrorFindings(root);
    EXPECT_TRUE(errors.empty()) << what << " (before recovery, journal " << (journal ? "present" : "absent")
                                << "): CheckTask errors:\n" << errors;
    // Recovery (plain Open) then all or nothing; a decided commit is never lost.
    Recover(root, what);
    const bool is_committed = ExpectAllOrNothing(root, what);
    if (journal) EXPECT_TRUE(is_committed) << what << ": the journal existed but N=2 was rolled back";
    if (k > calls_) EXPECT_TRUE(is_committed) << what;
    EXPECT_EQ(NextNumber(root), is_committed ? 3 : 2) << what;
    (is_committed ? committed : rolled_back)++;
    stdfs::remove_all(root);
  }
  EXPECT_GT(committed, 1);
  EXPECT_GT(rolled_back, 1);
}

// A second recorder, opened before another one crashed after writing its journal, must not
// take the crashed commit's number ("two recorders never share a number").
TEST_F(RecorderFaultTest, RecorderOpenBeforeACrashAfterTheJournalDoesNotReuseItsNumber) {
  // The first Rename is the first rename of the journaled commit (the journal itself is
  // written with WriteFileAtomic: its Rename comes first). Crash on the 2nd Rename: the
  // journal is in place and the episode's renames have not completed.
  int k = 0, renames = 0;
  for (int i = 0; i < calls_; ++i)
    if ((*log_)[i].starts_with("Rename ") && ++renames == 2) k = i + 1;
  ASSERT_GT(k, 0) << ::testing::PrintToString(*log_);
  const std::string root = Fresh("second-recorder");
  auto other = TaskWriter::Open(root, WriterOptions(nullptr));  // opened before the crash
  ASSERT_OK(other);
  ASSERT_EQ(CrashChild(root, k), kCrashExit);
  ASSERT_TRUE(JournalPresent(root)) << "the crash point is before the journal";
  auto episode = (*other)->BeginEpisode();
  ASSERT_OK(episode);
  EXPECT_NE((*episode)->episode_index(), 2)
      << "a running recorder chose N=2 while meta/.commit-2.json (a decided commit) exists";
  EXPECT_OK((*episode)->Abort());
  stdfs::remove_all(root);
}

}  // namespace
}  // namespace reel
