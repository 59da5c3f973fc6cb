// Internal: one file copied from one FileSystem to another (a local staging directory to
// an object store), a block at a time: videos can be large.
#pragma once

#include <cstdint>
#include <string>

#include "reel/fs.h"
#include "reel/status.h"

namespace reel::internal {

// Copies `from` (read through `from_fs` with ranged reads) to `to` (written through
// `to_fs`: CreateDirs of its directory, NewWritableFile, Append, Sync, Close) and returns
// the bytes copied. On an object store `to` appears whole when Close() completes the
// upload, never partly. On error `to` may exist partly on a store that shows unfinished
// files (a local disk); the caller removes it. Errors name the file that failed.
Result<uint64_t> CopyFileAcross(FileSystem* from_fs, const std::string& from, FileSystem* to_fs,
                                const std::string& to);

}  // namespace reel::internal
