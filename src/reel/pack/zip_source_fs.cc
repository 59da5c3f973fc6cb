// libzip sources over FileSystem (see zip_source_fs.h).
#include "pack/zip_source_fs.h"

#include <arrow/io/interfaces.h>
#include <arrow/result.h>

#include <algorithm>
#include <cerrno>
#include <memory>

namespace reel::internal {

namespace {

// One source's state: a file to read (an existing archive or an entry's data) and/or
// the file zip_close writes (a new archive).
struct FsSource {
  FileSystem* fs = nullptr;
  std::string path;
  bool exists = false;  // STAT reports ENOENT otherwise (so ZIP_CREATE makes a new archive)
  int64_t size = 0;
  int64_t mtime_ns = 0;
  std::shared_ptr<arrow::io::RandomAccessFile> in;
  int64_t pos = 0;
  bool writable = false;
  std::unique_ptr<WritableFile> out;
  int64_t wpos = 0, wsize = 0;
  zip_error_t error;

  FsSource() { zip_error_init(&error); }
  ~FsSource() { zip_error_fini(&error); }

  zip_int64_t Fail(int zip_code, int sys = EIO) {
    zip_error_set(&error, zip_code, sys);
    return -1;
  }
  zip_int64_t Read(void* data, zip_uint64_t len) {
    if (!in) return Fail(ZIP_ER_INTERNAL, 0);
    auto got = in->ReadAt(pos, static_cast<int64_t>(len), data);
    if (!got.ok()) return Fail(ZIP_ER_READ);
    pos += *got;
    return *got;
  }
  zip_int64_t Stat(void* data, zip_uint64_t len) {
    if (len < sizeof(zip_stat_t)) return Fail(ZIP_ER_INVAL, 0);
    if (!exists) return Fail(ZIP_ER_READ, ENOENT);
    auto* st = static_cast<zip_stat_t*>(data);
    zip_stat_init(st);
    st->size = static_cast<zip_uint64_t>(size);
    st->mtime = static_cast<time_t>(mtime_ns / 1000000000);
    st->valid |= ZIP_STAT_SIZE | (mtime_ns > 0 ? ZIP_STAT_MTIME : 0);
    return sizeof(zip_stat_t);
  }
  // Bytes at wpos: WriteAt for those before the end, Append for the rest.
  zip_int64_t Write(const void* data, zip_uint64_t len) {
    if (!out) return Fail(ZIP_ER_INTERNAL, 0);
    std::string_view rest(static_cast<const char*>(data), static_cast<size_t>(len));
    if (wpos > wsize) {
      if (!out->Append(std::string(static_cast<size_t>(wpos - wsize), '\0')).ok()) return Fail(ZIP_ER_WRITE);
      wsize = wpos;
    }
    if (wpos < wsize) {
      const size_t inside = static_cast<size_t>(std::min<int64_t>(wsize - wpos, static_cast<int64_t>(len)));
      if (!out->WriteAt(static_cast<uint64_t>(wpos), rest.substr(0, inside)).ok()) return Fail(ZIP_ER_WRITE);
      wpos += static_cast<int64_t>(inside);
      rest.remove_prefix(inside);
    }
    if (!rest.empty()) {
      if (!out->Append(rest).ok()) return Fail(ZIP_ER_WRITE);
      wpos += static_cast<int64_t>(rest.size());
      wsize = wpos;
    }
    return static_cast<zip_int64_t>(len);
  }
  zip_int64_t BeginWrite() {
    auto file = fs->NewWritableFile(path);
    if (!file.ok()) return Fail(ZIP_ER_OPEN);
    out = std::move(*file);
    wpos = wsize = 0;
    return 0;
  }
  zip_int64_t CommitWrite() {
    if (!out) return Fail(ZIP_ER_INTERNAL, 0);
    const bool synced = out->Sync().ok();
    const bool closed = out->Close().ok();
    out.reset();
    if (!synced || !closed) return Fail(ZIP_ER_WRITE);
    exists = true;
    size = wsize;
    in.reset();
    return 0;
  }
  zip_int64_t RollbackWrite() {
    if (out) (void)out->Close();
    out.reset();
    (void)fs->RemoveFile(path);
    return 0;
  }
  zip_int64_t Seek(int64_t* at, int64_t limit, void* data, zip_uint64_t len) {
    const zip_int64_t to = zip_source_seek_compute_offset(static_cast<zip_uint64_t>(*at),
                                                          static_cast<zip_uint64_t>(limit), data, len, &error);
    if (to < 0) return -1;
    *at = to;
    return 0;
  }
};

zip_int64_t Callback(void* state, void* data, zip_uint64_t len, zip_source_cmd_t cmd) {
  auto* s = static_cast<FsSource*>(state);
  switch (cmd) {
    case ZIP_SOURCE_OPEN: s->pos = 0; return 0;
    case ZIP_SOURCE_READ: return s->Read(data, len);
    case ZIP_SOURCE_CLOSE: return 0;
    case ZIP_SOURCE_SEEK: return s->Seek(&s->pos, s->size, data, len);
    case ZIP_SOURCE_TELL: return s->pos;
    case ZIP_SOURCE_STAT: return s->Stat(data, len);
    case ZIP_SOURCE_ERROR: return zip_error_to_data(&s->error, data, len);
    case ZIP_SOURCE_FREE: delete s; return 0;
    case ZIP_SOURCE_BEGIN_WRITE: return s->BeginWrite();
    case ZIP_SOURCE_WRITE: return s->Write(data, len);
    case ZIP_SOURCE_SEEK_WRITE: return s->Seek(&s->wpos, s->wsize, data, len);
    case ZIP_SOURCE_TELL_WRITE: return s->wpos;
    case ZIP_SOURCE_COMMIT_WRITE: return s->CommitWrite();
    case ZIP_SOURCE_ROLLBACK_WRITE: return s->RollbackWrite();
    case ZIP_SOURCE_REMOVE:
      s->exists = false;
      return s->fs->RemoveFile(s->path).ok() ? 0 : s->Fail(ZIP_ER_REMOVE);
    case ZIP_SOURCE_SUPPORTS:
      return s->writable ? ZIP_SOURCE_SUPPORTS_WRITABLE : ZIP_SOURCE_SUPPORTS_SEEKABLE;
    default: return s->Fail(ZIP_ER_OPNOTSUPP, 0);
  }
}

zip_source_t* MakeSource(std::unique_ptr<FsSource> state, zip_error_t* error) {
  zip_source_t* src = zip_source_function_create(Callback, state.get(), error);
  if (src) state.release();  // freed by ZIP_SOURCE_FREE from now on
  return src;
}

}  // namespace

Result<zip_source_t*> NewZipReadSource(FileSystem* fs, const std::string& path) {
  REEL_ASSIGN_OR_RETURN(FileInfo info, fs->Stat(path));
  if (info.type == FileType::kNotFound) return Status::NotFound(path + ": no such file");
  if (info.type != FileType::kFile) return Status::Invalid(path + ": not a regular file");
  auto state = std::make_unique<FsSource>();
  state->fs = fs;
  state->path = path;
  state->exists = true;
  state->size = static_cast<int64_t>(info.size);
  state->mtime_ns = info.mtime_ns;
  REEL_ASSIGN_OR_RETURN(state->in, fs->OpenRandomAccess(path));
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* src = MakeSource(std::move(state), &error);
  const std::string text = zip_error_strerror(&error);
  zip_error_fini(&error);
  if (!src) return Status::IOError(path + ": cannot make a zip source: " + text);
  return src;
}

Result<ZipArchive> OpenZipForRead(FileSystem* fs, const std::string& path, int flags, int* zip_error) {
  *zip_error = ZIP_ER_OPEN;
  REEL_ASSIGN_OR_RETURN(zip_source_t* src, NewZipReadSource(fs, path));
  zip_error_t error;
  zip_error_init(&error);
  zip_t* za = zip_open_from_source(src, flags | ZIP_RDONLY, &error);
  *zip_error = zip_error_code_zip(&error);
  const std::string text = zip_error_strerror(&error);
  zip_error_fini(&error);
  if (!za) {
    zip_source_free(src);  // not taken over on failure
    return Status::IOError(path + ": " + text);
  }
  *zip_error = ZIP_ER_OK;
  return ZipArchive(za);
}

Result<ZipArchive> CreateZipForWrite(FileSystem* fs, const std::string& path) {
  REEL_ASSIGN_OR_RETURN(FileInfo info, fs->Stat(path));
  if (info.type != FileType::kNotFound) return Status::AlreadyExists(path + ": already exists");
  auto state = std::make_unique<FsSource>();
  state->fs = fs;
  state->path = path;
  state->writable = true;
  zip_error_t error;
  zip_error_init(&error);
  zip_t* za = nullptr;
  zip_source_t* src = MakeSource(std::move(state), &error);
  if (src) {
    za = zip_open_from_source(src, ZIP_CREATE | ZIP_EXCL, &error);
    if (!za) zip_source_free(src);
  }
  const std::string text = zip_error_strerror(&error);
  zip_error_fini(&error);
  if (!za) return Status::IOError(path + ": cannot create zip: " + text);
  return ZipArchive(za);
}

}  // namespace reel::internal
