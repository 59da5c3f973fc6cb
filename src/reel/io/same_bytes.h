// Internal: whether two files hold the same bytes, read a block at a time through the
// file system interface (videos can be large).
#pragma once

#include <string>

#include "reel/fs.h"
#include "reel/status.h"

namespace reel::internal {

// False when either is not a regular file or the sizes differ. Errors: those of Stat and
// OpenRandomAccess; IOError naming both paths when a block cannot be read.
Result<bool> SameBytes(FileSystem* fs, const std::string& a, const std::string& b);
// The same for two files on different file systems (a local task and its pushed copy).
Result<bool> SameBytesAcross(FileSystem* fs_a, const std::string& a, FileSystem* fs_b, const std::string& b);

}  // namespace reel::internal
