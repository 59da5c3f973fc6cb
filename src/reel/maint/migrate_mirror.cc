// reel migrate: the keypoints mirror (contract §10) re-keyed from keypoints_output/<task>/<session>/
// to keypoints_output/<task>/episode_{N:06d}/ (contract-decisions.md "v1.0 migration: media";
// v1.0-layout.md step 9), and back for --restore.
//
// The mirror lies outside the task root, where the commit journal (task-relative paths
// only) cannot reach, so the moves are a step after the task's commit, driven by the
// manifest the commit published: each recorded move is done when its source is gone and its
// target there, so a run killed midway is finished by the next one.
#include <cstdio>

#include "maint/migrate_internal.h"
#include "reel/layout.h"

namespace reel::internal {
namespace {

// "episode_{N:06d}", the last component of KeypointsEpisodeDir.
std::string EpisodeFolder(int64_t n) { return BaseName(KeypointsEpisodeDir("", n)); }

}  // namespace

bool PlainComponent(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

Result<Json> ReadManifest(FileSystem* fs, const std::string& path) {
  REEL_ASSIGN_OR_RETURN(Json m, ReadJsonObjectBounded(fs, path));
  if (!m.value("sessions", Json()).is_array()) return Status::Invalid(path + ": \"sessions\" must be an array");
  // Read back from the task, which may have been copied or edited: the keys the restore and
  // its report read with a default are checked here, once, to be of the type reel wrote.
  bool flag = true;
  std::string text;
  int64_t number = 0;
  REEL_RETURN_IF_ERROR(GetBool(m, "in_place", path, flag));
  REEL_RETURN_IF_ERROR(GetString(m, "source", path, text));
  REEL_RETURN_IF_ERROR(GetString(m, "backup", path, text));
  for (const Json& s : m["sessions"]) {
    if (!s.is_object()) continue;
    REEL_RETURN_IF_ERROR(GetString(s, "session", path + ": sessions", text));
    REEL_RETURN_IF_ERROR(GetInt(s, "episode_index", path + ": sessions", number));
  }
  return m;
}

Status PlanKeypoints(FileSystem* fs, const std::string& explicit_dir, MigratePlan* plan,
                     std::vector<std::string>* warnings) {
  auto mirror = FindKeypointsMirror(fs, plan->source, explicit_dir);
  if (!mirror.ok()) {
    if (!explicit_dir.empty()) return mirror.status();
    return Status::OK();  // no mirror beside the task: nothing to re-key
  }
  std::vector<std::pair<std::string, std::string>> moves;
  for (const Session& s : plan->sessions) {
    REEL_ASSIGN_OR_RETURN(FileInfo st, fs->Stat(JoinPath(*mirror, s.name)));
    if (st.type == FileType::kDirectory) moves.emplace_back(s.name, EpisodeFolder(s.n));
  }
  if (moves.empty()) return Status::OK();
  if (!plan->in_place) {  // --to leaves the source, and so its mirror, as it is
    warnings->push_back(*mirror + ": keypoints of " + std::to_string(moves.size()) +
                        " sessions left under their session names (--to leaves the source as it is; "
                        "the manifest maps sessions to episodes)");
    return Status::OK();
  }
  plan->keypoints_mirror = *mirror;
  plan->keypoints_moves = std::move(moves);
  return Status::OK();
}

Json KeypointsJson(const MigratePlan& plan) {
  Json moves = Json::array();
  for (const auto& [from, to] : plan.keypoints_moves) moves.push_back({{"session", from}, {"episode", to}});
  return {{"mirror", plan.keypoints_mirror}, {"moves", moves}};
}

Result<int64_t> MoveKeypoints(FileSystem* fs, const std::string& root, const std::string& explicit_dir,
                              const Json& manifest, bool back, std::string* mirror_out,
                              std::vector<std::string>* warnings) {
  const Json k = manifest.value("keypoints", Json::object());
  if (!k.is_object() || !k.value("mirror", Json()).is_string() || k["mirror"].get<std::string>().empty())
    return int64_t{0};
  // The mirror is found from where the task is (or the folder the user names), never taken
  // from the manifest: the manifest is the task's own bytes, and a forged one could name any
  // folder on the disk (issue 27, finding 3). The manifest gives only folder names in it.
  auto located = FindKeypointsMirror(fs, root, explicit_dir);
  if (!located.ok()) {
    if (!explicit_dir.empty()) return located.status();
    warnings->push_back("keypoints: the manifest records keypoints moves, but there is no keypoints_output/" +
                        BaseName(root) + " beside the task (it names " + k["mirror"].get<std::string>() +
                        "); nothing moved (give --keypoints <folder> to move them)");
    return int64_t{0};
  }
  const std::string mirror = *located;
  *mirror_out = mirror;
  const Json moves = k.value("moves", Json::array());
  if (!moves.is_array()) return Status::Invalid("migrate manifest: keypoints.moves must be an array");
  int64_t moved = 0;
  for (const Json& m : moves) {
    if (!m.is_object() || !m.value("session", Json()).is_string() || !m.value("episode", Json()).is_string() ||
        !PlainComponent(m["session"].get<std::string>()) || !PlainComponent(m["episode"].get<std::string>()))
      return Status::Invalid("migrate manifest: keypoints move " + Brief(m) + " is not {session, episode} folder names");
    std::string from = JoinPath(mirror, m["session"].get<std::string>());
    std::string to = JoinPath(mirror, m["episode"].get<std::string>());
    if (back) std::swap(from, to);
    if (from == to) continue;
    REEL_ASSIGN_OR_RETURN(FileInfo src, fs->Stat(from));
    REEL_ASSIGN_OR_RETURN(FileInfo dst, fs->Stat(to));
    const bool have_src = src.type != FileType::kNotFound, have_dst = dst.type != FileType::kNotFound;
    if (have_src && have_dst)
      return Status::AlreadyExists("keypoints: both " + from + " and " + to + " exist; the move " + from + " -> " +
                                   to + " would replace one: move or remove one by hand, then run again");
    if (!have_src && !have_dst) {
      warnings->push_back("keypoints: " + from + " is gone (and " + to + " absent); nothing to move");
      continue;
    }
    if (!have_src) continue;  // done by an earlier run
    REEL_RETURN_IF_ERROR(fs->Rename(from, to));
    ++moved;
  }
  if (moved > 0) REEL_RETURN_IF_ERROR(fs->SyncDir(mirror));
  return moved;
}

}  // namespace reel::internal
