// FileSystem: the POSIX implementation, path helpers, and WriteFileAtomic and
// ReplaceFileAcross (io/copy_file.h) under injected faults.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <ctime>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "io/copy_file.h"
#include "reel/fs.h"
#include "testing/fault_fs.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

// ---- injected faults (testing/fault_fs.h) ---------------------------------------

using testing::FsOp;
using testing::FsOpName;

// The `n`-th call of `op` fails with IOError; a failing Append writes half its data first
// (a torn write).
testing::InjectedFault FailNth(FsOp op, int n) { return {.ops = testing::Ops({op}), .nth = n, .half_write = true}; }

// ---- fixture ------------------------------------------------------------------------

class FsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = JoinPath(::testing::TempDir(), "reel_fs_test.XXXXXX");
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Read(const std::string& path) {
    auto r = DefaultFileSystem()->ReadFile(path);
    return r.ok() ? *r : "<" + r.status().ToString() + ">";
  }
  std::vector<std::string> Names() {
    std::vector<std::string> names;
    auto entries = DefaultFileSystem()->ListDir(dir_);
    EXPECT_OK(entries);
    if (entries.ok())
      for (const auto& e : *entries) names.push_back(e.name);
    std::sort(names.begin(), names.end());
    return names;
  }

  std::string dir_;
};

TEST_F(FsTest, WriteFileAtomicReplacesContents) {
  const std::string path = JoinPath(dir_, "info.json");
  testing::FaultFileSystem fs;
  ASSERT_OK(WriteFileAtomic(&fs, path, "first"));
  EXPECT_EQ(Read(path), "first");
  ASSERT_OK(WriteFileAtomic(&fs, path, "second, longer"));
  EXPECT_EQ(Read(path), "second, longer");
  ASSERT_OK(WriteFileAtomic(&fs, path, ""));
  EXPECT_EQ(Read(path), "");
  EXPECT_EQ(Names(), std::vector<std::string>{"info.json"});
}

TEST_F(FsTest, WriteFileAtomicFollowsTheCommitRecipe) {
  const std::string path = JoinPath(dir_, "stats.json");
  testing::FaultFileSystem fs;
  fs.Inject({.ops = testing::kWriteOps, .nth = 0});  // log every change, fail none
  ASSERT_OK(WriteFileAtomic(&fs, path, "{}"));
  auto log = fs.calls();
  ASSERT_EQ(log.size(), 6u) << ::testing::PrintToString(log);
  // A dotfile beside the target, synced before the rename, then the directory synced.
  const std::string tmp = log[0].substr(std::string("NewWritableFile ").size());
  EXPECT_EQ(DirName(tmp), dir_);
  EXPECT_EQ(BaseName(tmp)[0], '.') << tmp;
  EXPECT_NE(BaseName(tmp), ".stats.json");
  EXPECT_EQ(log[1], "Append " + tmp);
  EXPECT_EQ(log[2], "Sync " + tmp);
  EXPECT_EQ(log[3], "Close " + tmp);
  EXPECT_EQ(log[4], "Rename " + tmp + " -> " + path);
  EXPECT_EQ(log[5], "SyncDir " + dir_);
}

TEST_F(FsTest, WriteFileAtomicFailureBeforeRenameKeepsOldContents) {
  const std::string path = JoinPath(dir_, "info.json");
  for (FsOp op : {FsOp::kNewWritableFile, FsOp::kAppend, FsOp::kSync, FsOp::kClose, FsOp::kRename}) {
    ASSERT_OK(WriteFileAtomic(DefaultFileSystem(), path, "old contents"));
    testing::FaultFileSystem fs;
    fs.Inject(FailNth(op, 1));
    Status st = WriteFileAtomic(&fs, path, "new contents that are longer");
    EXPECT_FALSE(st.ok()) << FsOpName(op);
    EXPECT_EQ(fs.count(op), 1) << FsOpName(op) << " was never reached";
    EXPECT_EQ(Read(path), "old contents") << FsOpName(op);
    EXPECT_EQ(Names(), std::vector<std::string>{"info.json"}) << FsOpName(op) << ": temp file left";
  }
}

