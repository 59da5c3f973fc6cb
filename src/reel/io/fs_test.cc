// FileSystem: the POSIX implementation, path helpers, and WriteFileAtomic under injected faults.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "reel/fs.h"

namespace reel {
namespace {

// ---- a fault-injecting FileSystem ------------------------------------------------

enum class Op { kNewWritableFile, kAppend, kSync, kClose, kRename, kSyncDir };
const char* OpName(Op op) {
  static const char* names[] = {"NewWritableFile", "Append", "Sync", "Close", "Rename", "SyncDir"};
  return names[static_cast<int>(op)];
}

// Wraps DefaultFileSystem(); the `fail_at`-th call of `fail_op` returns IOError. A failing
// Append writes half its data first (a torn write). Every mutating call is logged.
class FaultyFileSystem final : public FileSystem {
 public:
  void FailNth(Op op, int n) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_op_ = op;
    fail_at_ = n;
  }
  int Calls(Op op) {
    std::lock_guard<std::mutex> lock(mu_);
    return counts_[op];
  }
  std::vector<std::string> Log() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_;
  }
  // Counts the call; true when it must fail.
  bool Tick(Op op, const std::string& what) {
    std::lock_guard<std::mutex> lock(mu_);
    log_.push_back(std::string(OpName(op)) + " " + what);
    const int n = ++counts_[op];
    return fail_op_ == op && n == fail_at_;
  }
  static Status Fault(Op op, const std::string& path) {
    return Status::IOError(path + ": injected " + OpName(op) + " fault");
  }

  Result<FileInfo> Stat(const std::string& p) override { return base_->Stat(p); }
  Result<std::vector<DirEntry>> ListDir(const std::string& p) override { return base_->ListDir(p); }
  Result<std::string> ReadFile(const std::string& p) override { return base_->ReadFile(p); }
  Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenRandomAccess(const std::string& p) override {
    return base_->OpenRandomAccess(p);
  }
  Status RemoveFile(const std::string& p) override { return base_->RemoveFile(p); }
  Status CreateDirs(const std::string& p) override { return base_->CreateDirs(p); }

  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  Status Rename(const std::string& from, const std::string& to) override {
    if (Tick(Op::kRename, BaseName(from) + " -> " + BaseName(to))) return Fault(Op::kRename, from);
    return base_->Rename(from, to);
  }
  Status SyncDir(const std::string& path) override {
    if (Tick(Op::kSyncDir, path)) return Fault(Op::kSyncDir, path);
    return base_->SyncDir(path);
  }

 private:
  FileSystem* base_ = DefaultFileSystem();
  std::mutex mu_;
  std::optional<Op> fail_op_;
  int fail_at_ = 0;
  std::map<Op, int> counts_;
  std::vector<std::string> log_;
};

class FaultyWritableFile final : public WritableFile {
 public:
  FaultyWritableFile(FaultyFileSystem* fs, std::string path, std::unique_ptr<WritableFile> inner)
      : fs_(fs), path_(std::move(path)), inner_(std::move(inner)) {}
  Status Append(std::string_view data) override {
    if (fs_->Tick(Op::kAppend, BaseName(path_))) {
      (void)inner_->Append(data.substr(0, data.size() / 2));
      return FaultyFileSystem::Fault(Op::kAppend, path_);
    }
    return inner_->Append(data);
  }
  Status Sync() override {
    if (fs_->Tick(Op::kSync, BaseName(path_))) return FaultyFileSystem::Fault(Op::kSync, path_);
    return inner_->Sync();
  }
  Status Close() override {
    Status st = inner_->Close();  // the descriptor is released either way
    if (fs_->Tick(Op::kClose, BaseName(path_))) return FaultyFileSystem::Fault(Op::kClose, path_);
    return st;
  }

 private:
  FaultyFileSystem* fs_;
  std::string path_;
  std::unique_ptr<WritableFile> inner_;
};

Result<std::unique_ptr<WritableFile>> FaultyFileSystem::NewWritableFile(const std::string& path) {
  if (Tick(Op::kNewWritableFile, BaseName(path))) return Fault(Op::kNewWritableFile, path);
  REEL_ASSIGN_OR_RETURN(auto inner, base_->NewWritableFile(path));
  return std::unique_ptr<WritableFile>(new FaultyWritableFile(this, path, std::move(inner)));
}

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
    EXPECT_TRUE(entries.ok()) << entries.status().ToString();
    if (entries.ok())
      for (const auto& e : *entries) names.push_back(e.name);
    return names;
  }

  std::string dir_;
};

TEST_F(FsTest, WriteFileAtomicReplacesContents) {
  const std::string path = JoinPath(dir_, "info.json");
  FaultyFileSystem fs;
  ASSERT_TRUE(WriteFileAtomic(&fs, path, "first").ok());
  EXPECT_EQ(Read(path), "first");
  ASSERT_TRUE(WriteFileAtomic(&fs, path, "second, longer").ok());
  EXPECT_EQ(Read(path), "second, longer");
  ASSERT_TRUE(WriteFileAtomic(&fs, path, "").ok());
  EXPECT_EQ(Read(path), "");
  EXPECT_EQ(Names(), std::vector<std::string>{"info.json"});
}

TEST_F(FsTest, WriteFileAtomicFollowsTheCommitRecipe) {
  const std::string path = JoinPath(dir_, "stats.json");
  FaultyFileSystem fs;
  ASSERT_TRUE(WriteFileAtomic(&fs, path, "{}").ok());
  auto log = fs.Log();
  ASSERT_EQ(log.size(), 6u) << ::testing::PrintToString(log);
  // A dotfile beside the target, synced before the rename, then the directory synced.
  const std::string tmp = log[0].substr(std::string("NewWritableFile ").size());
  EXPECT_EQ(tmp[0], '.') << tmp;
  EXPECT_NE(tmp, ".stats.json");
  EXPECT_EQ(log[1], "Append " + tmp);
  EXPECT_EQ(log[2], "Sync " + tmp);
  EXPECT_EQ(log[3], "Close " + tmp);
  EXPECT_EQ(log[4], "Rename " + tmp + " -> stats.json");
  EXPECT_EQ(log[5], "SyncDir " + dir_);
}

