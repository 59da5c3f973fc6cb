// Internal: the import server's answer for one episode, with the digests of its files
// (GET /api/v1/projects/<project>/episodes/<N>, docs/serve.md "What the server holds"):
// the proof an uploader asks for before it deletes its own copy (issue 28), and a look-up
// for anyone allowed the project.
#pragma once

#include <cstdint>
#include <string>

#include "reel/status.h"
#include "util/json_util.h"

namespace reel::serve {

// {"project_id", "episode_index", "file_group", "files": [{"role", "path", "size",
// "sha256"}]} for episode `n` of the task <root>/<project>, its files read now
// (DigestFileGroup). NotFound when the project is not a task or holds no episode n; the
// errors of opening or reading the task otherwise.
Result<internal::Json> EpisodeDigestAnswer(const std::string& root, const std::string& project, int64_t n);

}  // namespace reel::serve