TEST_F(FsTest, WriteFileAtomicFailureOnAFreshPathCreatesNothing) {
  const std::string path = JoinPath(dir_, "tasks.jsonl");
  for (FsOp op : {FsOp::kNewWritableFile, FsOp::kAppend, FsOp::kSync, FsOp::kClose, FsOp::kRename}) {
    testing::FaultFileSystem fs;
    fs.Inject(FailNth(op, 1));
    EXPECT_FALSE(WriteFileAtomic(&fs, path, "{}\n").ok()) << FsOpName(op);
    EXPECT_EQ(DefaultFileSystem()->Stat(path)->type, FileType::kNotFound) << FsOpName(op);
    EXPECT_TRUE(Names().empty()) << FsOpName(op) << ": " << ::testing::PrintToString(Names());
  }
}

TEST_F(FsTest, WriteFileAtomicFailsTheNthCall) {
  const std::string path = JoinPath(dir_, "info.json");
  testing::FaultFileSystem fs;
  fs.Inject(FailNth(FsOp::kSync, 2));
  ASSERT_OK(WriteFileAtomic(&fs, path, "one"));
  EXPECT_FALSE(WriteFileAtomic(&fs, path, "two").ok());
  EXPECT_OK(WriteFileAtomic(&fs, path, "three"));
  EXPECT_EQ(Read(path), "three");
  EXPECT_EQ(Names(), std::vector<std::string>{"info.json"});
}

TEST_F(FsTest, WriteFileAtomicSyncDirFailureIsReportedAndLeavesAWholeFile) {
  // The rename has happened by then: the file is whole (old or new), never torn, and no temp stays.
  const std::string path = JoinPath(dir_, "info.json");
  ASSERT_OK(WriteFileAtomic(DefaultFileSystem(), path, "old"));
  testing::FaultFileSystem fs;
  fs.Inject(FailNth(FsOp::kSyncDir, 1));
  EXPECT_FALSE(WriteFileAtomic(&fs, path, "new").ok());
  EXPECT_EQ(fs.count(FsOp::kSyncDir), 1);
  const std::string now = Read(path);
  EXPECT_TRUE(now == "old" || now == "new") << now;
  EXPECT_EQ(Names(), std::vector<std::string>{"info.json"});
}

TEST_F(FsTest, WriteFileAtomicWritesInPlaceOnAStoreWithoutRename) {
  const std::string path = JoinPath(dir_, "info.json");
  testing::FaultFileSystem store;
  store.SetCapabilities({.atomic_rename = false, .locks = false, .directories = false});
  store.Inject({.ops = testing::Ops({FsOp::kRename}), .stays_down = true, .code = StatusCode::kNotSupported});
  ASSERT_OK(WriteFileAtomic(&store, path, "whole when written"));
  EXPECT_EQ(Read(path), "whole when written");
  EXPECT_EQ(store.count(FsOp::kRename), 0);
}

// ---- ReplaceFileAcross (io/copy_file.h) ----------------------------------------------

TEST_F(FsTest, ReplaceFileAcrossRenamesASyncedTempOverTheTarget) {
  const std::string from = JoinPath(dir_, "src"), to = JoinPath(dir_, "info.json");
  ASSERT_OK(WriteFileAtomic(DefaultFileSystem(), from, "new contents"));
  ASSERT_OK(WriteFileAtomic(DefaultFileSystem(), to, "old"));
  testing::FaultFileSystem fs;
  fs.Log(testing::kWriteOps);
  auto copied = internal::ReplaceFileAcross(DefaultFileSystem(), from, &fs, to);
  ASSERT_OK(copied);
  EXPECT_EQ(*copied, 12u);
  EXPECT_EQ(Read(to), "new contents");
  const std::vector<std::string> calls = fs.calls();
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.back().rfind("Rename " + dir_ + "/.info.json.replace.reel-", 0), 0u) << calls.back();
  EXPECT_NE(std::find_if(calls.begin(), calls.end(), [](const std::string& c) { return c.starts_with("Sync "); }),
            calls.end())
      << "the temp is synced before the rename";
  EXPECT_EQ(Names(), (std::vector<std::string>{"info.json", "src"}));
}

