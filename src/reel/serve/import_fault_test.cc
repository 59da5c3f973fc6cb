// A slice import failing half-way through its zip extraction (issue 15, "every byte
// through FileSystem"): ImportSlice extracts through ImportSliceOptions::fs, so a
// FileSystemWrapper can fail a write of an extracted file. All or nothing: the
// refused import leaves the task byte-identical and no staging behind; the same
// slice then imports cleanly.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <string>

#include "reel/fs.h"
#include "reel/pack.h"
#include "reel/recorder.h"
#include "reel/serve.h"
#include "reel/simulate.h"
#include "reel/task.h"
#include "testing/tiny_rig.h"

namespace reel {
namespace {

namespace stdfs = std::filesystem;

// Fails the fail_at-th Append (after writing half of it) to a file under `under`.
class ExtractFaults final : public FileSystemWrapper {
 public:
  ExtractFaults(std::string under, int fail_at)
      : FileSystemWrapper(DefaultFileSystem()), under_(std::move(under)), fail_at_(fail_at) {}
  int appends() const { return count_; }

  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    REEL_ASSIGN_OR_RETURN(auto file, target()->NewWritableFile(path));
    if (path.rfind(under_, 0) != 0) return file;
    return std::unique_ptr<WritableFile>(new File(this, std::move(file)));
  }

 private:
  class File final : public WritableFileWrapper {
   public:
    File(ExtractFaults* fs, std::unique_ptr<WritableFile> f) : WritableFileWrapper(std::move(f)), fs_(fs) {}
    Status Append(std::string_view data) override {
      if (++fs_->count_ == fs_->fail_at_) {
        (void)target()->Append(data.substr(0, data.size() / 2));
        return Status::IOError("injected extraction Append fault");
      }
      return target()->Append(data);
    }

   private:
    ExtractFaults* fs_;
  };

  std::string under_;
  int fail_at_;
  std::atomic<int> count_{0};
};

using Tree = std::map<std::string, std::string>;

Tree ReadTree(const std::string& root) {
  Tree out;
  if (!stdfs::exists(root)) return out;
  for (const auto& e : stdfs::recursive_directory_iterator(root))
    if (e.is_regular_file())
      out[stdfs::relative(e.path(), root).string()] = *DefaultFileSystem()->ReadFile(e.path().string());
  return out;
}

TEST(ImportFaultTest, ExtractionFailingHalfWayLeavesTheTaskByteIdentical) {
  std::string tmpl = JoinPath(::testing::TempDir(), "reel_import_fault.XXXXXX");
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const std::string dir = tmpl;
  const std::string root = JoinPath(dir, "server");
  const std::string task = JoinPath(root, "pick");
  const std::string source = JoinPath(dir, "rig/pick");
  // The server's task holds N=1,2; the rig's copy of it records N=3, packed as a slice.
  ASSERT_TRUE(reel::testing::RecordTinyEpisodes(task, 2).ok());
  stdfs::create_directories(DirName(source));
  stdfs::copy(task, source, stdfs::copy_options::recursive);
  ASSERT_TRUE(reel::testing::RecordTinyEpisodes(source, 1).ok());
  const std::string zip = JoinPath(dir, "slice.zip");
  auto packed = PackEpisode(source, 3, zip);
  ASSERT_TRUE(packed.ok()) << packed.status().ToString();
  ASSERT_GT(packed->entries.size(), 3u);

  const Tree before = ReadTree(task);
  const std::string staging = JoinPath(dir, "staging");
  ImportRequest request;
  request.project = "pick";
  request.zip_path = zip;
  ImportSliceOptions options;
  options.staging_dir = staging;

  // The third extracted file's write fails half-way.
  ExtractFaults faults(staging + "/", 3);
  options.fs = &faults;
  const ImportOutcome refused = ImportSlice(root, request, options);
  EXPECT_GE(faults.appends(), 3);
  EXPECT_GE(refused.http_status, 400) << refused.rule << ": " << refused.message;
  EXPECT_FALSE(refused.already_present);
  const Tree after = ReadTree(task);
  EXPECT_EQ(after.size(), before.size());
  for (const auto& [rel, bytes] : before) {
    if (rel == "meta/episodes/.lock") continue;
    EXPECT_TRUE(after.count(rel) && after.at(rel) == bytes) << rel << " changed";
  }
  EXPECT_TRUE(ReadTree(staging).empty()) << "staging left behind";

  // The same slice, without the fault, imports.
  options.fs = nullptr;
  const ImportOutcome imported = ImportSlice(root, request, options);
  EXPECT_EQ(imported.http_status, 201) << imported.rule << ": " << imported.message;
  EXPECT_EQ(imported.episode_index, 3);
  auto opened = Task::Open(task);
  ASSERT_TRUE(opened.ok());
  auto episodes = (*opened)->ListEpisodes();
  ASSERT_TRUE(episodes.ok());
  EXPECT_EQ(episodes->size(), 3u);
  stdfs::remove_all(dir);
}

}  // namespace
}  // namespace reel
