// Internal pieces of the import server shared by its files.
#pragma once

#include <cstdint>
#include <string>

namespace reel {

// A task directory name the server accepts: non-empty, at most 255 bytes, no leading
// '.', no '/', '\' or control characters (UTF-8 otherwise allowed: task names may be
// Chinese).
bool IsValidProjectName(const std::string& name);

// "<project>/<N>": the id the server answers for an imported episode.
std::string SessionId(const std::string& project, int64_t episode_index);

}  // namespace reel
