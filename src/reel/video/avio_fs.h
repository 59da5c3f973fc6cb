// Internal: FFmpeg's byte I/O (AVIOContext) over reel's FileSystem, so that every
// byte a demuxer reads or a muxer writes goes through the FileSystem interface
// (fault injection, other stores) instead of FFmpeg's own file protocol.
//
// Reads use one arrow::io::RandomAccessFile (ReadAt at the context's position,
// GetSize for AVSEEK_SIZE): a seek costs nothing, and a ranged-read store is asked
// only for the bytes the demuxer reads. Writes use one WritableFile: bytes at the
// end go through Append, bytes before it (the muxer seeking back to patch a box
// size or an index) through WriteAt.
//
// Errors: a failed FileSystem call makes the FFmpeg call fail with AVERROR(EIO)
// and is kept; TakeIoError() returns it, so the caller reports the FileSystem's
// Status (code and message) rather than FFmpeg's "I/O error".
//
// Thread safety: one context is used by one thread at a time (as its AVFormatContext).
#pragma once

#include <memory>
#include <string>

#include "reel/fs.h"
#include "video/ffmpeg_util.h"

namespace arrow::io {
class RandomAccessFile;
}

namespace reel::video {

// Opens a demuxer reading `file`; `path` names it in messages and hints the format
// by its extension. The demuxer shares `file` (several may read one handle).
// Errors: Corruption when FFmpeg cannot open it as a video, or the I/O error.
Status OpenFsInput(std::shared_ptr<arrow::io::RandomAccessFile> file, const std::string& path,
                   InputPtr* out);

// Creates `path` through `fs` (NewWritableFile) and makes it `out`'s output (out->pb;
// `out` is a muxer with no file yet). Freed with `out` (OutputPtr).
Status OpenFsOutput(FileSystem* fs, const std::string& path, AVFormatContext* out);

// Flushes `out`'s I/O context and closes its file, after a Sync() when `sync`.
// Returns the first error of the file's life (a write that failed earlier included).
Status CloseFsOutput(AVFormatContext* out, bool sync);

// The FileSystem error `f`'s I/O context hit since the last call (OK when none, or
// when `f` does not read or write through a FileSystem), and clears it so the
// context can be used again after a seek.
Status TakeIoError(AVFormatContext* f);

}  // namespace reel::video
