// ObjectStoreFileSystem over Arrow's in-memory MockFileSystem (no server), and
// OpenLocation's resolution of paths and URIs (no network: only failures that are
// decided before any request).
#include <arrow/buffer.h>
#include <arrow/filesystem/mockfs.h>
#include <arrow/io/interfaces.h>
#include <gtest/gtest.h>

#include "reel/object_store.h"
#include "reel/task.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

using arrow::fs::internal::MockFileSystem;

class ObjectStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    mock_ = std::make_shared<MockFileSystem>(arrow::fs::TimePoint{});
    // Like an object store: "bucket/task/..." keys with implicit directories.
    ASSERT_OK(mock_->CreateDir("bucket/task/meta"));
    ASSERT_OK(mock_->CreateFile("bucket/task/meta/info.json", "{\"a\": 1}"));
    ASSERT_OK(mock_->CreateFile("bucket/task/data.bin", std::string(1000, 'x')));
    ASSERT_OK(mock_->CreateFile("bucket/task/b.txt", "b"));
    fs_ = ObjectStoreFileSystem::Wrap(mock_, "mock://");
  }
  std::shared_ptr<MockFileSystem> mock_;
  std::unique_ptr<ObjectStoreFileSystem> fs_;
};

TEST_F(ObjectStoreTest, StatFilesDirectoriesAndMissing) {
  auto f = fs_->Stat("bucket/task/data.bin");
  ASSERT_OK(f);
  EXPECT_EQ(f->type, FileType::kFile);
  EXPECT_EQ(f->size, 1000u);
  auto d = fs_->Stat("bucket/task/meta");
  ASSERT_OK(d);
  EXPECT_EQ(d->type, FileType::kDirectory);
  auto missing = fs_->Stat("bucket/task/nope");
  ASSERT_OK(missing) << "a missing path is not an error";
  EXPECT_EQ(missing->type, FileType::kNotFound);
  EXPECT_EQ(fs_->counters().metadata_requests, 3u);
}

TEST_F(ObjectStoreTest, ListDirIsSortedAndTyped) {
  auto entries = fs_->ListDir("bucket/task");
  ASSERT_OK(entries);
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[0].name, "b.txt");
  EXPECT_EQ((*entries)[1].name, "data.bin");
  EXPECT_EQ((*entries)[2].name, "meta");
  EXPECT_EQ((*entries)[2].type, FileType::kDirectory);
  EXPECT_EQ((*entries)[0].type, FileType::kFile);
  auto missing = fs_->ListDir("bucket/none");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), ::testing::HasSubstr("mock://bucket/none"))
      << missing.status().message();
}

