// ExportTask's file systems (reel/interop.h): the task is read through its own FileSystem
// only, the output written through ExportOptions::output_fs; and ExportPublish::kUpload
// never lets a reader see the marker file (meta/info.json, manifest.json) of an output
// that is not whole, whichever write fails, with or without replace_existing. The fault
// loops drive kUpload's two steps (RemoveExportForReplace, UploadExport) on a finished
// export, so that each fault costs a file copy, not an export.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "interop/export_internal.h"
#include "reel/interop.h"
#include "reel/task.h"
#include "testing/fault_fs.h"
#include "testing/rooted_fs.h"
#include "testing/tiny_rig.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

namespace fs = std::filesystem;
using Tree = std::map<std::string, std::string>;  // relative path -> bytes

// Every regular file under `dir`, with its bytes.
Tree ReadTree(const std::string& dir) {
  Tree out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    out[fs::relative(e.path(), dir).string()] = bytes.str();
  }
  return out;
}

// Fails the k-th call that changes the output (a file created, a file or directory
// removed), and with `stays_down` every later one too: a request lost half-way through an
// upload or a replacement, or the store going away there.
testing::InjectedFault OutputFault(int k, bool stays_down) {
  return {.ops = testing::Ops({testing::FsOp::kNewWritableFile, testing::FsOp::kRemoveFile, testing::FsOp::kRemoveDir}),
          .nth = k,
          .stays_down = stays_down};
}

class ExportFsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string tmpl = JoinPath(::testing::TempDir(), "reel_export_test.XXXXXX");
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = new std::string(tmpl);
    ASSERT_OK(testing::RecordTinyEpisodes(*dir_ + "/task", 2));
    for (ExportFormat format : {ExportFormat::kLeRobotV30, ExportFormat::kBundle}) {
      ExportOptions o;
      o.format = format;
      auto task = Task::Open(*dir_ + "/task");
      ASSERT_OK(task);
      auto report = ExportTask(**task, Reference(format), o);
      ASSERT_OK(report);
    }
    ExportOptions first;  // an older export of the same task: episode 1 only
    first.episodes = {1};
    auto task = Task::Open(*dir_ + "/task");
    ASSERT_OK(task);
    ASSERT_OK(ExportTask(**task, *dir_ + "/older", first));
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::string Reference(ExportFormat format) { return *dir_ + "/reference-" + ExportFormatName(format); }

  // Exports the local task to `out` by upload through `out_fs`.
  static Result<ExportReport> Upload(FileSystem* out_fs, const std::string& out, ExportFormat format,
                                     bool replace = false) {
    REEL_ASSIGN_OR_RETURN(auto task, Task::Open(*dir_ + "/task"));
    ExportOptions o;
    o.format = format;
    o.output_fs = out_fs;
    o.publish = ExportPublish::kUpload;
    o.replace_existing = replace;
    return ExportTask(*task, out, o);
  }

  static std::string* dir_;
};
std::string* ExportFsTest::dir_ = nullptr;

TEST_F(ExportFsTest, TaskIsReadOnlyThroughItsOwnFileSystem) {
  // The task and the output live under made-up paths of two file systems: reading the
  // task's videos through the output's (or the default) file system cannot succeed.
  fs::create_directories(*dir_ + "/split");
  testing::RootedFs task_fs("/reel-virtual-task", *dir_ + "/task", testing::RootedFs::kReadOnly);
  testing::RootedFs out_fs("/reel-virtual-out", *dir_ + "/split", testing::RootedFs::kWriteOnly);
  for (ExportFormat format : {ExportFormat::kLeRobotV30, ExportFormat::kLeRobotV21, ExportFormat::kBundle}) {
    SCOPED_TRACE(ExportFormatName(format));
    TaskOptions to;
    to.fs = &task_fs;
    auto task = Task::Open("/reel-virtual-task", to);
    ASSERT_OK(task);
    ExportOptions o;
    o.format = format;
    o.output_fs = &out_fs;
    const std::string name = std::string("out-") + ExportFormatName(format);
    auto report = ExportTask(**task, "/reel-virtual-out/" + name, o);
    ASSERT_OK(report);
    EXPECT_GT(report->videos_copied + report->videos_reencoded, 0);
    EXPECT_EQ(task_fs.writes + task_fs.refused + task_fs.outside + out_fs.refused, 0);
    EXPECT_GT(task_fs.reads, 0);
    if (format != ExportFormat::kLeRobotV21) EXPECT_EQ(ReadTree(*dir_ + "/split/" + name), ReadTree(Reference(format)));
  }
}

