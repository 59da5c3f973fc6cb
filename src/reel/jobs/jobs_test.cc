// The jobs area's own rules: store paths named by URI, and each report's one JSON form
// (the exact text for a report built here by hand, so a renamed or reordered key fails).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "jobs/locations.h"
#include "reel/fs.h"
#include "reel/jobs.h"

namespace reel {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(Locations, NamesStorePathsThatStartAWordByTheirUri) {
  internal::Locations at(ObjectStoreOptions{});
  at.Remember("b/task", "s3://b/task");
  EXPECT_EQ(at.Name("b/task/meta/info.json: bad"), "s3://b/task/meta/info.json: bad");
  EXPECT_EQ(at.Name("cannot read \"b/task/x\" (gone)"), "cannot read \"s3://b/task/x\" (gone)");
  EXPECT_EQ(at.Name("in b/task; again b/task"), "in s3://b/task; again s3://b/task");
  // Not a word of its own, another name, or already a URI: left as it is.
  EXPECT_EQ(at.Name("/x/b/task/y"), "/x/b/task/y");
  EXPECT_EQ(at.Name("b/tasks/x"), "b/tasks/x");
  EXPECT_EQ(at.Name("s3://b/task/z"), "s3://b/task/z");
}

TEST(Locations, ANamedStatusKeepsItsCodeAndRule) {
  internal::Locations at(ObjectStoreOptions{});
  at.Remember("b/t", "gs://b/t");
  const Status named = at.Name(Status::Corruption("b/t/data: torn").WithRule("layout.data"));
  EXPECT_EQ(named.code(), StatusCode::kCorruption);
  EXPECT_EQ(named.rule(), "layout.data");
  EXPECT_EQ(named.message(), "gs://b/t/data: torn");
  EXPECT_TRUE(at.Name(Status::OK()).ok());
}

TEST(TaskDirName, IsTheLastPartOfAPathOrUri) {
  EXPECT_EQ(TaskDirName("a/b/task/"), "task");
  EXPECT_EQ(TaskDirName("a/b/task"), "task");
  EXPECT_EQ(TaskDirName("s3://bucket/prefix/task/"), "task");
  EXPECT_EQ(TaskDirName("."), std::filesystem::current_path().filename().string());
}

TEST(ReportJson, PackResultIsItsDocumentedKeysInOrder) {
  PackResult r;
  r.zip_path = "t_ep000001.zip";
  r.episode_index = 2;
  r.upload_episode_index = 1;
  r.zip_bytes = 99;
  r.entries = {{"data/chunk-000/episode-001.parquet", 10, false}};
  EXPECT_EQ(ToJson(r),
            R"({"zip_path":"t_ep000001.zip","episode_index":2,"upload_episode_index":1,"zip_bytes":99,)"
            R"("entries":[{"arcname":"data/chunk-000/episode-001.parquet","size":10,"recompressed":false}]})");
}

TEST(ReportJson, FolderReportCountsEveryTasksFindings) {
  FolderReport folder;
  TaskReport a{"root/a", "pooled_episodes_v1", 3, {}};
  a.findings.push_back({"layout.data", Severity::kError, "data/x", "missing"});
  a.findings.push_back({"stats.count", Severity::kWarning, "", "stale"});
  TaskReport b{"root/b", "lerobot_v3", 1, {}};
  b.findings.push_back({"foreign.info", Severity::kError, "meta/info.json", "bad"});
  folder.tasks = {a, b};
  folder.skipped = {{"root/notes", "not a task"}};
  const auto j = nlohmann::ordered_json::parse(ToJson(folder));
  EXPECT_EQ(j["errors"], 2);
  EXPECT_EQ(j["warnings"], 1);
  EXPECT_EQ(j["tasks"][0]["errors"], 1);
  EXPECT_EQ(j["tasks"][0]["findings"][1]["severity"], "warning");
  EXPECT_EQ(j["tasks"][1]["findings"][0]["path"], "meta/info.json");
  EXPECT_EQ(j["skipped"][0]["reason"], "not a task");
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_THAT(keys, ::testing::ElementsAre("tasks", "errors", "warnings", "skipped"));
}

TEST(ReportJson, RebuiltStatsAreAnObjectAndUnparsableTextStaysText) {
  RebuildStatsReport r;
  r.episodes = 4;
  r.dry_run = true;
  r.rebuilt_json = R"({"observation.state":{"count":[7]}})";
  EXPECT_EQ(ToJson(r), R"({"episodes":4,"dry_run":true,"written":false,"agrees":true,"diffs":[],)"
                       R"("stats":{"observation.state":{"count":[7]}}})");
  r.rebuilt_json = "{not json";
  EXPECT_THAT(ToJson(r), HasSubstr(R"("stats":"{not json")"));
}

TEST(ReportJson, UploadEventOmitsWhatItDoesNotHave) {
  UploadEvent e;
  e.time = 1.5;
  e.event = "enqueued";
  e.episode_index = 3;
  e.state = "committed";
  EXPECT_EQ(ToJson(e), R"({"time":1.5,"event":"enqueued","episode_index":3,"state":"committed"})");
  e.sent = 5;
  e.total = 10;
  e.attempt = 2;
  e.detail = "HTTP 503";
  e.rule = "serve.busy";
  EXPECT_EQ(ToJson(e), R"({"time":1.5,"event":"enqueued","episode_index":3,"state":"committed","sent":5,)"
                       R"("total":10,"attempt":2,"detail":"HTTP 503","rule":"serve.busy"})");
}

TEST(ReportJson, AFailedUploadNamesCodeErrorAndRule) {
  std::vector<EpisodeUploadResult> results(2);
  results[0].episode_index = 1;
  results[0].outcome = UploadOutcome{1, "s-1", false, 1, false, false, 42};
  results[1].episode_index = 2;
  results[1].outcome = Status::Invalid("episode 2: refused").WithRule("slice.layout");
  EXPECT_EQ(ToJson(results),
            R"({"episodes":[{"episode_index":1,"ok":true,"session_id":"s-1","already_present":false,)"
            R"("attempts":1,"resumable":false,"deleted":false,"bytes":42},{"episode_index":2,"ok":false,)"
            R"("code":"Invalid","error":"episode 2: refused","rule":"slice.layout"}],"all_landed":false})");
}

TEST(ReportJson, OutboxStatusEscapesAndReplacesWhatItDoesNotWritePlainly) {
  OutboxStatus st;
  OutboxEntry e;
  e.server = "http://h/\"q\"";
  e.project = std::string("p\xff");  // not UTF-8
  e.episode_index = 7;
  e.state = "sending";
  e.age_s = 0.25;
  st.entries = {e};
  st.counters = {{"confirmed", 2}};
  const auto j = nlohmann::ordered_json::parse(ToJson(st));
  EXPECT_EQ(j["jobs"][0]["server"], "http://h/\"q\"");
  EXPECT_EQ(j["jobs"][0]["project"], "p\xEF\xBF\xBD");
  EXPECT_EQ(j["jobs"][0]["age_s"], 0.25);
  EXPECT_EQ(j["counters"]["confirmed"], 2);
  EXPECT_THAT(ToJson(OutboxStatus{}), Not(HasSubstr("null")));
}

}  // namespace
}  // namespace reel
