#include "layout/confined.h"

#include <algorithm>
#include <string_view>

#include "reel/layout.h"

namespace reel::internal {

bool IsInsideTaskPath(const std::string& rel) {
  if (rel.empty() || rel.front() == '/' || rel.size() > 4096 || rel.find('\0') != std::string::npos) return false;
  size_t at = 0;
  while (at <= rel.size()) {
    const size_t end = std::min(rel.find('/', at), rel.size());
    const std::string_view part(rel.data() + at, end - at);
    if (part.empty() || part == "." || part == "..") return false;
    at = end + 1;
  }
  return true;
}

Result<const std::vector<DirEntry>*> Beneath::Listing(const std::string& dir_rel) {
  auto it = listings_.find(dir_rel);
  if (it != listings_.end()) return &it->second;
  auto entries = fs_->ListDir(dir_rel.empty() ? root_ : JoinPath(root_, dir_rel));
  if (!entries.ok()) {
    // Missing (or not a directory: ENOTDIR reads as NotFound): nothing below it exists.
    if (entries.status().code() != StatusCode::kNotFound) return entries.status();
    entries = std::vector<DirEntry>{};
  }
  return &listings_.emplace(dir_rel, std::move(*entries)).first->second;
}

Status Beneath::Check(const std::string& rel, const std::string& what) {
  if (!IsInsideTaskPath(rel))
    return Status::Invalid(what + ": names \"" + rel + "\", which is not a path inside the task (" + root_ + ")");
  // A store without directories (an object store) has no links: nothing to walk.
  if (!fs_->Capabilities().directories) return Status::OK();
  std::string dir;  // relative to root_
  size_t at = 0;
  while (at < rel.size()) {
    const size_t end = std::min(rel.find('/', at), rel.size());
    const std::string name = rel.substr(at, end - at);
    REEL_ASSIGN_OR_RETURN(const std::vector<DirEntry>* entries, Listing(dir));
    const auto found =
        std::find_if(entries->begin(), entries->end(), [&](const DirEntry& e) { return e.name == name; });
    if (found == entries->end() || found->name != name) return Status::OK();  // the rest does not exist yet
    const std::string here = dir.empty() ? name : dir + "/" + name;
    if (found->symlink)
      return Status::Invalid(what + ": names \"" + rel + "\", which goes through the symbolic link \"" + here +
                             "\" inside the task (" + root_ + "); a task's own files are followed only inside "
                             "it. Nothing was changed; replace the link with what it points to, or remove it");
    if (found->type != FileType::kDirectory) return Status::OK();  // a file: nothing below it
    dir = here;
    at = end + 1;
  }
  return Status::OK();
}

Status CheckBeneath(FileSystem* fs, const std::string& root, const std::string& rel, const std::string& what) {
  return Beneath(fs, root).Check(rel, what);
}

bool TemplateNamesEpisode(const std::string& tmpl, const std::string& rel, int64_t n, int64_t chunks_size) {
  auto t = PathTemplate::Parse(tmpl);
  if (!t.ok()) return false;
  const std::optional<PathVars> vars = t->Match(rel);
  if (!vars || (!vars->episode_index && !(vars->chunk && vars->file))) return false;
  if (vars->episode_index && *vars->episode_index != n) return false;
  return !(vars->chunk && vars->file) || EpisodeIndexOf({*vars->chunk, *vars->file}, chunks_size) == n;
}

}  // namespace reel::internal