TEST_F(ExportFsTest, UploadWritesTheSameFilesAsRename) {
  for (ExportFormat format : {ExportFormat::kLeRobotV30, ExportFormat::kBundle}) {
    const std::string out = *dir_ + "/upload-" + ExportFormatName(format);
    auto report = Upload(DefaultFileSystem(), out, format);
    ASSERT_OK(report);
    EXPECT_EQ(report->out_dir, out);
    EXPECT_EQ(ReadTree(out), ReadTree(Reference(format)));
    auto again = Upload(DefaultFileSystem(), out, format);
    EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
  }
}

TEST_F(ExportFsTest, AFailedUploadNeverLeavesTheMarker) {
  for (ExportFormat format : {ExportFormat::kLeRobotV30, ExportFormat::kBundle}) {
    const std::string marker = format == ExportFormat::kBundle ? "manifest.json" : "meta/info.json";
    const Tree want = ReadTree(Reference(format));
    for (bool stays_down : {true, false}) {
      for (int k = 1;; ++k) {
        SCOPED_TRACE(std::string(ExportFormatName(format)) + (stays_down ? ", store down" : ", one write lost") +
                     " from write " + std::to_string(k));
        const std::string out = *dir_ + "/fault";
        fs::remove_all(out);
        testing::FaultFileSystem faulty;
        faulty.Inject(OutputFault(k, stays_down));
        Status report = internal::UploadExport(DefaultFileSystem(), Reference(format), &faulty, out,
                                               internal::DatasetMarker(format), {});
        const Tree left = ReadTree(out);
        if (report.ok()) {
          EXPECT_EQ(static_cast<size_t>(k), want.size() + 1) << "every file is one NewWritableFile";
          EXPECT_EQ(left, want);
          break;
        }
        EXPECT_EQ(report.code(), StatusCode::kIOError) << report.ToString();
        EXPECT_FALSE(left.count(marker)) << "a reader would take a partial upload for a dataset";
        // A store that stays up gets the files sent so far removed again; one that went away
        // keeps the k-1 complete files sent before it did.
        EXPECT_EQ(left.size(), stays_down ? static_cast<size_t>(k - 1) : 0u);
        for (const auto& [rel, bytes] : left) EXPECT_EQ(bytes, want.at(rel)) << rel;
        ASSERT_LE(static_cast<size_t>(k), want.size());
      }
    }
  }
}

TEST_F(ExportFsTest, AFailedReplacementLeavesTheOldExportWholeOrNoMarker) {
  const ExportFormat format = ExportFormat::kLeRobotV30;
  const std::string out = *dir_ + "/replace";
  const Tree old = ReadTree(*dir_ + "/older");
  ASSERT_NE(old, ReadTree(Reference(format)));
  for (int k = 1;; ++k) {
    SCOPED_TRACE("store down from change " + std::to_string(k));
    fs::remove_all(out);
    fs::copy(*dir_ + "/older", out, fs::copy_options::recursive);
    testing::FaultFileSystem faulty;
    faulty.Inject(OutputFault(k, /*stays_down=*/true));
    Status st = internal::RemoveExportForReplace(&faulty, out);
    if (st.ok())
      st = internal::UploadExport(DefaultFileSystem(), Reference(format), &faulty, out, "meta/info.json", {});
    const Tree now = ReadTree(out);
    if (st.ok()) {
      EXPECT_EQ(now, ReadTree(Reference(format))) << "nothing of the old export is left";
      break;
    }
    EXPECT_TRUE(now == old || !now.count("meta/info.json")) << "a reader would see a mix of two exports";
    ASSERT_LT(k, 200);
  }
}

TEST_F(ExportFsTest, UploadReplacesAnExistingExportOnlyWhenAsked) {
  const std::string out = *dir_ + "/asked";
  fs::copy(*dir_ + "/older", out, fs::copy_options::recursive);
  auto refused = Upload(DefaultFileSystem(), out, ExportFormat::kLeRobotV30);
  EXPECT_EQ(refused.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(ReadTree(out), ReadTree(*dir_ + "/older"));
  auto replaced = Upload(DefaultFileSystem(), out, ExportFormat::kLeRobotV30, /*replace=*/true);
  ASSERT_OK(replaced);
  EXPECT_EQ(ReadTree(out), ReadTree(Reference(ExportFormat::kLeRobotV30)));
}

}  // namespace
}  // namespace reel