TEST_F(FsTest, ReplaceFileAcrossLeavesTheOldFileAndNoTempWhenItFails) {
  const std::string from = JoinPath(dir_, "src"), to = JoinPath(dir_, "info.json");
  ASSERT_OK(WriteFileAtomic(DefaultFileSystem(), from, "new contents"));
  for (FsOp op : {FsOp::kAppend, FsOp::kSync, FsOp::kClose, FsOp::kRename}) {
    ASSERT_OK(WriteFileAtomic(DefaultFileSystem(), to, "old"));
    testing::FaultFileSystem fs;
    fs.Inject(FailNth(op, 1));
    EXPECT_FALSE(internal::ReplaceFileAcross(DefaultFileSystem(), from, &fs, to).ok()) << FsOpName(op);
    EXPECT_EQ(Read(to), "old") << FsOpName(op);
    EXPECT_EQ(Names(), (std::vector<std::string>{"info.json", "src"})) << FsOpName(op) << ": temp left";
  }
}

TEST_F(FsTest, ReplaceFileAcrossCopiesInPlaceOnAStoreWithoutRename) {
  const std::string from = JoinPath(dir_, "src"), to = JoinPath(dir_, "info.json");
  ASSERT_OK(WriteFileAtomic(DefaultFileSystem(), from, "new contents"));
  testing::FaultFileSystem store;
  store.SetCapabilities({.atomic_rename = false, .locks = false, .directories = false});
  ASSERT_OK(internal::ReplaceFileAcross(DefaultFileSystem(), from, &store, to));
  EXPECT_EQ(Read(to), "new contents");
  EXPECT_EQ(store.count(FsOp::kRename), 0);
}

// ---- path helpers -------------------------------------------------------------------

TEST(PathHelpers, JoinBaseDir) {
  EXPECT_EQ(JoinPath("a/b", "c"), "a/b/c");
  EXPECT_EQ(JoinPath("a/b/", "c"), "a/b/c");
  EXPECT_EQ(JoinPath("", "c"), "c");
  EXPECT_EQ(JoinPath("a", ""), "a");
  EXPECT_EQ(JoinPath("/root", "meta/info.json"), "/root/meta/info.json");
  EXPECT_EQ(BaseName("a/b.parquet"), "b.parquet");
  EXPECT_EQ(BaseName("b.parquet"), "b.parquet");
  EXPECT_EQ(BaseName("/x/y/.lock"), ".lock");
  EXPECT_EQ(DirName("a/b.parquet"), "a");
  EXPECT_EQ(DirName("x/y/z"), "x/y");
  EXPECT_EQ(DirName("b"), ".");
  EXPECT_EQ(DirName("/x"), "/");  // as POSIX dirname
}

// ---- POSIX file system ----------------------------------------------------------------

TEST_F(FsTest, StatMissingIsNotAnError) {
  FileSystem* fs = DefaultFileSystem();
  auto missing = fs->Stat(JoinPath(dir_, "nope"));
  ASSERT_OK(missing);
  EXPECT_EQ(missing->type, FileType::kNotFound);
  ASSERT_OK(WriteFileAtomic(fs, JoinPath(dir_, "f"), "12345"));
  auto under_file = fs->Stat(JoinPath(dir_, "f/child"));
  ASSERT_OK(under_file);
  EXPECT_EQ(under_file->type, FileType::kNotFound);
  auto file = fs->Stat(JoinPath(dir_, "f"));
  ASSERT_OK(file);
  EXPECT_EQ(file->type, FileType::kFile);
  EXPECT_EQ(file->size, 5u);
  EXPECT_EQ(fs->Stat(dir_)->type, FileType::kDirectory);
}

