// reel migrate reading a v1.0 session's metadata.json (maint/migrate_session.cc and the
// declaration in migrate.cc; found by fuzz_migrate, fuzz/crashes/README.md MIGRATE-TYPE):
// metadata.json comes from another program, so a key of another type than the v1.0 writer's
// (shared/docs/v1.0-layout.md) is an error naming the file, the key and the value found,
// never an exception out of reel, and nothing is published. The same for the manifest
// --restore reads back from the task (meta/.migrate_manifest.json).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "maint/migrate_internal.h"
#include "reel/fs.h"
#include "reel/maintenance.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

namespace stdfs = std::filesystem;

class MigrateMetadata : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = JoinPath(::testing::TempDir(), "reel_migrate_meta.XXXXXX");
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { stdfs::remove_all(dir_); }

  static void Write(const std::string& path, const std::string& bytes) {
    stdfs::create_directories(stdfs::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << bytes;
  }

  // A one-session v1.0 task (pick/pick_000001: 2 frames, one RGB mp4 for head_left) whose
  // metadata.json holds `extra` keys besides the required ones; migrated with --to, through
  // `fs` when given.
  Result<MigrateReport> Migrate(const std::string& extra, bool in_place = false, FileSystem* fs = nullptr) {
    const std::string session = dir_ + "/pick/pick_000001";
    Write(session + "/metadata.json", R"({"format": "egodata", "format_version": "1.0", "episode_index": 1,
        "fps": 30, "created_at": 1700000000.0, "task_name": "pick")" + extra + "}");
    Write(session + "/timestamps.json", R"({"timestamps": [{"frame_index": 0, "timestamp": 0.0, "wall_time": 1.7e9},
        {"frame_index": 1, "timestamp": 0.033, "wall_time": 1.7e9}], "total_frames": 2})");
    Write(session + "/videos/head_left/chunk-0000/head_left.mp4", "");
    MigrateOptions options;
    if (!in_place) options.to = dir_ + "/out";
    options.fs = fs;
    return MigrateTask(dir_ + "/pick", options);
  }

  static std::string Read(const std::string& path) {
    std::stringstream text;
    text << std::ifstream(path, std::ios::binary).rdbuf();
    return text.str();
  }

  std::string dir_;
};

// Renames out of the staging fail: the publish's first act (adopting a staged file) fails
// before anything moved, so the run ends as one killed after staging does: ready.json and
// every staged file in place, nothing published.
class FailingPublish : public FileSystemWrapper {
 public:
  FailingPublish() : FileSystemWrapper(DefaultFileSystem()) {}
  Status Rename(const std::string& from, const std::string& to) override {
    if (from.find("/.reel-migrate/task/") != std::string::npos && to.find("/.reel-migrate/") == std::string::npos)
      return Status::IOError(from + ": injected failure (the run is killed here)");
    return FileSystemWrapper::Rename(from, to);
  }
};

// Issue 27 finding 7: a run killed after staging; the user edits the v1.0 session; the next
// run published the stale staging over the edit. The staging is now checked against what
// it was built from (ready.json "sources") and built again.
TEST_F(MigrateMetadata, AStagingBuiltBeforeTheSourcesChangedIsStagedAgain) {
  FailingPublish failing;
  ASSERT_FALSE(Migrate(R"(, "codebase_version": "1.0.12")", false, &failing).ok());
  ASSERT_TRUE(stdfs::exists(dir_ + "/out/.reel-migrate/ready.json"));
  ASSERT_THAT(Read(dir_ + "/out/.reel-migrate/task/meta/info.json"), ::testing::HasSubstr("1.0.12-migrated"));
  auto report = Migrate(R"(, "codebase_version": "2.0.0-edited")");  // the edit, then the re-run
  ASSERT_OK(report);
  const std::string info = Read(dir_ + "/out/meta/info.json");
  EXPECT_THAT(info, ::testing::HasSubstr("2.0.0-edited-migrated")) << info;
  EXPECT_THAT(info, ::testing::Not(::testing::HasSubstr("1.0.12"))) << info;
  ASSERT_EQ(report->warnings.size(), 1u);
  EXPECT_THAT(report->warnings[0], ::testing::HasSubstr(".reel-migrate: an interrupted run's staging was built from sources that have "
                                     "changed since"))
      << report->warnings[0];
  EXPECT_FALSE(stdfs::exists(dir_ + "/out/.reel-migrate"));
}

