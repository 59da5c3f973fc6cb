// The episode index is written by a temp renamed over it where the file system says Rename
// is atomic (FileSystem::Capabilities), and in place where it does not (an object store,
// whose Rename would copy and delete, and whose objects appear whole when written).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>

#include "read/episode_index.h"
#include "reel/fs.h"
#include "reel/task.h"
#include "testing/fault_fs.h"
#include "testing/tiny_rig.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

namespace stdfs = std::filesystem;

// An object store's stand-in: renames work (by copy, say) but are not atomic, directories
// are prefixes without times, and a listing carries each file's size and time (a listing
// page's), which is what the index stamps files by there.
class NonAtomicRenameFs final : public testing::FaultFileSystem {
 public:
  NonAtomicRenameFs() { SetCapabilities({.atomic_rename = false, .locks = false, .directories = false}); }
  Result<std::vector<DirEntry>> ListDir(const std::string& path) override {
    REEL_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, FaultFileSystem::ListDir(path));
    for (DirEntry& e : entries) {
      if (e.type != FileType::kFile) continue;
      REEL_ASSIGN_OR_RETURN(FileInfo info, target()->Stat(JoinPath(path, e.name)));
      e.size = info.size;
      e.mtime_ns = info.mtime_ns;
    }
    return entries;
  }
};

