// Internal: creating directories so that they survive a power cut.
//
// mkdir makes a new directory an entry of its parent, and POSIX makes that entry durable
// only with an fsync of the parent (the directory's own fsync covers what is inside it,
// not its name). A commit that renames files into a directory it just created, or writes
// a journal there, must sync the parent first, or a power cut can take the directory, and
// all it holds, away (docs/reliability.md "Power loss").
#pragma once

#include <string>

#include "reel/fs.h"
#include "reel/status.h"

namespace reel::internal {

// CreateDirs(path), then SyncDir of the parent of each directory this call created, the
// deepest first (the parent of the topmost one existed already). A path that existed
// syncs nothing. Errors: those of Stat, CreateDirs and SyncDir.
Status CreateDirsDurable(FileSystem* fs, const std::string& path);

}  // namespace reel::internal
