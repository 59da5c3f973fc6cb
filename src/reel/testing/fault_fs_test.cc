// FaultFileSystem (testing/fault_fs.h): what its model keeps across a crash, on small
// hand-made directories.
#include "testing/fault_fs.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>
#include "testing/status_matchers.h"

namespace reel {
namespace {

namespace stdfs = std::filesystem;
using testing::FaultFileSystem;
using Mode = FaultFileSystem::CrashMode;

class FaultFileSystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = JoinPath(::testing::TempDir(), "reel_fault_fs.XXXXXX");
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    stdfs::create_directories(dir_ + "/d");
    Put("d/old", "old bytes");
  }
  void TearDown() override { stdfs::remove_all(dir_); }
  void Put(const std::string& rel, const std::string& bytes) { std::ofstream(dir_ + "/" + rel) << bytes; }
  std::string Read(const std::string& rel) {
    if (!stdfs::exists(dir_ + "/" + rel)) return "<absent>";
    std::ifstream in(dir_ + "/" + rel, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  Status Write(FileSystem* fs, const std::string& rel, const std::string& bytes, bool sync) {
    REEL_ASSIGN_OR_RETURN(auto f, fs->NewWritableFile(dir_ + "/" + rel));
    REEL_RETURN_IF_ERROR(f->Append(bytes));
    if (sync) REEL_RETURN_IF_ERROR(f->Sync());
    return f->Close();
  }
  std::string dir_;
};

TEST_F(FaultFileSystemTest, ACreatedFileNeedsItsDirectorySynced) {
  FaultFileSystem fs(dir_);
  ASSERT_OK(Write(&fs, "d/new", "synced data", true));
  ASSERT_OK(fs.Crash(Mode::kWhole));
  EXPECT_EQ(Read("d/new"), "<absent>") << "its name was never made durable";
  EXPECT_EQ(Read("d/old"), "old bytes");

  FaultFileSystem again(dir_);
  ASSERT_OK(Write(&again, "d/new", "synced data", true));
  ASSERT_OK(again.SyncDir(dir_ + "/d"));
  ASSERT_OK(again.Crash(Mode::kWhole));
  EXPECT_EQ(Read("d/new"), "synced data");
  EXPECT_EQ(again.syncs(), 2);
}

TEST_F(FaultFileSystemTest, UnsyncedDataIsDroppedWholeOrTorn) {
  for (Mode mode : {Mode::kWhole, Mode::kTorn}) {
    Put("d/old", "old bytes");
    FaultFileSystem fs(dir_);
    auto f = fs.NewAppendableFile(dir_ + "/d/old");
    ASSERT_OK(f);
    ASSERT_OK((*f)->Append("+12345678"));
    ASSERT_OK((*f)->Close());
    ASSERT_OK(Write(&fs, "d/x", "abcd", true));
    ASSERT_OK(fs.SyncDir(dir_ + "/d"));
    auto g = fs.NewAppendableFile(dir_ + "/d/x");
    ASSERT_OK(g);
    ASSERT_OK((*g)->Append("efgh"));
    ASSERT_OK((*g)->Close());
    ASSERT_OK(fs.Crash(mode));
    EXPECT_EQ(Read("d/old"), mode == Mode::kWhole ? "old bytes" : "old bytes+123");
    EXPECT_EQ(Read("d/x"), mode == Mode::kWhole ? "abcd" : "abcdef");
  }
}

TEST_F(FaultFileSystemTest, RenamesAndRemovalsAreUndoneUntilTheDirectoryIsSynced) {
  FaultFileSystem fs(dir_);
  ASSERT_OK(Write(&fs, "d/.tmp", "new bytes", true));
  ASSERT_OK(fs.Rename(dir_ + "/d/.tmp", dir_ + "/d/old"));
  ASSERT_OK(Write(&fs, "d/gone", "x", true));
  ASSERT_OK(fs.CreateDirs(dir_ + "/d/sub/deeper"));
  ASSERT_OK(fs.Crash(Mode::kWhole));
  EXPECT_EQ(Read("d/old"), "old bytes") << "the rename over it was not durable";
  EXPECT_EQ(Read("d/.tmp"), "<absent>");
  EXPECT_FALSE(stdfs::exists(dir_ + "/d/sub"));

  FaultFileSystem fs2(dir_);
  ASSERT_OK(fs2.RemoveFile(dir_ + "/d/old"));
  ASSERT_OK(fs2.Crash(Mode::kWhole));
  EXPECT_EQ(Read("d/old"), "old bytes") << "the removal was not durable";

  FaultFileSystem fs3(dir_);
  ASSERT_OK(Write(&fs3, "d/.tmp", "new bytes", true));
  ASSERT_OK(fs3.Rename(dir_ + "/d/.tmp", dir_ + "/d/old"));
  ASSERT_OK(fs3.CreateDirs(dir_ + "/d/sub/deeper"));
  ASSERT_OK(fs3.SyncDir(dir_ + "/d"));
  ASSERT_OK(fs3.Crash(Mode::kWhole));
  EXPECT_EQ(Read("d/old"), "new bytes");
  EXPECT_TRUE(stdfs::is_directory(dir_ + "/d/sub"));
  EXPECT_FALSE(stdfs::exists(dir_ + "/d/sub/deeper")) << "d/sub was never synced";
}

TEST_F(FaultFileSystemTest, ACrossDirectoryRenameIsTwoEntries) {
  stdfs::create_directories(dir_ + "/e");
  FaultFileSystem fs(dir_);
  ASSERT_OK(fs.Rename(dir_ + "/d/old", dir_ + "/e/moved"));
  ASSERT_OK(fs.SyncDir(dir_ + "/e"));
  ASSERT_OK(fs.Crash(Mode::kWhole));
  EXPECT_EQ(Read("e/moved"), "old bytes");
  EXPECT_EQ(Read("d/old"), "old bytes") << "the source directory was not synced";
}

TEST_F(FaultFileSystemTest, TheProcessDiesAfterTheKthSync) {
  FaultFileSystem fs(dir_);
  fs.CrashAfterSync(2);
  ASSERT_OK(Write(&fs, "d/a", "a", true));  // sync 1
  ASSERT_OK(fs.SyncDir(dir_ + "/d"));       // sync 2: completes, the last call
  EXPECT_TRUE(fs.dead());
  EXPECT_EQ(fs.Stat(dir_ + "/d/a").status().code(), StatusCode::kIOError);
  EXPECT_FALSE(Write(&fs, "d/b", "b", true).ok());
  EXPECT_FALSE(stdfs::exists(dir_ + "/d/b")) << "nothing reaches the disk after the death";
  ASSERT_OK(fs.Crash(Mode::kWhole));
  EXPECT_EQ(Read("d/a"), "a");
  EXPECT_EQ(fs.trace(), (std::vector<std::string>{"Sync d/a", "SyncDir d"}));
}

TEST_F(FaultFileSystemTest, TheProcessDiesAsItCallsTheKthSync) {
  FaultFileSystem fs(dir_);
  fs.CrashBeforeSync(3);
  ASSERT_OK(Write(&fs, "d/a", "abcd", true));  // sync 1
  ASSERT_OK(fs.SyncDir(dir_ + "/d"));          // sync 2
  auto f = fs.NewAppendableFile(dir_ + "/d/a");
  ASSERT_OK(f);
  ASSERT_OK((*f)->Append("efgh"));
  EXPECT_EQ((*f)->Sync().code(), StatusCode::kIOError) << "sync 3 is never made";
  EXPECT_TRUE(fs.dead());
  EXPECT_EQ(fs.syncs(), 2);
  ASSERT_OK(fs.Crash(Mode::kTorn));
  EXPECT_EQ(Read("d/a"), "abcdef") << "half of the unsynced append survives a torn crash";
}

// ---- injected faults ----------------------------------------------------------------

using testing::FsOp;

TEST_F(FaultFileSystemTest, TheNthCountedCallFailsOnlyOnTheChosenPaths) {
  FaultFileSystem fs;  // no power-loss model: forwards and injects only
  fs.Inject({.ops = testing::Ops({FsOp::kNewWritableFile}), .on = testing::PathsContaining("/d/"), .nth = 2});
  EXPECT_OK(Write(&fs, "x", "not counted", false));
  EXPECT_OK(Write(&fs, "d/a", "first counted", false));
  Status st = Write(&fs, "d/b", "second counted", false);
  EXPECT_EQ(st.code(), StatusCode::kIOError);
  EXPECT_EQ(st.message(), dir_ + "/d/b: injected NewWritableFile fault: Input/output error");
  EXPECT_TRUE(fs.fired());
  EXPECT_EQ(fs.failed_op(), FsOp::kNewWritableFile);
  EXPECT_EQ(fs.failed_path(), dir_ + "/d/b");
  EXPECT_OK(Write(&fs, "d/c", "third counted", false)) << "one fault, not stays_down";
  EXPECT_EQ(fs.counted(), 3);
  EXPECT_EQ(fs.count(FsOp::kNewWritableFile), 4);
  EXPECT_EQ(fs.calls(), (std::vector<std::string>{"NewWritableFile " + dir_ + "/d/a",
                                                  "NewWritableFile " + dir_ + "/d/b",
                                                  "NewWritableFile " + dir_ + "/d/c"}));
  EXPECT_EQ(Read("d/b"), "<absent>");
}

TEST_F(FaultFileSystemTest, AStoreThatStaysDownFailsEveryLaterCallWithItsCode) {
  FaultFileSystem fs;
  fs.Inject({.ops = testing::Ops({FsOp::kRename, FsOp::kRemoveFile}),
             .nth = 2,
             .stays_down = true,
             .code = StatusCode::kNotSupported,
             .reason = "gone"});
  Put("a", "a");
  EXPECT_OK(fs.Rename(dir_ + "/a", dir_ + "/b"));
  EXPECT_EQ(fs.RemoveFile(dir_ + "/b").code(), StatusCode::kNotSupported);
  EXPECT_EQ(fs.Rename(dir_ + "/b", dir_ + "/c").code(), StatusCode::kNotSupported);
  EXPECT_EQ(Read("b"), "a") << "the failed removal left it";
  fs.Disarm();
  EXPECT_OK(fs.Rename(dir_ + "/b", dir_ + "/c"));
  EXPECT_EQ(fs.calls().front(), "Rename " + dir_ + "/a -> " + dir_ + "/b");
}

TEST_F(FaultFileSystemTest, AFailingAppendCanWriteHalfItsBytesFirst) {
  for (bool half : {false, true}) {
    FaultFileSystem fs;
    fs.Inject({.ops = testing::Ops({FsOp::kAppend}), .nth = 2, .half_write = half});
    auto f = fs.NewWritableFile(dir_ + "/t");
    ASSERT_OK(f);
    EXPECT_OK((*f)->Append("0123"));
    EXPECT_FALSE((*f)->Append("456789").ok());
    EXPECT_OK((*f)->Close());
    EXPECT_EQ(Read("t"), half ? "0123456" : "0123");
  }
}

TEST_F(FaultFileSystemTest, ReadsOfAnOpenedFileCanFail) {
  FaultFileSystem fs;
  auto f = fs.OpenRandomAccess(dir_ + "/d/old");
  ASSERT_OK(f);
  EXPECT_OK((*f)->ReadAt(0, 3));
  fs.Inject({.ops = testing::Ops({FsOp::kRead}), .stays_down = true});
  auto read = (*f)->ReadAt(4, 5);
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(read.status().message(), ::testing::HasSubstr("injected Read fault")) << read.status().ToString();
  EXPECT_EQ(fs.count(FsOp::kRead), 2);
  fs.Disarm();
  auto again = (*f)->ReadAt(4, 5);
  ASSERT_OK(again);
  EXPECT_EQ((*again)->ToString(), "bytes");
}

TEST_F(FaultFileSystemTest, AFailingCallCanEndTheProcess) {
  EXPECT_EXIT(
      {
        FaultFileSystem fs;
        fs.Inject({.ops = testing::Ops({FsOp::kSyncDir}), .exit_code = 86});
        (void)fs.SyncDir(dir_);
        ::_exit(0);
      },
      ::testing::ExitedWithCode(86), "");
}

TEST_F(FaultFileSystemTest, ItCanPoseAsAnotherKindOfStore) {
  FaultFileSystem fs;
  EXPECT_TRUE(fs.Capabilities().atomic_rename);
  fs.SetCapabilities({.atomic_rename = false, .locks = false, .directories = false});
  EXPECT_FALSE(fs.Capabilities().atomic_rename);
  EXPECT_FALSE(fs.Capabilities().directories);
}

TEST_F(FaultFileSystemTest, InjectedFaultsWorkBesideThePowerLossModel) {
  FaultFileSystem fs(dir_);
  fs.Inject({.ops = testing::Ops({FsOp::kSync}), .nth = 1});
  EXPECT_FALSE(Write(&fs, "d/new", "bytes", /*sync=*/true).ok());
  EXPECT_EQ(fs.syncs(), 0) << "a failed sync is no sync point";
  ASSERT_OK(fs.Crash(Mode::kWhole));
  EXPECT_EQ(Read("d/new"), "<absent>");
  EXPECT_EQ(Read("d/old"), "old bytes");
}

}  // namespace
}  // namespace reel
