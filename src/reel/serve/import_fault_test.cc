// A slice import failing half-way through its zip extraction (issue 15, "every byte
// through FileSystem"): ImportSlice extracts through ImportSliceOptions::fs, so a
// FileSystemWrapper can fail a write of an extracted file. All or nothing: the
// refused import leaves the task byte-identical and no staging behind; the same
// slice then imports cleanly.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <string>

#include "reel/fs.h"
#include "reel/pack.h"
#include "reel/recorder.h"
#include "reel/serve.h"
#include "reel/simulate.h"
#include "reel/task.h"
#include "testing/fault_fs.h"
#include "testing/tiny_rig.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

namespace stdfs = std::filesystem;

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
  ASSERT_OK(reel::testing::RecordTinyEpisodes(task, 2));
  stdfs::create_directories(DirName(source));
  stdfs::copy(task, source, stdfs::copy_options::recursive);
  ASSERT_OK(reel::testing::RecordTinyEpisodes(source, 1));
  const std::string zip = JoinPath(dir, "slice.zip");
  auto packed = PackEpisode(source, 3, zip);
  ASSERT_OK(packed);
  ASSERT_GT(packed->entries.size(), 3u);

  const Tree before = ReadTree(task);
  const std::string staging = JoinPath(dir, "staging");
  ImportRequest request;
  request.project = "pick";
  request.zip_path = zip;
  ImportSliceOptions options;
  options.staging_dir = staging;

  // The third extracted file's write fails half-way.
  testing::FaultFileSystem faults;
  faults.Inject({.ops = testing::Ops({testing::FsOp::kAppend}),
                 .on = testing::PathsUnder(staging + "/"),
                 .nth = 3,
                 .half_write = true});
  options.fs = &faults;
  const ImportOutcome refused = ImportSlice(root, request, options);
  EXPECT_TRUE(faults.fired());
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
  ASSERT_OK(opened);
  auto episodes = (*opened)->ListEpisodes();
  ASSERT_OK(episodes);
  EXPECT_EQ(episodes->size(), 3u);
  stdfs::remove_all(dir);
}

}  // namespace
}  // namespace reel
