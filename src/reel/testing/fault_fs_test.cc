// FaultFileSystem (testing/fault_fs.h): what its model keeps across a crash, on small
// hand-made directories.
#include "testing/fault_fs.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

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
  ASSERT_TRUE(Write(&fs, "d/new", "synced data", true).ok());
  ASSERT_TRUE(fs.Crash(Mode::kWhole).ok());
  EXPECT_EQ(Read("d/new"), "<absent>") << "its name was never made durable";
  EXPECT_EQ(Read("d/old"), "old bytes");

  FaultFileSystem again(dir_);
  ASSERT_TRUE(Write(&again, "d/new", "synced data", true).ok());
  ASSERT_TRUE(again.SyncDir(dir_ + "/d").ok());
  ASSERT_TRUE(again.Crash(Mode::kWhole).ok());
  EXPECT_EQ(Read("d/new"), "synced data");
  EXPECT_EQ(again.syncs(), 2);
}

TEST_F(FaultFileSystemTest, UnsyncedDataIsDroppedWholeOrTorn) {
  for (Mode mode : {Mode::kWhole, Mode::kTorn}) {
    Put("d/old", "old bytes");
    FaultFileSystem fs(dir_);
    auto f = fs.NewAppendableFile(dir_ + "/d/old");
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Append("+12345678").ok());
    ASSERT_TRUE((*f)->Close().ok());
    ASSERT_TRUE(Write(&fs, "d/x", "abcd", true).ok());
    ASSERT_TRUE(fs.SyncDir(dir_ + "/d").ok());
    auto g = fs.NewAppendableFile(dir_ + "/d/x");
    ASSERT_TRUE(g.ok());
    ASSERT_TRUE((*g)->Append("efgh").ok());
    ASSERT_TRUE((*g)->Close().ok());
    ASSERT_TRUE(fs.Crash(mode).ok());
    EXPECT_EQ(Read("d/old"), mode == Mode::kWhole ? "old bytes" : "old bytes+123");
    EXPECT_EQ(Read("d/x"), mode == Mode::kWhole ? "abcd" : "abcdef");
  }
}

TEST_F(FaultFileSystemTest, RenamesAndRemovalsAreUndoneUntilTheDirectoryIsSynced) {
  FaultFileSystem fs(dir_);
  ASSERT_TRUE(Write(&fs, "d/.tmp", "new bytes", true).ok());
  ASSERT_TRUE(fs.Rename(dir_ + "/d/.tmp", dir_ + "/d/old").ok());
  ASSERT_TRUE(Write(&fs, "d/gone", "x", true).ok());
  ASSERT_TRUE(fs.CreateDirs(dir_ + "/d/sub/deeper").ok());
  ASSERT_TRUE(fs.Crash(Mode::kWhole).ok());
  EXPECT_EQ(Read("d/old"), "old bytes") << "the rename over it was not durable";
  EXPECT_EQ(Read("d/.tmp"), "<absent>");
  EXPECT_FALSE(stdfs::exists(dir_ + "/d/sub"));

  FaultFileSystem fs2(dir_);
  ASSERT_TRUE(fs2.RemoveFile(dir_ + "/d/old").ok());
  ASSERT_TRUE(fs2.Crash(Mode::kWhole).ok());
  EXPECT_EQ(Read("d/old"), "old bytes") << "the removal was not durable";

  FaultFileSystem fs3(dir_);
  ASSERT_TRUE(Write(&fs3, "d/.tmp", "new bytes", true).ok());
  ASSERT_TRUE(fs3.Rename(dir_ + "/d/.tmp", dir_ + "/d/old").ok());
  ASSERT_TRUE(fs3.CreateDirs(dir_ + "/d/sub/deeper").ok());
  ASSERT_TRUE(fs3.SyncDir(dir_ + "/d").ok());
  ASSERT_TRUE(fs3.Crash(Mode::kWhole).ok());
  EXPECT_EQ(Read("d/old"), "new bytes");
  EXPECT_TRUE(stdfs::is_directory(dir_ + "/d/sub"));
  EXPECT_FALSE(stdfs::exists(dir_ + "/d/sub/deeper")) << "d/sub was never synced";
}

TEST_F(FaultFileSystemTest, ACrossDirectoryRenameIsTwoEntries) {
  stdfs::create_directories(dir_ + "/e");
  FaultFileSystem fs(dir_);
  ASSERT_TRUE(fs.Rename(dir_ + "/d/old", dir_ + "/e/moved").ok());
  ASSERT_TRUE(fs.SyncDir(dir_ + "/e").ok());
  ASSERT_TRUE(fs.Crash(Mode::kWhole).ok());
  EXPECT_EQ(Read("e/moved"), "old bytes");
  EXPECT_EQ(Read("d/old"), "old bytes") << "the source directory was not synced";
}

TEST_F(FaultFileSystemTest, TheProcessDiesAfterTheKthSync) {
  FaultFileSystem fs(dir_);
  fs.CrashAfterSync(2);
  ASSERT_TRUE(Write(&fs, "d/a", "a", true).ok());  // sync 1
  ASSERT_TRUE(fs.SyncDir(dir_ + "/d").ok());       // sync 2: completes, the last call
  EXPECT_TRUE(fs.dead());
  EXPECT_EQ(fs.Stat(dir_ + "/d/a").status().code(), StatusCode::kIOError);
  EXPECT_FALSE(Write(&fs, "d/b", "b", true).ok());
  EXPECT_FALSE(stdfs::exists(dir_ + "/d/b")) << "nothing reaches the disk after the death";
  ASSERT_TRUE(fs.Crash(Mode::kWhole).ok());
  EXPECT_EQ(Read("d/a"), "a");
  EXPECT_EQ(fs.trace(), (std::vector<std::string>{"Sync d/a", "SyncDir d"}));
}

TEST_F(FaultFileSystemTest, TheProcessDiesAsItCallsTheKthSync) {
  FaultFileSystem fs(dir_);
  fs.CrashBeforeSync(3);
  ASSERT_TRUE(Write(&fs, "d/a", "abcd", true).ok());  // sync 1
  ASSERT_TRUE(fs.SyncDir(dir_ + "/d").ok());          // sync 2
  auto f = fs.NewAppendableFile(dir_ + "/d/a");
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->Append("efgh").ok());
  EXPECT_EQ((*f)->Sync().code(), StatusCode::kIOError) << "sync 3 is never made";
  EXPECT_TRUE(fs.dead());
  EXPECT_EQ(fs.syncs(), 2);
  ASSERT_TRUE(fs.Crash(Mode::kTorn).ok());
  EXPECT_EQ(Read("d/a"), "abcdef") << "half of the unsynced append survives a torn crash";
}

}  // namespace
}  // namespace reel