TEST_F(ObjectStoreTest, ReadFileAndRangedReadsAreCounted) {
  auto text = fs_->ReadFile("bucket/task/meta/info.json");
  ASSERT_OK(text);
  EXPECT_EQ(*text, "{\"a\": 1}");
  EXPECT_EQ(fs_->counters().bytes_read, 8u);
  fs_->ResetCounters();

  auto file = fs_->OpenRandomAccess("bucket/task/data.bin");
  ASSERT_OK(file);
  EXPECT_EQ(*(*file)->GetSize(), 1000);
  auto part = (*file)->ReadAt(100, 50);
  ASSERT_OK(part);
  EXPECT_EQ((*part)->size(), 50);
  char buf[10];
  ASSERT_EQ(*(*file)->ReadAt(990, 10, buf), 10);
  ObjectStoreCounters c = fs_->counters();
  EXPECT_EQ(c.bytes_read, 60u) << "only the ranges asked for are read";
  EXPECT_EQ(c.read_requests, 2u);
  EXPECT_EQ(c.files_opened, 1u);

  auto missing = fs_->ReadFile("bucket/task/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), ::testing::HasSubstr("mock://bucket/task/nope"));
}

TEST_F(ObjectStoreTest, WritesAppearAtCloseAndAbortOtherwise) {
  {
    auto w = fs_->NewWritableFile("bucket/task/new.txt");
    ASSERT_OK(w);
    ASSERT_OK((*w)->Append("hello "));
    ASSERT_OK((*w)->Append("world"));
    ASSERT_OK((*w)->Sync());
    ASSERT_OK((*w)->Close());
  }
  EXPECT_EQ(*fs_->ReadFile("bucket/task/new.txt"), "hello world");
  ASSERT_OK(fs_->RemoveFile("bucket/task/new.txt"));
  EXPECT_EQ(fs_->Stat("bucket/task/new.txt")->type, FileType::kNotFound);
  ASSERT_OK(fs_->CreateDirs("bucket/x/y"));
  EXPECT_OK(fs_->SyncDir("bucket/x"));
}

TEST_F(ObjectStoreTest, RenameAndLockAreNotSupported) {
  Status st = fs_->Rename("bucket/task/b.txt", "bucket/task/c.txt");
  EXPECT_EQ(st.code(), StatusCode::kNotSupported);
  EXPECT_THAT(st.message(), ::testing::HasSubstr("mock://bucket/task/b.txt"));
  auto lock = fs_->LockFile("bucket/task/.lock");
  EXPECT_EQ(lock.status().code(), StatusCode::kNotSupported);
  // Writers ask instead of probing (fs.h FileSystemCapabilities).
  const FileSystemCapabilities caps = fs_->Capabilities();
  EXPECT_FALSE(caps.atomic_rename);
  EXPECT_FALSE(caps.locks);
  EXPECT_FALSE(caps.directories);
  FileSystemWrapper wrapper(fs_.get());
  EXPECT_FALSE(wrapper.Capabilities().atomic_rename);
}

TEST(OpenLocationTest, PlainPathsStayLocal) {
  EXPECT_FALSE(IsUri("/data/task"));
  EXPECT_FALSE(IsUri("task"));
  EXPECT_FALSE(IsUri("weird:/x"));
  EXPECT_FALSE(IsUri("://x"));
  EXPECT_TRUE(IsUri("s3://b/k"));
  EXPECT_TRUE(IsUri("gs://b"));
  EXPECT_TRUE(IsUri("file:///tmp/x"));
  auto loc = OpenLocation("/data/task");
  ASSERT_OK(loc);
  EXPECT_EQ(loc->fs.get(), DefaultFileSystem());
  EXPECT_EQ(loc->root, "/data/task");
  EXPECT_EQ(loc->object_store, nullptr);
}

TEST(OpenLocationTest, MalformedUrisFailNamingTheUri) {
  for (const std::string uri : {"s3://", "s3:///task", "gs://"}) {
    auto loc = OpenLocation(uri);
    ASSERT_FALSE(loc.ok()) << uri;
    EXPECT_EQ(loc.status().code(), StatusCode::kInvalid) << uri;
    EXPECT_THAT(loc.status().message(), ::testing::HasSubstr(uri)) << loc.status().message();
  }
  auto unknown = OpenLocation("nosuchscheme://b/k");
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), ::testing::HasSubstr("nosuchscheme://b/k"));
  ObjectStoreOptions bad_endpoint;
  bad_endpoint.endpoint_url = "ftp://127.0.0.1:1";
  auto ftp = OpenLocation("s3://bucket/task", bad_endpoint);
  ASSERT_FALSE(ftp.ok());
  EXPECT_EQ(ftp.status().code(), StatusCode::kInvalid);
}

TEST(OpenLocationTest, FileUriReadsTheLocalDisk) {
  const std::string dir = ::testing::TempDir() + "reel_object_store_file_uri";
  ASSERT_OK(DefaultFileSystem()->CreateDirs(dir));
  ASSERT_OK(WriteFileAtomic(DefaultFileSystem(), dir + "/x.txt", "xyz"));
  auto loc = OpenLocation("file://" + dir);
  ASSERT_OK(loc);
  ASSERT_NE(loc->object_store, nullptr);
  EXPECT_EQ(*loc->fs->ReadFile(JoinPath(loc->root, "x.txt")), "xyz");
  EXPECT_EQ(loc->object_store->counters().bytes_read, 3u);
}

}  // namespace
}  // namespace reel