TEST_F(FsTest, StatManyAnswersAsStatDoes) {
  FileSystem* fs = DefaultFileSystem();
  ASSERT_OK(WriteFileAtomic(fs, JoinPath(dir_, "a"), "12345"));
  ASSERT_OK(fs->CreateDirs(JoinPath(dir_, "d/e")));
  ASSERT_OK(WriteFileAtomic(fs, JoinPath(dir_, "d/e/f"), "xy"));
  const std::vector<std::string> names = {"a", "missing", "d", "d/e/f", "a/under_a_file"};
  FileSystemWrapper wrapped(fs);  // the default: one Stat per joined path
  for (FileSystem* each : {fs, static_cast<FileSystem*>(&wrapped)}) {
    std::vector<Result<FileInfo>> many = each->StatMany(dir_, names);
    ASSERT_EQ(many.size(), names.size());
    for (size_t i = 0; i < names.size(); ++i) {
      auto one = fs->Stat(JoinPath(dir_, names[i]));
      ASSERT_TRUE(many[i].ok() && one.ok()) << names[i];
      EXPECT_EQ(many[i]->type, one->type) << names[i];
      EXPECT_EQ(many[i]->size, one->size) << names[i];
      EXPECT_EQ(many[i]->mtime_ns, one->mtime_ns) << names[i];
    }
    EXPECT_EQ(many[0]->size, 5u);
    EXPECT_EQ(many[1]->type, FileType::kNotFound);
    EXPECT_EQ(many[2]->type, FileType::kDirectory);
    EXPECT_EQ(many[3]->size, 2u);
    EXPECT_EQ(many[4]->type, FileType::kNotFound);
  }
  // A directory that does not exist: every name is missing, as for Stat.
  for (const Result<FileInfo>& r : fs->StatMany(JoinPath(dir_, "nope"), {"a", "b"})) {
    ASSERT_OK(r);
    EXPECT_EQ(r->type, FileType::kNotFound);
  }
}

TEST_F(FsTest, ListDirSortedWithTypes) {
  FileSystem* fs = DefaultFileSystem();
  for (const char* name : {"b.parquet", "a.parquet", ".lock", "C"})
    ASSERT_OK(WriteFileAtomic(fs, JoinPath(dir_, name), "x"));
  ASSERT_OK(fs->CreateDirs(JoinPath(dir_, "chunk-001/deeper")));
  ASSERT_OK(fs->CreateDirs(JoinPath(dir_, "chunk-001/deeper")));  // mkdir -p is idempotent
  auto entries = fs->ListDir(dir_);
  ASSERT_OK(entries);
  std::vector<std::string> names;
  for (const auto& e : *entries) names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{".lock", "C", "a.parquet", "b.parquet", "chunk-001"}));
  EXPECT_EQ((*entries)[2].type, FileType::kFile);
  EXPECT_EQ((*entries)[4].type, FileType::kDirectory);
  auto missing = fs->ListDir(JoinPath(dir_, "nope"));
  EXPECT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST_F(FsTest, ReadFileErrors) {
  FileSystem* fs = DefaultFileSystem();
  auto dir = fs->ReadFile(dir_);
  EXPECT_FALSE(dir.ok());
  auto missing = fs->ReadFile(JoinPath(dir_, "nope"));
  EXPECT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), ::testing::HasSubstr("nope"));
}

TEST_F(FsTest, CreateDirsOverAFileAndRemoveFile) {
  FileSystem* fs = DefaultFileSystem();
  const std::string f = JoinPath(dir_, "f");
  ASSERT_OK(WriteFileAtomic(fs, f, "x"));
  EXPECT_FALSE(fs->CreateDirs(JoinPath(f, "sub")).ok());
  EXPECT_FALSE(fs->CreateDirs(f).ok());
  ASSERT_OK(fs->RemoveFile(f));
  EXPECT_EQ(fs->Stat(f)->type, FileType::kNotFound);
  EXPECT_EQ(fs->RemoveFile(f).code(), StatusCode::kNotFound);
}