class EpisodeIndexStoreTest : public ::testing::Test {
 protected:
  // 32 episodes (the rows' cache starts there), recorded once; each test takes a copy.
  static void SetUpTestSuite() {
    std::string tmpl = (stdfs::temp_directory_path() / "reel_index_store.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    recorded_ = tmpl;
    ASSERT_OK(reel::testing::RecordTinyEpisodes(recorded_ + "/t", 32));
    stdfs::remove(recorded_ + "/t/" + internal::kEpisodeIndexPath);
    stdfs::remove(recorded_ + "/t/" + internal::kListingIndexPath);
  }
  static void TearDownTestSuite() { stdfs::remove_all(recorded_); }
  void SetUp() override {
    std::string tmpl = (stdfs::temp_directory_path() / "reel_index_store.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    stdfs::copy(recorded_ + "/t", dir_ + "/t", stdfs::copy_options::recursive);
    // Settled: the caches remember only files and directories older than a few seconds.
    const auto past = stdfs::file_time_type::clock::now() - std::chrono::hours(1);
    for (const auto& e : stdfs::recursive_directory_iterator(dir_ + "/t")) stdfs::last_write_time(e.path(), past);
    stdfs::last_write_time(dir_ + "/t", past);
  }
  void TearDown() override { stdfs::remove_all(dir_); }

  // Lists the task and reads every episode's row through `fs` (the index's kUpdate path:
  // the rows' cache is used from 32 episodes on).
  void ReadRows(FileSystem* fs) {
    auto task = Task::Open(dir_ + "/t", {.fs = fs});
    ASSERT_OK(task);
    auto episodes = (*task)->ListEpisodes();
    ASSERT_OK(episodes);
    ASSERT_EQ(episodes->size(), 32u);
    for (const auto& row : (*task)->ReadEpisodeRows(*episodes)) ASSERT_TRUE(row.ok()) << row.status().ToString();
  }
  static inline std::string recorded_;
  std::string dir_;
};

TEST_F(EpisodeIndexStoreTest, WrittenOnALocalDisk) {
  ReadRows(DefaultFileSystem());
  EXPECT_TRUE(stdfs::exists(dir_ + "/t/" + internal::kEpisodeIndexPath));
  EXPECT_TRUE(stdfs::exists(dir_ + "/t/" + internal::kListingIndexPath));
}

TEST_F(EpisodeIndexStoreTest, WrittenInPlaceWhereRenameIsNotAtomic) {
  NonAtomicRenameFs fs;
  fs.Log(testing::Ops({testing::FsOp::kRename}));
  ReadRows(&fs);
  EXPECT_TRUE(stdfs::exists(dir_ + "/t/" + internal::kEpisodeIndexPath));
  EXPECT_TRUE(fs.calls().empty()) << fs.calls().front();
  for (const auto& e : stdfs::directory_iterator(dir_ + "/t/meta"))
    EXPECT_FALSE(e.path().filename().string().ends_with(".tmp")) << e.path();
  // And read back: a second reader of the store finds every row remembered (no row file opened).
  NonAtomicRenameFs again;
  again.Log(testing::Ops({testing::FsOp::kOpenRandomAccess, testing::FsOp::kReadFile}));
  ReadRows(&again);
  for (const std::string& call : again.calls())
    EXPECT_THAT(call, ::testing::Not(::testing::HasSubstr("/meta/episodes/"))) << call;
}

// Renames onto meta/.episode_index.parquet (each is one write of the whole index) while
// `read` lists the task and reads rows and schemas.
int IndexWrites(const std::string& root, const std::function<void(const Task&, const std::vector<EpisodeEntry>&)>& read) {
  testing::FaultFileSystem fs;
  fs.Log(testing::Ops({testing::FsOp::kRename}));
  auto task = Task::Open(root, {.fs = &fs});
  EXPECT_OK(task);
  auto episodes = (*task)->ListEpisodes();
  EXPECT_OK(episodes);
  read(**task, *episodes);
  int writes = 0;
  for (const std::string& call : fs.calls())
    writes += call.ends_with(std::string("/") + internal::kEpisodeIndexPath) ? 1 : 0;
  return writes;
}

// A first listing of a task that shows rows and schemas (reel ls, Task.episodes(), export)
// writes the index once (issue 31: it wrote it once for the rows, then again for the schemas).
TEST_F(EpisodeIndexStoreTest, AFirstListingWritesTheIndexOnce) {
  const std::string root = dir_ + "/t";
  EXPECT_EQ(IndexWrites(root, [](const Task& task, const std::vector<EpisodeEntry>& episodes) {
              auto [rows, schemas] = task.ReadRowsAndSchemas(episodes, {"length"});
              ASSERT_EQ(rows.size(), 32u);
              for (size_t i = 0; i < rows.size(); ++i) {
                ASSERT_OK(rows[i]);
                ASSERT_OK(schemas[i]);
              }
            }),
            1);
  // Warm, nothing changed: nothing written.
  EXPECT_EQ(IndexWrites(root, [](const Task& task, const std::vector<EpisodeEntry>& episodes) {
              (void)task.ReadRowsAndSchemas(episodes, {"length"});
            }),
            0);
}

// Visiting rows and schemas (reel ls, Task.episodes()) gives what ReadRowsAndSchemas gives, in
// order, writes the index once however many batches it takes, and stops at the visitor's error.
TEST_F(EpisodeIndexStoreTest, VisitingGivesEveryEpisodeInOrderAndWritesTheIndexOnce) {
  const std::string root = dir_ + "/t";
  std::vector<int64_t> seen;
  EXPECT_EQ(IndexWrites(root,
                        [&](const Task& task, const std::vector<EpisodeEntry>& episodes) {
                          Status st = task.VisitRowsAndSchemas(
                              episodes, {"length"}, [&](size_t first, auto rows, auto schemas) {
                                EXPECT_EQ(first, seen.size());
                                EXPECT_EQ(rows.size(), schemas.size());
                                for (size_t j = 0; j < rows.size(); ++j) {
                                  EXPECT_TRUE(rows[j].ok() && schemas[j].ok());
                                  EXPECT_EQ(rows[j]->episode_index, episodes[first + j].episode_index);
                                  seen.push_back(rows[j]->episode_index);
                                }
                                return Status::OK();
                              });
                          EXPECT_OK(st);
                        }),
            1);
  ASSERT_EQ(seen.size(), 32u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  auto task = Task::Open(root);
  ASSERT_OK(task);
  auto episodes = (*task)->ListEpisodes();
  ASSERT_OK(episodes);
  int calls = 0;
  Status st = (*task)->VisitRowsAndSchemas(*episodes, {}, [&](size_t, auto, auto) {
    ++calls;
    return Status::Invalid("stop");
  });
  EXPECT_EQ(st.code(), StatusCode::kInvalid);
  EXPECT_EQ(calls, 1);
}

// Visiting rows alone (reel info) gives every row in order and opens no data file: no
// footer is read, first listing or warm.
TEST_F(EpisodeIndexStoreTest, VisitingRowsAloneOpensNoDataFile) {
  for (int pass = 0; pass < 2; ++pass) {
    testing::FaultFileSystem fs;
    fs.Log(testing::Ops({testing::FsOp::kOpenRandomAccess, testing::FsOp::kReadFile}));
    auto task = Task::Open(dir_ + "/t", {.fs = &fs});
    ASSERT_OK(task);
    auto episodes = (*task)->ListEpisodes();
    ASSERT_OK(episodes);
    std::vector<int64_t> seen;
    Status st = (*task)->VisitEpisodeRows(*episodes, {"length"}, [&](size_t first, auto rows) {
      EXPECT_EQ(first, seen.size());
      for (const auto& row : rows) {
        EXPECT_OK(row);
        if (row.ok()) seen.push_back(row->episode_index);
      }
      return Status::OK();
    });
    EXPECT_OK(st);
    ASSERT_EQ(seen.size(), 32u) << "pass " << pass;
    EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
    for (const std::string& call : fs.calls())
      EXPECT_THAT(call, ::testing::Not(::testing::HasSubstr("/data/"))) << "pass " << pass << ": " << call;
  }
}

// Stats of the episodes' own files (rows and data) while a Task opened on `root` lists the
// task and reads every row and data schema, by the directory they are in.
struct FileStats {
  int rows = 0;  // under meta/episodes/
  int data = 0;  // under data/
};
FileStats StatsOfEpisodeFiles(const std::string& root, bool listing_cache = true) {
  testing::FaultFileSystem fs;
  fs.Log(testing::Ops({testing::FsOp::kStat}));
  auto task = Task::Open(root, {.fs = &fs, .listing_cache = listing_cache});
  EXPECT_OK(task);
  auto episodes = (*task)->ListEpisodes();
  EXPECT_OK(episodes);
  (void)(*task)->ReadRowsAndSchemas(*episodes, {"length"});
  FileStats out;
  for (const std::string& call : fs.calls()) {
    if (!call.ends_with(".parquet")) continue;
    out.rows += call.find("/meta/episodes/") != std::string::npos ? 1 : 0;
    out.data += call.find("/data/") != std::string::npos ? 1 : 0;
  }
  return out;
}

// Episode 1's episodes row file.
stdfs::path FirstRowFile(const std::string& root) {
  auto task = Task::Open(root);
  EXPECT_OK(task);
  auto episodes = (*task)->ListEpisodes();
  EXPECT_TRUE(episodes.ok() && !episodes->empty());
  return root + "/" + episodes->front().row_path;
}

// Opening a task whose directories are as the index remembers them stats no episode file
// (issue 31: 200,000 stats opened a 100,000-episode task; its cold `reel info` took 1.5 s).
TEST_F(EpisodeIndexStoreTest, AnUnchangedTaskOpensWithoutAStatPerFile) {
  const std::string root = dir_ + "/t";
  const FileStats cold = StatsOfEpisodeFiles(root);
  EXPECT_GE(cold.rows, 32);
  EXPECT_GE(cold.data, 32);
  const FileStats warm = StatsOfEpisodeFiles(root);
  EXPECT_EQ(warm.rows, 0);
  EXPECT_EQ(warm.data, 0);
}

// A file replaced the contract's way (a temp renamed into place) moves its directory's time:
// that directory's files are stat-ed again, and the others are not.
TEST_F(EpisodeIndexStoreTest, AReplacedFileIsStatedAgainWithItsDirectory) {
  const std::string root = dir_ + "/t";
  (void)StatsOfEpisodeFiles(root);
  const stdfs::path row = FirstRowFile(root);
  stdfs::copy_file(row, row.parent_path() / ".replace.tmp");
  stdfs::rename(row.parent_path() / ".replace.tmp", row);
  const auto settled = stdfs::file_time_type::clock::now() - std::chrono::minutes(30);
  stdfs::last_write_time(row, settled);
  stdfs::last_write_time(row.parent_path(), settled);
  const FileStats after = StatsOfEpisodeFiles(root);
  EXPECT_EQ(after.rows, 32) << "every row file of the directory that changed";
  EXPECT_EQ(after.data, 0);
}

// A file rewritten in place (which no contract writer does) keeps its directory's time, so
// a listing trusts the stamps remembered there; a Task without the listing cache (reel
// check, push) stats every file and reads the rewritten one.
TEST_F(EpisodeIndexStoreTest, AFileRewrittenInPlaceIsCaughtWithoutTheListingCache) {
  const std::string root = dir_ + "/t";
  (void)StatsOfEpisodeFiles(root);
  const stdfs::path row = FirstRowFile(root);
  const auto dir_time = stdfs::last_write_time(row.parent_path());
  {
    std::ofstream rewrite(row, std::ios::binary | std::ios::trunc);
    rewrite << "not parquet";
  }
  ASSERT_EQ(stdfs::last_write_time(row.parent_path()), dir_time);
  auto fresh = Task::Open(root, {.listing_cache = false});
  ASSERT_OK(fresh);
  auto listed = (*fresh)->ListEpisodes();
  ASSERT_OK(listed);
  auto rows = (*fresh)->ReadEpisodeRows(*listed, {"length"});
  ASSERT_EQ(rows.size(), 32u);
  EXPECT_FALSE(rows.front().ok()) << "the rewritten file is read, not the remembered row";
  const FileStats checked = StatsOfEpisodeFiles(root, /*listing_cache=*/false);
  EXPECT_GE(checked.rows, 32);
  // The correction was saved: a listing with the cache reads the rewritten file.
  auto listing = Task::Open(root);
  ASSERT_OK(listing);
  auto again = (*listing)->ListEpisodes();
  ASSERT_OK(again);
  EXPECT_FALSE((*listing)->ReadEpisodeRows(*again, {"length"}).front().ok());
}

// Without the listing cache (reel check, which must change nothing) a Task writes the index
// only to correct a file rewritten in place: not when there is none, nor when it is stale.
TEST_F(EpisodeIndexStoreTest, ATaskWithoutTheListingCacheWritesNoIndex) {
  const std::string root = dir_ + "/t";
  (void)StatsOfEpisodeFiles(root, /*listing_cache=*/false);
  EXPECT_FALSE(stdfs::exists(root + "/" + internal::kEpisodeIndexPath));
  EXPECT_FALSE(stdfs::exists(root + "/" + internal::kListingIndexPath));
  (void)StatsOfEpisodeFiles(root);
  const auto written = stdfs::last_write_time(root + "/" + internal::kEpisodeIndexPath);
  const stdfs::path row = FirstRowFile(root);  // replaced by rename: its directory moves on
  stdfs::copy_file(row, row.parent_path() / ".replace.tmp");
  stdfs::rename(row.parent_path() / ".replace.tmp", row);
  const auto settled = stdfs::file_time_type::clock::now() - std::chrono::minutes(30);
  stdfs::last_write_time(row, settled);
  stdfs::last_write_time(row.parent_path(), settled);
  (void)StatsOfEpisodeFiles(root, /*listing_cache=*/false);
  EXPECT_EQ(stdfs::last_write_time(root + "/" + internal::kEpisodeIndexPath), written);
}

}  // namespace
}  // namespace reel