TEST_F(FsTest, WriteFileAtomicFailureBeforeRenameKeepsOldContents) {
  const std::string path = JoinPath(dir_, "info.json");
  for (Op op : {Op::kNewWritableFile, Op::kAppend, Op::kSync, Op::kClose, Op::kRename}) {
    ASSERT_TRUE(WriteFileAtomic(DefaultFileSystem(), path, "old contents").ok());
    FaultyFileSystem fs;
    fs.FailNth(op, 1);
    Status st = WriteFileAtomic(&fs, path, "new contents that are longer");
    EXPECT_FALSE(st.ok()) << OpName(op);
    EXPECT_EQ(fs.Calls(op), 1) << OpName(op) << " was never reached";
    EXPECT_EQ(Read(path), "old contents") << OpName(op);
    EXPECT_EQ(Names(), std::vector<std::string>{"info.json"}) << OpName(op) << ": temp file left";
  }
}

TEST_F(FsTest, WriteFileAtomicFailureOnAFreshPathCreatesNothing) {
  const std::string path = JoinPath(dir_, "tasks.jsonl");
  for (Op op : {Op::kNewWritableFile, Op::kAppend, Op::kSync, Op::kClose, Op::kRename}) {
    FaultyFileSystem fs;
    fs.FailNth(op, 1);
    EXPECT_FALSE(WriteFileAtomic(&fs, path, "{}\n").ok()) << OpName(op);
    EXPECT_EQ(DefaultFileSystem()->Stat(path)->type, FileType::kNotFound) << OpName(op);
    EXPECT_TRUE(Names().empty()) << OpName(op) << ": " << ::testing::PrintToString(Names());
  }
}

TEST_F(FsTest, WriteFileAtomicFailsTheNthCall) {
  const std::string path = JoinPath(dir_, "info.json");
  FaultyFileSystem fs;
  fs.FailNth(Op::kSync, 2);
  ASSERT_TRUE(WriteFileAtomic(&fs, path, "one").ok());
  EXPECT_FALSE(WriteFileAtomic(&fs, path, "two").ok());
  EXPECT_TRUE(WriteFileAtomic(&fs, path, "three").ok());
  EXPECT_EQ(Read(path), "three");
  EXPECT_EQ(Names(), std::vector<std::string>{"info.json"});
}

TEST_F(FsTest, WriteFileAtomicSyncDirFailureIsReportedAndLeavesAWholeFile) {
  // The rename has happened by then: the file is whole (old or new), never torn, and no temp stays.
  const std::string path = JoinPath(dir_, "info.json");
  ASSERT_TRUE(WriteFileAtomic(DefaultFileSystem(), path, "old").ok());
  FaultyFileSystem fs;
  fs.FailNth(Op::kSyncDir, 1);
  EXPECT_FALSE(WriteFileAtomic(&fs, path, "new").ok());
  EXPECT_EQ(fs.Calls(Op::kSyncDir), 1);
  const std::string now = Read(path);
  EXPECT_TRUE(now == "old" || now == "new") << now;
  EXPECT_EQ(Names(), std::vector<std::string>{"info.json"});
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
  ASSERT_TRUE(missing.ok()) << missing.status().ToString();
  EXPECT_EQ(missing->type, FileType::kNotFound);
  ASSERT_TRUE(WriteFileAtomic(fs, JoinPath(dir_, "f"), "12345").ok());
  auto under_file = fs->Stat(JoinPath(dir_, "f/child"));
  ASSERT_TRUE(under_file.ok()) << under_file.status().ToString();
  EXPECT_EQ(under_file->type, FileType::kNotFound);
  auto file = fs->Stat(JoinPath(dir_, "f"));
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->type, FileType::kFile);
  EXPECT_EQ(file->size, 5u);
  EXPECT_EQ(fs->Stat(dir_)->type, FileType::kDirectory);
}

TEST_F(FsTest, ListDirSortedWithTypes) {
  FileSystem* fs = DefaultFileSystem();
  for (const char* name : {"b.parquet", "a.parquet", ".lock", "C"})
    ASSERT_TRUE(WriteFileAtomic(fs, JoinPath(dir_, name), "x").ok());
  ASSERT_TRUE(fs->CreateDirs(JoinPath(dir_, "chunk-001/deeper")).ok());
  ASSERT_TRUE(fs->CreateDirs(JoinPath(dir_, "chunk-001/deeper")).ok());  // mkdir -p is idempotent
  auto entries = fs->ListDir(dir_);
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
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
  EXPECT_NE(missing.status().message().find("nope"), std::string::npos);
}

TEST_F(FsTest, CreateDirsOverAFileAndRemoveFile) {
  FileSystem* fs = DefaultFileSystem();
  const std::string f = JoinPath(dir_, "f");
  ASSERT_TRUE(WriteFileAtomic(fs, f, "x").ok());
  EXPECT_FALSE(fs->CreateDirs(JoinPath(f, "sub")).ok());
  EXPECT_FALSE(fs->CreateDirs(f).ok());
  ASSERT_TRUE(fs->RemoveFile(f).ok());
  EXPECT_EQ(fs->Stat(f)->type, FileType::kNotFound);
  EXPECT_EQ(fs->RemoveFile(f).code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace reel