// ---- interface additions (issue 15: every byte through FileSystem) --------------------

TEST_F(FsTest, WriteAtPatchesWrittenBytesOnly) {
  FileSystem* fs = DefaultFileSystem();
  const std::string path = JoinPath(dir_, "v.mp4");
  auto file = fs->NewWritableFile(path);
  ASSERT_OK(file);
  ASSERT_OK((*file)->Append("0123456789"));
  ASSERT_OK((*file)->WriteAt(2, "ab"));      // a header patched after the payload
  ASSERT_OK((*file)->Append("XY"));          // Append continues at the end
  ASSERT_OK((*file)->WriteAt(10, "xy"));     // up to the end is fine
  EXPECT_EQ((*file)->WriteAt(11, "pq").code(), StatusCode::kInvalid);  // past it is not
  EXPECT_EQ((*file)->WriteAt(13, "").code(), StatusCode::kInvalid);
  ASSERT_OK((*file)->Sync());
  ASSERT_OK((*file)->Close());
  EXPECT_EQ(Read(path), "01ab456789xy");
}

TEST_F(FsTest, AppendableFileContinuesAfterOldContents) {
  FileSystem* fs = DefaultFileSystem();
  const std::string path = JoinPath(dir_, "up.part");
  {
    auto file = fs->NewAppendableFile(path);  // created when missing
    ASSERT_OK(file);
    ASSERT_OK((*file)->Append("abc"));
    ASSERT_OK((*file)->Close());
  }
  auto file = fs->NewAppendableFile(path);
  ASSERT_OK(file);
  ASSERT_OK((*file)->Append("def"));
  EXPECT_EQ((*file)->WriteAt(0, "x").code(), StatusCode::kNotSupported);  // O_APPEND
  ASSERT_OK((*file)->Sync());
  ASSERT_OK((*file)->Close());
  EXPECT_EQ(Read(path), "abcdef");
  EXPECT_FALSE(fs->NewAppendableFile(JoinPath(dir_, "no/such/dir")).ok());
}

TEST_F(FsTest, StatReportsModificationTime) {
  FileSystem* fs = DefaultFileSystem();
  const std::string path = JoinPath(dir_, "f");
  const int64_t before = static_cast<int64_t>(::time(nullptr) - 5) * 1000000000;
  ASSERT_OK(WriteFileSynced(fs, path, "x"));
  auto info = fs->Stat(path);
  ASSERT_OK(info);
  EXPECT_GT(info->mtime_ns, before);
  EXPECT_LT(info->mtime_ns, before + int64_t{60} * 1000000000);
  EXPECT_EQ(fs->Stat(JoinPath(dir_, "nope"))->mtime_ns, 0);
}

