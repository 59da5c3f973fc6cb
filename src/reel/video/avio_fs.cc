// FFmpeg I/O over FileSystem (see avio_fs.h).
#include "video/avio_fs.h"

#include <arrow/io/interfaces.h>
#include <arrow/result.h>

#include <algorithm>

extern "C" {
#include <libavutil/mem.h>
}

namespace reel::video {

namespace {

// FFmpeg's own file protocol reads and writes 32 KiB at a time; so do we. Small
// enough that a random frame of a ranged-read store costs a few small reads.
constexpr int kBufferSize = 32 * 1024;

// The opaque state of one I/O context: the file handle and the position FFmpeg
// believes it is at (the handles themselves are positional).
struct FsIo {
  std::string path;
  std::shared_ptr<arrow::io::RandomAccessFile> in;  // reading
  std::unique_ptr<WritableFile> out;                // writing
  int64_t pos = 0;
  int64_t size = -1;  // writing: bytes in the file; reading: GetSize(), -1 until asked
  Status error;       // the first FileSystem error since TakeIoError
  bool closed = false;

  int Fail(Status st) {
    if (error.ok()) error = std::move(st);
    return AVERROR(EIO);
  }
};

int ReadPacket(void* opaque, uint8_t* buf, int n) {
  auto* io = static_cast<FsIo*>(opaque);
  auto got = io->in->ReadAt(io->pos, n, buf);
  if (!got.ok())
    return io->Fail(Status::IOError(io->path + ": read of " + std::to_string(n) + " bytes at byte " +
                                    std::to_string(io->pos) + " failed: " + got.status().message()));
  if (*got == 0) return AVERROR_EOF;
  io->pos += *got;
  return static_cast<int>(*got);
}

// Appends zeros, then `data` at io->pos: WriteAt for the part before the end,
// Append for the rest.
#if LIBAVFORMAT_VERSION_MAJOR >= 61
int WritePacket(void* opaque, const uint8_t* buf, int n) {
#else
int WritePacket(void* opaque, uint8_t* buf, int n) {
#endif
  auto* io = static_cast<FsIo*>(opaque);
  if (io->closed) return io->Fail(Status::IOError(io->path + ": write after close"));
  std::string_view data(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
  if (io->pos > io->size) {  // a seek past the end: the gap reads as zeros
    Status st = io->out->Append(std::string(static_cast<size_t>(io->pos - io->size), '\0'));
    if (!st.ok()) return io->Fail(std::move(st));
    io->size = io->pos;
  }
  if (io->pos < io->size) {
    const size_t inside = static_cast<size_t>(std::min<int64_t>(io->size - io->pos, n));
    Status st = io->out->WriteAt(static_cast<uint64_t>(io->pos), data.substr(0, inside));
    if (!st.ok()) return io->Fail(std::move(st));
    io->pos += static_cast<int64_t>(inside);
    data.remove_prefix(inside);
  }
  if (!data.empty()) {
    Status st = io->out->Append(data);
    if (!st.ok()) return io->Fail(std::move(st));
    io->pos += static_cast<int64_t>(data.size());
    io->size = io->pos;
  }
  return n;
}

int64_t Seek(void* opaque, int64_t offset, int whence) {
  auto* io = static_cast<FsIo*>(opaque);
  if (io->size < 0) {
    auto size = io->in->GetSize();
    if (!size.ok())
      return io->Fail(Status::IOError(io->path + ": size unknown: " + size.status().message()));
    io->size = *size;
  }
  int64_t target = 0;
  switch (whence & ~AVSEEK_FORCE) {
    case AVSEEK_SIZE: return io->size;
    case SEEK_SET: target = offset; break;
    case SEEK_CUR: target = io->pos + offset; break;
    case SEEK_END: target = io->size + offset; break;
    default: return AVERROR(EINVAL);
  }
  if (target < 0) return AVERROR(EINVAL);
  io->pos = target;
  return target;
}

// A context over `io` (owned by it from then on), or null when out of memory.
AVIOContext* MakeContext(std::unique_ptr<FsIo> io, bool write) {
  auto* buffer = static_cast<unsigned char*>(av_malloc(kBufferSize));
  if (!buffer) return nullptr;
  AVIOContext* pb = avio_alloc_context(buffer, kBufferSize, write ? 1 : 0, io.get(),
                                       write ? nullptr : ReadPacket, write ? WritePacket : nullptr, Seek);
  if (!pb) {
    av_free(buffer);
    return nullptr;
  }
  io.release();
  return pb;
}

FsIo* IoOf(AVFormatContext* f) {
  if (!f || !(f->flags & AVFMT_FLAG_CUSTOM_IO) || !f->pb) return nullptr;
  return static_cast<FsIo*>(f->pb->opaque);
}

}  // namespace

void FreeFsIo(AVIOContext* pb) {
  if (!pb) return;
  delete static_cast<FsIo*>(pb->opaque);
  av_freep(&pb->buffer);
  avio_context_free(&pb);
}

Status OpenFsInput(std::shared_ptr<arrow::io::RandomAccessFile> file, const std::string& path,
                   InputPtr* out) {
  auto io = std::make_unique<FsIo>();
  io->path = path;
  io->in = std::move(file);
  FsIo* state = io.get();
  AVIOContext* pb = MakeContext(std::move(io), /*write=*/false);
  if (!pb) return Status::IOError(path + ": out of memory");
  AVFormatContext* raw = avformat_alloc_context();
  if (!raw) {
    FreeFsIo(pb);
    return Status::IOError(path + ": out of memory");
  }
  raw->pb = pb;
  raw->flags |= AVFMT_FLAG_CUSTOM_IO;
  // On failure avformat_open_input frees `raw` but leaves the caller's pb alone.
  const int err = avformat_open_input(&raw, path.c_str(), nullptr, nullptr);
  if (err < 0) {
    Status io_error = state->error;
    FreeFsIo(pb);
    if (!io_error.ok()) return io_error;
    return Status::Corruption(path + ": not a readable video file (" + AvErrorText(err) +
                              "; truncated, or not a video container)");
  }
  out->reset(raw);
  return Status::OK();
}

Status OpenFsOutput(FileSystem* fs, const std::string& path, AVFormatContext* out) {
  REEL_ASSIGN_OR_RETURN(auto file, fs->NewWritableFile(path));
  auto io = std::make_unique<FsIo>();
  io->path = path;
  io->out = std::move(file);
  io->size = 0;
  AVIOContext* pb = MakeContext(std::move(io), /*write=*/true);
  if (!pb) return Status::IOError(path + ": out of memory");  // the file closes with `io`
  out->pb = pb;
  out->flags |= AVFMT_FLAG_CUSTOM_IO;
  return Status::OK();
}

Status CloseFsOutput(AVFormatContext* out, bool sync) {
  FsIo* io = IoOf(out);
  if (!io) return Status::Invalid("CloseFsOutput: not a FileSystem output");
  avio_flush(out->pb);
  if (io->error.ok() && out->pb->error < 0) io->error = AvStatus(io->path, "writing", out->pb->error);
  if (io->closed) return io->error;
  io->closed = true;
  Status st = io->error;
  if (st.ok() && sync) st = io->out->Sync();
  Status closed = io->out->Close();  // releases the handle whatever happened before
  if (st.ok()) st = closed;
  if (io->error.ok()) io->error = st;
  return st;
}

Status TakeIoError(AVFormatContext* f) {
  FsIo* io = IoOf(f);
  if (!io) return Status::OK();
  Status st = std::move(io->error);
  io->error = Status::OK();
  f->pb->error = 0;
  return st;
}

}  // namespace reel::video