TEST_F(MigrateMetadata, AStagingOfUnchangedSourcesIsPublished) {
  FailingPublish failing;
  ASSERT_FALSE(Migrate(R"(, "codebase_version": "1.0.12")", false, &failing).ok());
  const std::string staged = Read(dir_ + "/out/.reel-migrate/task/meta/info.json");
  const auto staged_at = stdfs::last_write_time(dir_ + "/out/.reel-migrate/task/meta/info.json");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a rebuilt file would have a later mtime
  MigrateOptions options;
  options.to = dir_ + "/out";
  auto report = MigrateTask(dir_ + "/pick", options);
  ASSERT_OK(report);
  EXPECT_TRUE(report->warnings.empty()) << report->warnings[0];
  EXPECT_EQ(Read(dir_ + "/out/meta/info.json"), staged);
  EXPECT_EQ(stdfs::last_write_time(dir_ + "/out/meta/info.json"), staged_at);  // published as staged, not rebuilt
}

TEST_F(MigrateMetadata, TheWellTypedSessionMigrates) {
  auto report = Migrate(R"(, "sensor_dim": 256, "codebase_version": "1.0.12",
      "cameras": {"head_left": {"height": 24, "width": 32, "fps": 15}, "head_depth": {"type": "depth"}},
      "devices": [{"key": "s80m:AB", "kind": "s80m", "name": "Head", "slots": ["head_left"]}])");
  ASSERT_OK(report);
  ASSERT_EQ(report->sessions.size(), 1u);
  EXPECT_EQ(report->sessions[0].frames, 2);
}

TEST_F(MigrateMetadata, AKeyOfAnotherTypeIsAnErrorNamingIt) {
  const std::pair<const char*, const char*> cases[] = {
      {R"(, "cameras": {"head_depth": {"type": 5}})", "cameras.head_depth: key \"type\" must be a string"},
      {R"(, "sensor_dim": "256")", "key \"sensor_dim\" must be an integer"},
      {R"(, "sensor_dim": 1e30)", "key \"sensor_dim\" must be an integer"},
      {R"(, "codebase_version": 1012)", "key \"codebase_version\" must be a string"},
      {R"(, "cameras": {"head_left": {"height": "24"}})", "cameras.head_left: key \"height\" must be an integer"},
      {R"(, "cameras": {"head_left": {"width": 1e300}})", "cameras.head_left: key \"width\" must be an integer"},
      {R"(, "cameras": {"head_left": {"fps": "15"}})", "cameras.head_left: key \"fps\" must be a number"},
      {R"(, "devices": [{"key": 5}])", "devices[0]: key \"key\" must be a string"},
      {R"(, "devices": [{"key": "k", "name": ["Head"]}])", "devices[0]: key \"name\" must be a string"},
  };
  for (const auto& [extra, message] : cases) {
    auto report = Migrate(extra);
    ASSERT_FALSE(report.ok()) << extra;
    EXPECT_THAT(report.status().message(), ::testing::HasSubstr("pick_000001/metadata.json"))
        << report.status().ToString();
    EXPECT_THAT(report.status().message(), ::testing::HasSubstr(message)) << extra << " -> " << report.status().ToString();
    EXPECT_FALSE(stdfs::exists(dir_ + "/out/meta/info.json")) << extra << ": published";
    stdfs::remove_all(dir_);
    stdfs::create_directories(dir_);
  }
}

TEST_F(MigrateMetadata, ADamagedManifestIsAnErrorNamingTheKey) {
  using Json = nlohmann::json;
  const std::pair<std::function<void(Json&)>, const char*> cases[] = {
      {[](Json& m) { m["sessions"][0]["session"] = 5; }, "key \"session\" must be a string"},
      {[](Json& m) { m["sessions"][0]["episode_index"] = "1"; }, "key \"episode_index\" must be an integer"},
      {[](Json& m) { m["in_place"] = "yes"; }, "key \"in_place\" must be true or false"},
      {[](Json& m) { m["backup"] = 5; }, "key \"backup\" must be a string"},
  };
  for (const auto& [damage, message] : cases) {
    auto migrated = Migrate("", /*in_place=*/true);
    ASSERT_OK(migrated);
    const std::string path = dir_ + "/pick/meta/.migrate_manifest.json";
    std::stringstream text;
    text << std::ifstream(path).rdbuf();
    Json manifest = Json::parse(text.str());
    damage(manifest);
    std::ofstream(path, std::ios::trunc) << manifest.dump();
    MigrateOptions restore;
    restore.restore = true;
    auto restored = MigrateTask(dir_ + "/pick", restore);
    ASSERT_FALSE(restored.ok()) << message;
    EXPECT_THAT(restored.status().message(), ::testing::HasSubstr(".migrate_manifest.json"))
        << restored.status().ToString();
    EXPECT_THAT(restored.status().message(), ::testing::HasSubstr(message)) << restored.status().ToString();
    EXPECT_TRUE(stdfs::exists(dir_ + "/pick/meta/info.json")) << message << ": restored anyway";
    stdfs::remove_all(dir_);
    stdfs::create_directories(dir_);
  }
}

