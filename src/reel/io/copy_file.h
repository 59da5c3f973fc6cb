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

// Replaces `to` with a copy of `from` so that `to` is the old file or the new one, whole, at
// every moment, a power cut included. Where `to_fs` renames atomically (a disk), the copy
// goes to a dotfile beside `to` (".<name>.replace.reel-<host>-<pid>-<k>.tmp", swept like
// any writer's temp when its writer is gone) and is synced, then renamed over `to`; the
// caller syncs the directory to make the new name durable. Elsewhere (an object store,
// whose object appears whole when its upload completes) it is copied in place. On error
// the temp is removed and `to` is as it was. Returns the bytes copied.
Result<uint64_t> ReplaceFileAcross(FileSystem* from_fs, const std::string& from, FileSystem* to_fs,
                                   const std::string& to);

}  // namespace reel::internal
