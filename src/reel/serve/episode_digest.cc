// The import server's answer for one episode (serve/episode_digest.h).
#include "serve/episode_digest.h"

#include "reel/file_group.h"
#include "reel/layout.h"
#include "reel/task.h"

namespace reel::serve {

Result<internal::Json> EpisodeDigestAnswer(const std::string& root, const std::string& project, int64_t n) {
  const std::string dir = JoinPath(root, project);
  REEL_ASSIGN_OR_RETURN(FileInfo info, DefaultFileSystem()->Stat(JoinPath(dir, "meta/info.json")));
  if (info.type != FileType::kFile) return Status::NotFound("project " + project + " holds no task yet");
  TaskOptions options;
  options.io_threads = 1;
  REEL_ASSIGN_OR_RETURN(auto task, Task::Open(dir, options));
  auto entry = task->FindEpisode(n);
  if (!entry.ok()) {
    if (entry.status().code() == StatusCode::kNotFound)
      return Status::NotFound("project " + project + " holds no episode " + std::to_string(n));
    return entry.status();
  }
  REEL_ASSIGN_OR_RETURN(auto digests, DigestFileGroup(*task, *entry));
  internal::Json files = internal::Json::array();
  for (const FileDigest& d : digests)
    files.push_back({{"role", d.role}, {"path", d.path}, {"size", d.size}, {"sha256", d.sha256}});
  const FileGroup group = EpisodeFileGroup(*task, *entry);
  return internal::Json{{"project_id", project}, {"episode_index", n},
                        {"file_group", FileGroupStateName(group.state)}, {"files", std::move(files)}};
}

}  // namespace reel::serve
