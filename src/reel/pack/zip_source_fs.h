// Internal: libzip archives read and written through reel's FileSystem, so that a
// slice's zip (the import server's upload, pack's output) and every file pack adds
// to one go through the FileSystem interface (fault injection, other stores), not
// through libzip's own stdio.
//
// Thread safety: a source belongs to one archive, used by one thread at a time.
#pragma once

#include <string>

#include "pack/zip_handle.h"
#include "reel/fs.h"
#include "reel/status.h"

namespace reel::internal {

// A read-only source over `path` (fs->OpenRandomAccess, ReadAt): for zip_file_add
// (pack's entries) or zip_open_from_source. Its stat carries the size and the
// modification time (FileInfo::mtime_ns). The caller owns it until libzip takes it
// (zip_file_add / zip_open_from_source succeed); zip_source_free otherwise.
// Errors: the Stat/OpenRandomAccess error (NotFound for a missing file).
Result<zip_source_t*> NewZipReadSource(FileSystem* fs, const std::string& path);

// Opens the archive at `path` read-only through `fs`. `flags` are zip_open's
// (ZIP_CHECKCONS, ...; ZIP_RDONLY is added). On failure *zip_error holds libzip's code
// (see ZipErrorText) and the Status says what failed.
Result<ZipArchive> OpenZipForRead(FileSystem* fs, const std::string& path, int flags, int* zip_error);

// Creates a new archive that zip_close() writes to `path` through `fs`:
// NewWritableFile(path), Append, WriteAt where libzip rewrites a local header,
// then Sync and Close (the file is durable when zip_close returns 0; it is not
// renamed: the caller publishes it). `path` must not exist. A failed or discarded
// write removes `path`.
Result<ZipArchive> CreateZipForWrite(FileSystem* fs, const std::string& path);

}  // namespace reel::internal