TEST_F(FsTest, CreateUniqueDirRemoveDirAndRemoveAll) {
  FileSystem* fs = DefaultFileSystem();
  auto a = fs->CreateUniqueDir(JoinPath(dir_, "scratch-"));
  auto b = fs->CreateUniqueDir(JoinPath(dir_, "scratch-"));
  ASSERT_TRUE(a.ok() && b.ok()) << a.status().ToString();
  EXPECT_NE(*a, *b);
  EXPECT_EQ(BaseName(*a).size(), std::string("scratch-XXXXXX").size());
  EXPECT_EQ(fs->Stat(*a)->type, FileType::kDirectory);
  EXPECT_FALSE(fs->CreateUniqueDir(JoinPath(dir_, "missing/parent-")).ok());

  ASSERT_OK(fs->CreateDirs(JoinPath(*a, "x/y")));
  ASSERT_OK(WriteFileSynced(fs, JoinPath(*a, "x/y/f"), "1"));
  ASSERT_OK(WriteFileSynced(fs, JoinPath(*a, "g"), "2"));
  // A link to a directory outside: removed, never followed.
  ASSERT_OK(WriteFileSynced(fs, JoinPath(*b, "keep"), "3"));
  ASSERT_EQ(::symlink(b->c_str(), JoinPath(*a, "link").c_str()), 0);
  EXPECT_FALSE(fs->RemoveDir(*a).ok());  // not empty
  bool removed = false;
  ASSERT_OK(RemoveAll(fs, *a, &removed));
  EXPECT_TRUE(removed);
  EXPECT_EQ(fs->Stat(*a)->type, FileType::kNotFound);
  EXPECT_EQ(Read(JoinPath(*b, "keep")), "3");
  ASSERT_OK(RemoveAll(fs, *a, &removed));  // missing: OK
  EXPECT_FALSE(removed);
  ASSERT_OK(fs->RemoveFile(JoinPath(*b, "keep")));
  ASSERT_OK(fs->RemoveDir(*b));
  EXPECT_EQ(fs->RemoveDir(*b).code(), StatusCode::kNotFound);
}

// A FileSystem that implements only the required calls: the additions default to
// NotSupported, and the wrapper forwards every call (here: to such a file system).
class MinimalFs final : public FileSystem {
 public:
  Result<FileInfo> Stat(const std::string&) override { return FileInfo{}; }
  Result<std::vector<DirEntry>> ListDir(const std::string&) override { return std::vector<DirEntry>{}; }
  Result<std::string> ReadFile(const std::string& p) override { return Status::NotFound(p); }
  Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenRandomAccess(const std::string& p) override {
    return Status::NotFound(p);
  }
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& p) override {
    return Status::NotFound(p);
  }
  Status Rename(const std::string&, const std::string&) override { return Status::OK(); }
  Status SyncDir(const std::string&) override { return Status::OK(); }
  Status RemoveFile(const std::string&) override { return Status::OK(); }
  Status CreateDirs(const std::string&) override { return Status::OK(); }
};

TEST_F(FsTest, AdditionsDefaultToNotSupportedAndTheWrapperForwards) {
  MinimalFs minimal;
  FileSystemWrapper wrapper(&minimal);
  EXPECT_EQ(wrapper.target(), &minimal);
  for (FileSystem* fs : {static_cast<FileSystem*>(&minimal), static_cast<FileSystem*>(&wrapper)}) {
    EXPECT_EQ(fs->NewAppendableFile("p").status().code(), StatusCode::kNotSupported);
    EXPECT_EQ(fs->RemoveDir("p").code(), StatusCode::kNotSupported);
    EXPECT_EQ(fs->CreateUniqueDir("p").status().code(), StatusCode::kNotSupported);
    EXPECT_EQ(fs->SyncFile("p").code(), StatusCode::kNotSupported);
    EXPECT_EQ(fs->LockFile("p").status().code(), StatusCode::kNotSupported);
    EXPECT_EQ(fs->ReadFile("p").status().code(), StatusCode::kNotFound);
    EXPECT_TRUE(fs->Capabilities().atomic_rename);
    EXPECT_FALSE(fs->Capabilities().locks);  // as LockFile's default says
  }
  const FileSystemCapabilities posix = DefaultFileSystem()->Capabilities();
  EXPECT_TRUE(posix.atomic_rename && posix.locks && posix.directories);
  class AppendOnly final : public WritableFile {
   public:
    Status Append(std::string_view) override { return Status::OK(); }
    Status Sync() override { return Status::OK(); }
    Status Close() override { return Status::OK(); }
  };
  WritableFileWrapper file(std::make_unique<AppendOnly>());
  EXPECT_EQ(file.WriteAt(0, "x").code(), StatusCode::kNotSupported);
  EXPECT_OK(file.Append("x"));
}

}  // namespace
}  // namespace reel
