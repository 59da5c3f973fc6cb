// An episode's file group (contract §2, §9): whole, deleted, or partial
// (include/reel/file_group.h).
#include "reel/file_group.h"

#include <optional>
#include <set>

#include "reel/layout.h"
#include "util/json_util.h"

namespace reel {

const char* FileGroupStateName(FileGroupState state) {
  switch (state) {
    case FileGroupState::kWhole: return "whole";
    case FileGroupState::kDeleted: return "deleted";
    case FileGroupState::kPartial: return "partial";
  }
  return "partial";
}

std::vector<std::string> DeclaredVideoSlots(const EpisodeRow& row) {
  std::set<std::string> slots;
  // A malformed column is episodes.json_column's finding; it declares nothing here.
  auto codec = internal::ParseJson(row.video_codec, "video_codec");
  if (!codec.ok() || !codec->is_object()) return {};
  auto depth = codec->find("depth");
  if (depth == codec->end() || !depth->is_object()) return {};
  for (const auto& [slot, entry] : depth->items()) {
    if (slot.empty()) continue;
    slots.insert(slot);
    if (!entry.is_object()) continue;
    auto master = entry.find("master_slot");
    if (master != entry.end() && master->is_string() && !master->get<std::string>().empty())
      slots.insert(master->get<std::string>());
  }
  return {slots.begin(), slots.end()};
}

FileGroup EpisodeFileGroup(const Task& task, const EpisodeEntry& e, const EpisodeRow* row) {
  FileGroup g;
  if (!e.data_path.empty()) g.present.push_back(e.data_path);
  std::set<std::string> on_disk;
  for (const auto& [slot, path] : e.videos) {
    g.present.push_back(path);
    on_disk.insert(slot);
  }
  if (g.present.empty()) return g;  // kDeleted: the row alone (or nothing) is legal
  const int64_t n = e.episode_index;
  if (e.data_path.empty()) {
    auto rel = task.DataPathOf(n);
    g.missing.push_back(rel.ok() ? *rel : "the data parquet of episode " + std::to_string(n));
  }
  std::optional<Result<PathTemplate>> video_path;  // parsed only for a missing slot
  for (const std::string& slot : row ? DeclaredVideoSlots(*row) : std::vector<std::string>{}) {
    if (on_disk.count(slot)) continue;
    if (!video_path) video_path.emplace(PathTemplate::Parse(task.info().video_path));
    const std::string* ext = Lookup(task.info().video_extensions, slot);
    const EpisodeLocation loc = LocateEpisode(n, task.chunks_size());
    std::string rel = "the video of slot \"" + slot + "\" of episode " + std::to_string(n);
    if (video_path->ok())
      if (auto rendered = (*video_path)->Render({loc.chunk, loc.file, n, slot, ext ? *ext : "*"});
          rendered.ok())
        rel = *rendered;
    g.missing.push_back(rel);
  }
  g.state = g.missing.empty() ? FileGroupState::kWhole : FileGroupState::kPartial;
  return g;
}

}  // namespace reel
