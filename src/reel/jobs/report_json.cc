// ToJson of include/reel/jobs.h: the one JSON form of each job's report, written where
// the report's fields are known. Key order is part of the form (docs/cli.md).
#include <algorithm>

#include "reel/jobs.h"
#include "util/json_util.h"

namespace reel {
namespace {

using internal::Json;

std::string Text(const Json& j) { return internal::Dump(j, -1); }

// A JSON document reel wrote itself (a stats.json, a feature) as a value; its text when
// it does not parse (never expected: a report still comes out).
Json Embedded(const std::string& text) {
  auto parsed = internal::ParseJson(text, "report");
  return parsed.ok() ? std::move(*parsed) : Json(text);
}

Json FindingJson(const Finding& f) {
  return {{"rule", f.rule}, {"severity", SeverityName(f.severity)}, {"path", f.path}, {"message", f.message}};
}

Json TaskReportJson(const TaskReport& r) {
  Json findings = Json::array();
  for (const Finding& f : r.findings) findings.push_back(FindingJson(f));
  return {{"path", r.path},
          {"format", r.format},
          {"episodes", r.episodes},
          {"errors", r.Count(Severity::kError)},
          {"warnings", r.Count(Severity::kWarning)},
          {"findings", std::move(findings)}};
}

Json DecisionJson(const ScaleDecision& d) {
  return {{"episode_index", d.episode_index}, {"column", d.column},
          {"force_column", d.force_column},   {"current_source", d.current_source},
          {"current_scale", d.current_scale}, {"contact_frames", d.contact_frames},
          {"ratio", d.ratio},                 {"ratio_p10", d.ratio_low},
          {"ratio_p90", d.ratio_high},        {"scale", d.scale ? Json(*d.scale) : Json()},
          {"decided", d.scale.has_value()},   {"reason", d.reason},
          {"written", d.written}};
}

Json BackfillJson(const HandPoseBackfill& e) {
  return {{"episode_index", e.episode_index},   {"source", e.source},
          {"skipped", e.skipped},               {"data_rows", e.data_rows},
          {"keypoint_rows", e.keypoint_rows},   {"left_rows", e.left_rows},
          {"right_rows", e.right_rows},         {"unlabelled_hands", e.unlabelled_hands},
          {"ambiguous_rows", e.ambiguous_rows}, {"unmatched_rows", e.unmatched_rows},
          {"changed", e.changed},               {"written", e.written}};
}

Json OutcomeJson(const EpisodeUploadResult& one) {
  const Result<UploadOutcome>& r = one.outcome;
  if (!r.ok())
    return {{"episode_index", one.episode_index},
            {"ok", false},
            {"code", StatusCodeName(r.status().code())},
            {"error", r.status().message()},
            {"rule", r.status().rule()}};
  return {{"episode_index", one.episode_index}, {"ok", true},
          {"session_id", r->session_id},        {"already_present", r->already_present},
          {"attempts", r->attempts},            {"resumable", r->resumable},
          {"deleted", r->deleted},              {"bytes", r->bytes}};
}

}  // namespace

std::string ToJson(const ForeignEpisode& e) {
  Json videos = Json::object();
  for (const VideoSpan& v : e.videos)
    videos[v.key] = {{"path", v.path}, {"from_timestamp", v.from_timestamp}, {"to_timestamp", v.to_timestamp}};
  Json j = {{"episode_index", e.episode_index},
            {"length", e.length},
            {"tasks", e.tasks},
            {"data_path", e.data_path},
            {"from_row", e.from_row},
            {"to_row", e.to_row},
            {"dataset_from_index", e.dataset_from_index},
            {"dataset_to_index", e.dataset_to_index},
            {"videos", std::move(videos)}};
  if (!e.bundle_id.empty()) {
    j["bundle_id"] = e.bundle_id;
    j["task_description"] = e.task_description;
  }
  return Text(j);
}

std::string ToJson(const ExportReport& r) {
  return Text({{"out_dir", r.out_dir},
               {"format", ExportFormatName(r.format)},
               {"episodes", r.episodes},
               {"frames", r.frames},
               {"videos_copied", r.videos_copied},
               {"videos_reencoded", r.videos_reencoded},
               {"features", r.features},
               {"warnings", r.warnings}});
}

std::string ToJson(const ImportJobReport& job) {
  const ImportReport& r = job.report;
  Json skipped = Json::array();
  for (const SkippedEpisode& k : r.skipped)
    skipped.push_back({{"source_episode", k.source_episode}, {"episode_index", k.episode_index}});
  Json out({{"task", job.task},
            {"skipped", std::move(skipped)},
            {"episodes", r.episodes},
            {"frames", r.frames},
            {"episode_indices", r.episode_indices},
            {"videos_copied", r.videos_copied},
            {"videos_reencoded", r.videos_reencoded},
            {"round_trip", r.round_trip},
            {"warnings", r.warnings}});
  if (job.pushed) out["pushed"] = {{"files_sent", job.pushed->files_sent}, {"bytes_sent", job.pushed->bytes_sent}};
  return Text(out);
}

std::string ToJson(const PackResult& r) {
  Json entries = Json::array();
  for (const PackedEntry& e : r.entries)
    entries.push_back({{"arcname", e.arcname}, {"size", e.size}, {"recompressed", e.recompressed}});
  return Text({{"zip_path", r.zip_path},
               {"episode_index", r.episode_index},
               {"upload_episode_index", r.upload_episode_index},
               {"zip_bytes", r.zip_bytes},
               {"entries", std::move(entries)}});
}

std::string ToJson(const PushReport& r) {
  return Text({{"episodes", r.episodes},
               {"sent", r.sent},
               {"resumed", r.resumed},
               {"present", r.present},
               {"files_sent", r.files_sent},
               {"bytes_sent", r.bytes_sent},
               {"task_files_sent", r.task_files_sent},
               {"dry_run", r.dry_run}});
}

std::string ToJson(const FolderReport& r) {
  Json tasks = Json::array(), skipped = Json::array();
  int64_t errors = 0, warnings = 0;
  for (const TaskReport& t : r.tasks) {
    tasks.push_back(TaskReportJson(t));
    errors += t.Count(Severity::kError);
    warnings += t.Count(Severity::kWarning);
  }
  for (const SkippedFolder& f : r.skipped) skipped.push_back({{"path", f.path}, {"reason", f.reason}});
  return Text({{"tasks", std::move(tasks)}, {"errors", errors}, {"warnings", warnings}, {"skipped", std::move(skipped)}});
}

std::string ToJson(const RebuildStatsReport& r) {
  Json diffs = Json::array();
  for (const StatsBlockDiff& d : r.diffs) diffs.push_back({{"block", d.block}, {"what", d.what}, {"detail", d.detail}});
  return Text({{"episodes", r.episodes},
               {"dry_run", r.dry_run},
               {"written", r.written},
               {"agrees", r.diffs.empty()},
               {"diffs", std::move(diffs)},
               {"stats", Embedded(r.rebuilt_json)}});
}

std::string ToJson(const MigrateReport& r) {
  Json sessions = Json::array();
  for (const MigratedSession& s : r.sessions)
    sessions.push_back(
        {{"session", s.session}, {"episode_index", s.episode_index}, {"frames", s.frames}, {"videos", s.videos}});
  return Text({{"task", r.task},           {"already_pooled", r.already_pooled}, {"dry_run", r.dry_run},
               {"backup", r.backup},       {"sessions", std::move(sessions)},    {"frames", r.frames},
               {"restore", r.restore},     {"nothing_to_restore", r.nothing_to_restore},
               {"keypoints", r.keypoints}, {"keypoints_moved", r.keypoints_moved}, {"warnings", r.warnings}});
}

std::string ToJson(const SplitEpisodesReport& r) {
  Json shards = Json::array();
  for (const SplitShard& s : r.shards)
    shards.push_back({{"shard", s.shard}, {"split", s.split}, {"kept", s.kept}, {"files", s.files}});
  return Text({{"task", r.task},
               {"dry_run", r.dry_run},
               {"episodes_split", r.episodes_split},
               {"episodes_kept", r.episodes_kept},
               {"shards", std::move(shards)}});
}

std::string ToJson(const RepairScaleReport& r) {
  Json decisions = Json::array();
  for (const ScaleDecision& d : r.decisions) decisions.push_back(DecisionJson(d));
  const auto refused = std::count_if(r.decisions.begin(), r.decisions.end(),
                                     [](const ScaleDecision& d) { return !d.scale.has_value(); });
  return Text({{"applied", r.applied},
               {"episodes_examined", r.episodes_examined},
               {"rows_written", r.rows_written},
               {"refused", refused},
               {"decisions", std::move(decisions)}});
}

std::string ToJson(const BackfillHandPoseReport& r) {
  Json episodes = Json::array();
  for (const HandPoseBackfill& e : r.episodes) episodes.push_back(BackfillJson(e));
  return Text({{"mirror", r.mirror},
               {"dry_run", r.dry_run},
               {"episodes_written", r.episodes_written},
               {"episodes", std::move(episodes)}});
}

std::string ToJson(const AddColumnsReport& r) {
  Json columns = Json::array();
  for (const AddedColumn& c : r.columns)
    columns.push_back({{"name", c.name},
                       {"type", c.type},
                       {"feature", Embedded(c.feature_json)},
                       {"replaced", c.replaced},
                       {"counted", c.counted}});
  return Text({{"episode_index", r.episode_index},
               {"source", r.source},
               {"dry_run", r.dry_run},
               {"data_rows", r.data_rows},
               {"source_rows", r.source_rows},
               {"filled_rows", r.filled_rows},
               {"unmatched_rows", r.unmatched_rows},
               {"columns", std::move(columns)},
               {"written", r.written}});
}

std::string ToJson(const OverlayWriteReport& r) {
  return Text({{"name", r.name},
               {"bundle_id", r.bundle_id},
               {"episode_index", r.episode_index},
               {"path", r.path},
               {"kind", r.kind},
               {"rows", r.rows},
               {"columns", r.columns},
               {"replaced", r.replaced},
               {"dry_run", r.dry_run}});
}

std::string ToJson(const DeleteReport& r) {
  Json episodes = Json::array();
  for (const DeletedEpisode& e : r.episodes) episodes.push_back({{"episode_index", e.episode_index}, {"files", e.files}});
  return Text({{"dry_run", r.dry_run}, {"episodes", std::move(episodes)}});
}

std::string ToJson(const SimulateReport& r) {
  Json episodes = Json::array();
  for (const SimulatedEpisode& e : r.episodes)
    episodes.push_back({{"episode_index", e.episode_index}, {"length", e.length}, {"committed", e.committed}});
  Json out = {{"episodes", std::move(episodes)}};
  if (r.profile)
    out["profile"] = {{"record_cpu_s", r.profile->record_cpu_s},
                      {"record_wall_s", r.profile->record_wall_s},
                      {"recorded_s", r.profile->recorded_s}};
  return Text(out);
}

std::string ToJson(const std::vector<EpisodeUploadResult>& results) {
  Json episodes = Json::array();
  bool all_landed = true;
  for (const EpisodeUploadResult& one : results) {
    episodes.push_back(OutcomeJson(one));
    all_landed = all_landed && one.outcome.ok();
  }
  return Text({{"episodes", std::move(episodes)}, {"all_landed", all_landed}});
}

std::string ToJson(const UploadEvent& e) {
  Json j{{"time", e.time}, {"event", e.event}, {"episode_index", e.episode_index}, {"state", e.state}};
  if (e.total) j["sent"] = e.sent, j["total"] = e.total;
  if (e.attempt) j["attempt"] = e.attempt;
  if (!e.detail.empty()) j["detail"] = e.detail;
  if (!e.rule.empty()) j["rule"] = e.rule;
  return Text(j);
}

// Written job by job: at 10,000 jobs a whole document built first costs more than reading
// the outbox.
std::string ToJson(const OutboxStatus& status) {
  const auto str = [](const std::string& v) { return Text(Json(v)); };
  const auto num = [](double v) { return Json(v).dump(); };
  std::string out = "{\"jobs\":[";
  for (size_t i = 0; i < status.entries.size(); ++i) {
    const OutboxEntry& e = status.entries[i];
    if (i) out += ",";
    out += "{\"server\":" + str(e.server) + ",\"project\":" + str(e.project) +
           ",\"episode_index\":" + std::to_string(e.episode_index) + ",\"state\":" + str(e.state) +
           ",\"digest\":" + str(e.digest) + ",\"bytes\":" + std::to_string(e.bytes) +
           ",\"zip_bytes\":" + std::to_string(e.zip_bytes) + ",\"sent\":" + std::to_string(e.sent) +
           ",\"attempts\":" + std::to_string(e.attempts) + ",\"last_error\":" + str(e.last_error) +
           ",\"rule\":" + str(e.rule) + ",\"session_id\":" + str(e.session_id) + ",\"age_s\":" + num(e.age_s) +
           ",\"next_try_in_s\":" + num(e.next_try_in_s) + "}";
  }
  Json counters = Json::object();
  for (const auto& [name, value] : status.counters) counters[name] = value;
  return out + "],\"counters\":" + Text(counters) + "}";
}

}  // namespace reel