// timestamps.json is parsed entry by entry (issue 27 finding 13): the shapes a document
// parse refused are refused with the same messages, keys a frame does not take are skipped
// at any depth, and the frames are the first entry of each frame_index.
TEST_F(MigrateMetadata, TimestampsJsonIsReadEntryByEntry) {
  const std::string session = dir_ + "/s";
  auto read = [&](const std::string& text) {
    Write(session + "/timestamps.json", text);
    return internal::ReadLegacyFrames(DefaultFileSystem(), session);
  };
  auto frames = read(R"({"meta": [1, {"timestamps": 5}], "timestamps": [
      {"frame_index": 0, "extra": {"deep": [[[]], {"frame_index": 9}]}, "timestamp": 0.5, "hardware_ns": 7},
      {"frame_index": 0, "timestamp": 0.4}, {"frame_index": 1, "timestamp": 0.6, "wall_time": 2}],
      "total_frames": 2})");
  ASSERT_OK(frames);
  ASSERT_EQ(frames->frames.size(), 2u);
  EXPECT_EQ(frames->frames[0].frame_index, 0);
  EXPECT_EQ(frames->frames[0].timestamp, 0.5);
  EXPECT_EQ(frames->frames[0].hardware_ns, 7);
  EXPECT_EQ(frames->frames[1].wall_time, 2.0);
  const std::pair<const char*, const char*> refused[] = {
      {R"([1])", "must be a JSON object, found a JSON array"},
      {R"({"timestamps": {}})", "\"timestamps\" must be an array"},
      {R"({"total_frames": 1})", "\"timestamps\" must be an array"},
      {R"({"timestamps": []})", "no frames"},
      {R"({"timestamps": [5]})", "a timestamps entry must be an object, found 5"},
      {R"({"timestamps": [[{"frame_index": 0}]]})", "a timestamps entry must be an object, found [{\"frame_index\":0}]"},
      {R"({"timestamps": [{"timestamp": 0}]})", "a timestamps entry has no frame_index"},
      {R"({"timestamps": [{"frame_index": 0, "timestamp": [1]}]})", "key \"timestamp\" must be a number"},
      {R"({"timestamps": [{"frame_index": "0"}]})", "key \"frame_index\" must be an integer"},
      {R"({"timestamps": [{"frame_index": 0, "timestamp": 1e999}]})", "json.number"},
      {R"({"timestamps": [{"frame_index": 0}], "timestamps": []})", "\"timestamps\" appears twice"},
      {R"({"timestamps": [{"frame_index": 0})", "malformed JSON"},
      {R"({"timestamps": [{"frame_index": 0, "timestamp": NaN}]})", "malformed JSON"},
      {R"({"timestamps": [{"frame_index": 0}, {"frame_index": 2}]})", "frame_index 2 follows 0: a frame is missing"},
  };
  for (const auto& [text, message] : refused) {
    auto got = read(text);
    ASSERT_FALSE(got.ok()) << text;
    EXPECT_THAT(got.status().message(), ::testing::HasSubstr(session + "/timestamps.json: ")) << got.status().ToString();
    EXPECT_THAT(got.status().message(), ::testing::HasSubstr(message)) << text << " -> " << got.status().ToString();
  }
  std::string deep = R"({"timestamps": [{"frame_index": 0, "x": )" + std::string(70, '[') + std::string(70, ']') + "}]}";
  auto too_deep = read(deep);
  ASSERT_FALSE(too_deep.ok());
  EXPECT_THAT(too_deep.status().message(), ::testing::HasSubstr("json.depth")) << too_deep.status().ToString();
}

}  // namespace
}  // namespace reel
