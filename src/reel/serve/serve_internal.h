// Internal pieces of the import server shared by its files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "util/hex.h"  // HexOf

namespace reel {

// A task directory name the server accepts (request_parse.h ProjectNameProblem: valid
// UTF-8 in NFC, at most 255 bytes, no leading '.', no '/', '\\', control, bidi or other
// invisible characters, no white space at either end; task names may be Chinese).
bool IsValidProjectName(const std::string& name);

// `bytes` random bytes from the system OpenSSL's CSPRNG, as hex (session and upload ids).
std::string RandomHex(size_t bytes);

// "<project>/<N>": the id the server answers for an imported episode.
std::string SessionId(const std::string& project, int64_t episode_index);

}  // namespace reel
