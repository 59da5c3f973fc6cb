// The bundle episode index: manifest.json's "episodes" list, each checked
// against its episodes/<id>/episode.json and the files the bundle must hold.
#include "foreign/internal.h"
#include "util/json_util.h"
#include "io/json_file.h"

namespace reel::foreign {

using internal::Json;

namespace {

// An id names a directory under episodes/: one plain path component.
bool IsPlainComponent(const std::string& id) {
  return !id.empty() && id != "." && id != ".." && id.find('/') == std::string::npos &&
         id.find('\\') == std::string::npos && id[0] != '.';
}

}  // namespace

Result<bool> CheckBundle(FileSystem* fs, const std::string& root, const ForeignEpisode& e, Sink& sink) {
  const std::string where = JoinPath(root, "manifest.json") + " episodes[" + std::to_string(e.episode_index) + "]";
  const std::string dir = "episodes/" + e.bundle_id;
  const std::string who = EpisodeName(e.episode_index) + " (id " + e.bundle_id + ")";
  REEL_ASSIGN_OR_RETURN(FileInfo dir_info, fs->Stat(JoinPath(root, dir)));
  if (dir_info.type != FileType::kDirectory) {
    if (!sink.Error(kRuleBundleEpisode, dir, where + ": " + who + ": directory " + JoinPath(root, dir) + " is missing",
                    StatusCode::kNotFound))
      return sink.status();
    return false;
  }
  const std::string sidecar = JoinPath(root, dir + "/episode.json");
  REEL_ASSIGN_OR_RETURN(bool has_sidecar, IsFile(fs, sidecar));
  if (!has_sidecar) {
    if (!sink.Error(kRuleBundleEpisode, dir + "/episode.json",
                    sidecar + ": missing (" + who + " is listed in manifest.json)", StatusCode::kNotFound))
      return sink.status();
  } else {
    REEL_ASSIGN_OR_RETURN(Json side, internal::ReadJsonFile(fs, sidecar));
    if (!side.is_object()) return Status::Invalid(sidecar + ": must be a JSON object");
    // Evolution rule 2: refuse, loudly, versions reel does not understand.
    if (side.contains("schema_version")) {
      const Json& v = side["schema_version"];
      const bool one = (v.is_number_integer() && v.get<int64_t>() == 1) ||
                       (v.is_string() && v.get<std::string>() == "1");
      if (!one)
        return Status::NotSupported(sidecar + ": unknown schema_version " + internal::Brief(v) +
                                    "; reel reads bundle schema_version 1");
    }
    int64_t side_length = -1;
    REEL_RETURN_IF_ERROR(internal::GetInt(side, "length", sidecar, side_length));
    if (side_length != e.length &&
        !sink.Error(kRuleLength, dir + "/episode.json",
                    sidecar + ": length " + std::to_string(side_length) + " but manifest.json says " +
                        std::to_string(e.length) + " for " + who))
      return sink.status();
  }
  REEL_ASSIGN_OR_RETURN(bool has_data, IsFile(fs, JoinPath(root, e.data_path)));
  if (!has_data && !sink.Error(kRuleFileMissing, e.data_path,
                               JoinPath(root, e.data_path) + ": missing (data of " + who + ")",
                               StatusCode::kNotFound))
    return sink.status();
  for (const VideoSpan& v : e.videos) {
    REEL_ASSIGN_OR_RETURN(bool has_video, IsFile(fs, JoinPath(root, v.path)));
    if (!has_video && !sink.Error(kRuleFileMissing, v.path,
                                  JoinPath(root, v.path) + ": missing (video " + v.key + " of " + who + ")",
                                  StatusCode::kNotFound))
      return sink.status();
  }
  return true;
}

Result<std::vector<ForeignEpisode>> BundleEpisodes(FileSystem* fs, const std::string& root,
                                                   const ForeignInfo& info,
                                                   Sink& sink) {
  const std::string manifest_path = JoinPath(root, "manifest.json");
  REEL_ASSIGN_OR_RETURN(Json doc, internal::ReadJsonFile(fs, manifest_path));
  if (!doc.contains("episodes") || !doc["episodes"].is_array())
    return Status::Invalid(manifest_path + ": \"episodes\" must be a list");
  std::vector<ForeignEpisode> out;
  const Json& list = doc["episodes"];
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = manifest_path + " episodes[" + std::to_string(i) + "]";
    const Json& m = list[i];
    if (!m.is_object()) return Status::Invalid(where + ": must be an object, found " + internal::Brief(m));
    ForeignEpisode e;
    e.episode_index = static_cast<int64_t>(i);
    e.length = -1;
    std::string task;
    REEL_RETURN_IF_ERROR(internal::GetString(m, "id", where, e.bundle_id));
    REEL_RETURN_IF_ERROR(internal::GetInt(m, "length", where, e.length));
    REEL_RETURN_IF_ERROR(internal::GetString(m, "task", where, task));
    REEL_RETURN_IF_ERROR(internal::GetString(m, "task_description", where, e.task_description));
    if (!IsPlainComponent(e.bundle_id))
      return Status::Invalid(where + ": \"id\" must be a directory name, found \"" + e.bundle_id + "\"");
    if (e.length < 0)
      return Status::Invalid(where + " (id " + e.bundle_id + "): \"length\" must be a non-negative "
                             "integer, found " + internal::Brief(m.value("length", Json())));
    e.tasks = {task};
    const std::string dir = "episodes/" + e.bundle_id;
    e.data_path = dir + "/data.parquet";
    e.from_row = 0;
    e.to_row = e.length;
    e.dataset_from_index = out.empty() ? 0 : out.back().dataset_to_index;
    e.dataset_to_index = e.dataset_from_index + e.length;
    for (const std::string& key : info.video_keys)
      e.videos.push_back({key, dir + "/" + key + ".mp4", 0, static_cast<double>(e.length) / info.fps});
    // A reader trusts the manifest and checks a bundle when it reads it (ReadEpisodeRows).
    if (!sink.strict()) {
      REEL_ASSIGN_OR_RETURN(bool present, CheckBundle(fs, root, e, sink));
      if (!present) continue;  // a missing bundle directory: reported, not indexed
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace reel::foreign
