// ForeignDataset::Validate: every rule of docs/foreign-read.md, collected.
#include <arrow/api.h>

#include <cmath>
#include <map>

#include "foreign/internal.h"

namespace reel {

using namespace foreign;

namespace {

// Frames each video must hold: one file per episode (v2.x, bundle) exactly
// `length`; a shared v3 file at least up to its last episode's to_timestamp.
struct VideoNeed {
  int64_t frames = 0;
  bool exact = false;
  std::string who;  // the episode that needs the most
};

void CheckVideoFrames(FileSystem* fs, const std::string& root, const ForeignInfo& info,
                      const std::vector<ForeignEpisode>& episodes, Sink& sink) {
  std::map<std::string, VideoNeed> needs;
  const bool shared = info.format == DatasetFormat::kLeRobotV3;
  for (const ForeignEpisode& e : episodes)
    for (const VideoSpan& v : e.videos) {
      const int64_t frames = shared ? std::llround(v.to_timestamp * info.fps) : e.length;
      VideoNeed& need = needs[v.path];
      if (frames < need.frames) continue;
      need = {frames, !shared, EpisodeName(e.episode_index)};
    }
  for (const auto& [rel, need] : needs) {
    const std::string path = JoinPath(root, rel);
    auto is_file = IsFile(fs, path);
    if (!is_file.ok() || !*is_file) continue;  // already a file_missing finding
    VideoReaderOptions read_options;
    read_options.fs = fs;
    auto reader = VideoReader::Open(path, read_options);
    if (!reader.ok()) {
      sink.Error(kRuleUnreadable, rel, reader.status().message(), reader.status().code());
      continue;
    }
    const int64_t have = (*reader)->info().frames;
    if (need.exact ? have != need.frames : have < need.frames)
      sink.Error(kRuleVideoFrames, rel,
                 path + ": " + std::to_string(have) + " frames, but " + need.who + " needs " +
                     (need.exact ? "exactly " : "at least ") + std::to_string(need.frames) +
                     (shared ? " (its to_timestamp * fps)" : " (its length; row i = frame i)"));
  }
}

}  // namespace

TaskReport ForeignDataset::Validate() const {
  TaskReport report;
  report.path = root_;
  report.format = DatasetFormatName(info_.format);
  Sink sink(/*strict=*/false);
  auto episodes = EpisodesOf(fs_, root_, info_, sink);
  if (!episodes.ok()) {
    sink.Error(kRuleMetadata, "", episodes.status().message(), episodes.status().code());
    report.findings = std::move(sink.findings());
    return report;
  }
  report.episodes = static_cast<int64_t>(episodes->size());

  // Declared totals are advisory (readers use the episode index), so warnings.
  int64_t frames = 0;
  for (const ForeignEpisode& e : *episodes) frames += e.length;
  const char* declared_in = info_.format == DatasetFormat::kBundle ? "manifest.json" : "meta/info.json";
  if (info_.total_episodes != static_cast<int64_t>(episodes->size()) &&
      !(info_.format == DatasetFormat::kBundle && info_.total_episodes == 0))
    sink.Warning(kRuleTotals, declared_in,
                 std::string(declared_in) + " declares " + std::to_string(info_.total_episodes) +
                     " episodes, the episode index lists " + std::to_string(episodes->size()));
  if (info_.total_frames >= 0 && info_.total_frames != frames)
    sink.Warning(kRuleTotals, declared_in,
                 std::string(declared_in) + " total_frames " + std::to_string(info_.total_frames) +
                     ", the episode lengths sum to " + std::to_string(frames));

  // The data rules, per episode (a file that cannot be read is one finding).
  std::map<std::string, int64_t> rows_claimed;
  for (const ForeignEpisode& e : *episodes) {
    if (e.data_path.empty()) continue;
    rows_claimed[e.data_path] += e.length;
    auto is_file = IsFile(fs_, JoinPath(root_, e.data_path));
    if (!is_file.ok() || !*is_file) continue;  // already a file_missing finding
    auto rows = ReadEpisodeRows(fs_, root_, info_.format, e, {}, sink, /*check_only=*/true);
    // Rule violations are already findings; what is left is a file that cannot be read.
    if (!rows.ok() && rows.status().code() != StatusCode::kInvalid)
      sink.Error(kRuleUnreadable, e.data_path, rows.status().message(), rows.status().code());
  }
  // v3: a data file holds exactly the rows its episodes claim.
  if (info_.format == DatasetFormat::kLeRobotV3) {
    for (const auto& [rel, claimed] : rows_claimed) {
      auto n = ParquetRows(fs_, JoinPath(root_, rel));
      if (!n.ok()) continue;
      if (*n != claimed)
        sink.Error(kRuleDataRows, rel,
                   JoinPath(root_, rel) + ": " + std::to_string(*n) + " rows, but its episodes' "
                   "lengths sum to " + std::to_string(claimed));
    }
  }
  CheckVideoFrames(fs_, root_, info_, *episodes, sink);
  if (info_.format == DatasetFormat::kBundle) CheckOverlays(fs_, root_, *episodes, sink);
  report.findings = std::move(sink.findings());
  return report;
}

}  // namespace reel
