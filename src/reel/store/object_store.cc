// reel::FileSystem over arrow::fs, and the resolution of paths and URIs to it.
#include "reel/object_store.h"

#include <arrow/buffer.h>
#include <arrow/filesystem/filesystem.h>
#include <arrow/filesystem/s3fs.h>
#include <arrow/io/interfaces.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>

namespace reel {

struct ObjectStoreFileSystem::Counters {
  std::atomic<uint64_t> bytes_read{0};
  std::atomic<uint64_t> read_requests{0};
  std::atomic<uint64_t> files_opened{0};
  std::atomic<uint64_t> metadata_requests{0};

  void Read(int64_t bytes) {
    read_requests.fetch_add(1, std::memory_order_relaxed);
    if (bytes > 0) bytes_read.fetch_add(static_cast<uint64_t>(bytes), std::memory_order_relaxed);
  }
};

namespace {

using Counters = ObjectStoreFileSystem::Counters;

bool Contains(const std::string& text, const char* needle) { return text.find(needle) != std::string::npos; }

// arrow::Status -> reel::Status, the message prefixed with what was done to which URI.
// Arrow's S3 errors carry the AWS error name; the common ones get their own code.
Status FromArrow(const arrow::Status& st, const std::string& what, const std::string& uri) {
  const std::string msg = uri + ": " + what + ": " + st.message();
  if (st.IsInvalid()) return Status::Invalid(msg);
  if (st.IsNotImplemented()) return Status::NotSupported(msg);
  if (st.IsKeyError() || st.IsIndexError()) return Status::NotFound(msg);
  const std::string& m = st.message();
  if (Contains(m, "ACCESS_DENIED") || Contains(m, "AccessDenied") || Contains(m, "INVALID_ACCESS_KEY_ID") ||
      Contains(m, "SIGNATURE_DOES_NOT_MATCH") || Contains(m, "InvalidAccessKeyId") ||
      Contains(m, "SignatureDoesNotMatch") || Contains(m, "HTTP status 403"))
    return Status::PermissionDenied(msg);
  if (Contains(m, "NO_SUCH_BUCKET") || Contains(m, "NoSuchBucket") || Contains(m, "NO_SUCH_KEY") ||
      Contains(m, "does not exist") || Contains(m, "HTTP status 404"))
    return Status::NotFound(msg);
  return Status::IOError(msg);
}

// An object's last modification (S3's LastModified: whole seconds), 0 when the store gave none.
int64_t MtimeNs(const arrow::fs::FileInfo& info) {
  if (info.mtime() == arrow::fs::kNoTime) return 0;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(info.mtime().time_since_epoch()).count();
}

FileType TypeOf(arrow::fs::FileType type) {
  switch (type) {
    case arrow::fs::FileType::NotFound:
      return FileType::kNotFound;
    case arrow::fs::FileType::File:
      return FileType::kFile;
    case arrow::fs::FileType::Directory:
      return FileType::kDirectory;
    default:
      return FileType::kOther;
  }
}

// Arrow's file, counting what is read through it. Every call forwards; ReadAsync and
// the other defaults of RandomAccessFile end in ReadAt, so they are counted too.
class CountingFile final : public arrow::io::RandomAccessFile {
 public:
  CountingFile(std::shared_ptr<arrow::io::RandomAccessFile> file, std::shared_ptr<Counters> counters)
      : file_(std::move(file)), counters_(std::move(counters)) {}

  arrow::Status Close() override { return file_->Close(); }
  arrow::Status Abort() override { return file_->Abort(); }
  bool closed() const override { return file_->closed(); }
  arrow::Result<int64_t> Tell() const override { return file_->Tell(); }
  arrow::Status Seek(int64_t position) override { return file_->Seek(position); }
  arrow::Result<int64_t> GetSize() override { return file_->GetSize(); }

  arrow::Result<int64_t> Read(int64_t nbytes, void* out) override {
    ARROW_ASSIGN_OR_RAISE(int64_t n, file_->Read(nbytes, out));
    counters_->Read(n);
    return n;
  }
  arrow::Result<std::shared_ptr<arrow::Buffer>> Read(int64_t nbytes) override {
    ARROW_ASSIGN_OR_RAISE(auto buffer, file_->Read(nbytes));
    counters_->Read(buffer->size());
    return buffer;
  }
  arrow::Result<int64_t> ReadAt(int64_t position, int64_t nbytes, void* out) override {
    ARROW_ASSIGN_OR_RAISE(int64_t n, file_->ReadAt(position, nbytes, out));
    counters_->Read(n);
    return n;
  }
  arrow::Result<std::shared_ptr<arrow::Buffer>> ReadAt(int64_t position, int64_t nbytes) override {
    ARROW_ASSIGN_OR_RAISE(auto buffer, file_->ReadAt(position, nbytes));
    counters_->Read(buffer->size());
    return buffer;
  }

 private:
  std::shared_ptr<arrow::io::RandomAccessFile> file_;
  std::shared_ptr<Counters> counters_;
};

// An object being uploaded. It appears whole at Close(); destroyed without Close()
// the upload is aborted, so no partial object is ever published.
class ObjectWritableFile final : public WritableFile {
 public:
  ObjectWritableFile(std::shared_ptr<arrow::io::OutputStream> out, std::string uri)
      : out_(std::move(out)), uri_(std::move(uri)) {}
  ~ObjectWritableFile() override {
    if (out_ && !out_->closed()) (void)out_->Abort();
  }
  Status Append(std::string_view data) override {
    arrow::Status st = out_->Write(data.data(), static_cast<int64_t>(data.size()));
    return st.ok() ? Status::OK() : FromArrow(st, "write", uri_);
  }
  // Nothing is durable before Close() on an object store; a flush only hands the
  // buffered bytes to the upload.
  Status Sync() override {
    arrow::Status st = out_->Flush();
    return st.ok() ? Status::OK() : FromArrow(st, "flush", uri_);
  }
  Status Close() override {
    arrow::Status st = out_->Close();
    return st.ok() ? Status::OK() : FromArrow(st, "close (complete the upload)", uri_);
  }

 private:
  std::shared_ptr<arrow::io::OutputStream> out_;
  std::string uri_;
};

}  // namespace

// ---- ObjectStoreFileSystem ---------------------------------------------------------

ObjectStoreFileSystem::ObjectStoreFileSystem(std::shared_ptr<arrow::fs::FileSystem> fs, std::string uri_prefix)
    : fs_(std::move(fs)), uri_prefix_(std::move(uri_prefix)), counters_(std::make_shared<Counters>()) {}

ObjectStoreFileSystem::~ObjectStoreFileSystem() = default;

std::unique_ptr<ObjectStoreFileSystem> ObjectStoreFileSystem::Wrap(std::shared_ptr<arrow::fs::FileSystem> fs,
                                                                   std::string uri_prefix) {
  return std::unique_ptr<ObjectStoreFileSystem>(new ObjectStoreFileSystem(std::move(fs), std::move(uri_prefix)));
}

Result<FileInfo> ObjectStoreFileSystem::Stat(const std::string& path) {
  counters_->metadata_requests.fetch_add(1, std::memory_order_relaxed);
  auto info = fs_->GetFileInfo(path);
  if (!info.ok()) return FromArrow(info.status(), "stat", Uri(path));
  FileInfo out;
  out.type = TypeOf(info->type());
  if (out.type == FileType::kFile && info->size() > 0) out.size = static_cast<uint64_t>(info->size());
  if (out.type == FileType::kFile) out.mtime_ns = MtimeNs(*info);
  return out;
}

Result<std::vector<DirEntry>> ObjectStoreFileSystem::ListDir(const std::string& path) {
  counters_->metadata_requests.fetch_add(1, std::memory_order_relaxed);
  arrow::fs::FileSelector selector;
  selector.base_dir = path;
  selector.recursive = false;
  selector.allow_not_found = true;
  auto infos = fs_->GetFileInfo(selector);
  if (!infos.ok()) return FromArrow(infos.status(), "list", Uri(path));
  if (infos->empty()) {
    // An empty listing is an empty directory only where directories exist by themselves
    // (a local or marker directory); a prefix with nothing below it does not exist.
    REEL_ASSIGN_OR_RETURN(FileInfo self, Stat(path));
    if (self.type == FileType::kNotFound) return Status::NotFound(Uri(path) + ": list: no such directory");
    if (self.type != FileType::kDirectory) return Status::NotFound(Uri(path) + ": list: not a directory");
  }
  std::vector<DirEntry> entries;
  entries.reserve(infos->size());
  for (const arrow::fs::FileInfo& info : *infos) {
    std::string name = info.base_name();
    if (name.empty() || name == "." || name == "..") continue;
    const FileType type = TypeOf(info.type());
    const bool file = type == FileType::kFile;
    entries.push_back({.name = std::move(name),
                       .type = type,
                       .symlink = false,
                       .size = file && info.size() > 0 ? static_cast<uint64_t>(info.size()) : 0,
                       .mtime_ns = file ? MtimeNs(info) : 0});
  }
  std::sort(entries.begin(), entries.end(), [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  // A marker object "dir/" beside objects "dir/x" can be listed as both; keep one.
  entries.erase(std::unique(entries.begin(), entries.end(),
                            [](const DirEntry& a, const DirEntry& b) { return a.name == b.name; }),
                entries.end());
  return entries;
}

Result<std::string> ObjectStoreFileSystem::ReadFile(const std::string& path) {
  auto file = fs_->OpenInputFile(path);
  if (!file.ok()) return FromArrow(file.status(), "open", Uri(path));
  auto size = (*file)->GetSize();
  if (!size.ok()) return FromArrow(size.status(), "size", Uri(path));
  std::string out(static_cast<size_t>(*size), '\0');
  int64_t done = 0;
  while (done < *size) {
    auto n = (*file)->ReadAt(done, *size - done, out.data() + done);
    if (!n.ok()) return FromArrow(n.status(), "read", Uri(path));
    counters_->Read(*n);
    if (*n == 0) return Status::IOError(Uri(path) + ": read: object shorter than its listed size");
    done += *n;
  }
  if (*size == 0) counters_->Read(0);
  return out;
}

Result<std::shared_ptr<arrow::io::RandomAccessFile>> ObjectStoreFileSystem::OpenRandomAccess(
    const std::string& path) {
  counters_->files_opened.fetch_add(1, std::memory_order_relaxed);
  auto file = fs_->OpenInputFile(path);
  if (!file.ok()) return FromArrow(file.status(), "open", Uri(path));
  return std::shared_ptr<arrow::io::RandomAccessFile>(std::make_shared<CountingFile>(*file, counters_));
}

Result<std::unique_ptr<WritableFile>> ObjectStoreFileSystem::NewWritableFile(const std::string& path) {
  auto out = fs_->OpenOutputStream(path);
  if (!out.ok()) return FromArrow(out.status(), "create", Uri(path));
  return std::unique_ptr<WritableFile>(std::make_unique<ObjectWritableFile>(*out, Uri(path)));
}

Status ObjectStoreFileSystem::Rename(const std::string& from, const std::string& to) {
  return Status::NotSupported(Uri(from) + ": rename to " + Uri(to) +
                              ": object stores have no atomic rename (write to a local task, then "
                              "copy it to object storage)");
}

Status ObjectStoreFileSystem::SyncDir(const std::string& path) { return Status::OK(); }

Status ObjectStoreFileSystem::RemoveFile(const std::string& path) {
  arrow::Status st = fs_->DeleteFile(path);
  return st.ok() ? Status::OK() : FromArrow(st, "remove", Uri(path));
}

Status ObjectStoreFileSystem::RemoveDir(const std::string& path) {
  if (path.find('/') == std::string::npos)
    return Status::NotSupported(Uri(path) + ": remove directory: reel never removes a bucket");
  REEL_ASSIGN_OR_RETURN(FileInfo self, Stat(path));
  if (self.type == FileType::kNotFound) return Status::NotFound(Uri(path) + ": remove directory: no such directory");
  if (self.type != FileType::kDirectory) return Status::IOError(Uri(path) + ": remove directory: not a directory");
  REEL_ASSIGN_OR_RETURN(auto entries, ListDir(path));
  if (!entries.empty()) return Status::IOError(Uri(path) + ": remove directory: not empty");
  // Only a marker object keeps an empty directory alive; DeleteDir removes it (and would
  // remove objects written below it since the listing: the one writer rule applies).
  arrow::Status st = fs_->DeleteDir(path);
  return st.ok() ? Status::OK() : FromArrow(st, "remove directory", Uri(path));
}

// Object stores have implicit directories: a key's prefixes exist once the key does, and
// ListDir and Stat see them through their keys. Arrow's CreateDir would write an empty
// marker object per level ("data/", "data/chunk-000/"), clutter that nothing reads, so
// nothing is written.
Status ObjectStoreFileSystem::CreateDirs(const std::string& path) { return Status::OK(); }

Result<std::unique_ptr<FileLock>> ObjectStoreFileSystem::LockFile(const std::string& path) {
  return Status::NotSupported(Uri(path) +
                              ": lock: object stores have no file locks (writers run on a local task)");
}

ObjectStoreCounters ObjectStoreFileSystem::counters() const {
  ObjectStoreCounters c;
  c.bytes_read = counters_->bytes_read.load(std::memory_order_relaxed);
  c.read_requests = counters_->read_requests.load(std::memory_order_relaxed);
  c.files_opened = counters_->files_opened.load(std::memory_order_relaxed);
  c.metadata_requests = counters_->metadata_requests.load(std::memory_order_relaxed);
  return c;
}

void ObjectStoreFileSystem::ResetCounters() {
  counters_->bytes_read = 0;
  counters_->read_requests = 0;
  counters_->files_opened = 0;
  counters_->metadata_requests = 0;
}

}  // namespace reel
