// POSIX implementation of FileSystem, and the helpers built on the interface.
#include <arrow/io/file.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "reel/fs.h"
#include "io/temp_name.h"

namespace reel {
namespace {

Status ErrnoStatus(const std::string& what, const std::string& path, int err) {
  std::string msg = path + ": " + what + ": " + std::strerror(err);
  if (err == ENOENT || err == ENOTDIR) return Status::NotFound(msg);
  if (err == EACCES || err == EPERM) return Status::PermissionDenied(msg);
  return Status::IOError(msg);
}

FileType TypeOfMode(mode_t mode) {
  if (S_ISREG(mode)) return FileType::kFile;
  if (S_ISDIR(mode)) return FileType::kDirectory;
  return FileType::kOther;
}

FileInfo InfoOf(const struct stat& st) {
  return FileInfo{TypeOfMode(st.st_mode), static_cast<uint64_t>(st.st_size),
                  static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

// A missing path is not an error for Stat: type kNotFound.
Result<FileInfo> StatError(const std::string& path, int err) {
  if (err == ENOENT || err == ENOTDIR) return FileInfo{};
  return ErrnoStatus("stat", path, err);
}

class PosixWritableFile final : public WritableFile {
 public:
  // `size`: bytes already in the file; `o_append`: opened with O_APPEND, under which
  // Linux's pwrite appends whatever the offset, so WriteAt is refused.
  PosixWritableFile(std::string path, int fd, uint64_t size = 0, bool o_append = false)
      : path_(std::move(path)), fd_(fd), size_(size), o_append_(o_append) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }
  Status Append(std::string_view data) override {
    while (!data.empty()) {
      ssize_t n = ::write(fd_, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus("write", path_, errno);
      }
      data.remove_prefix(static_cast<size_t>(n));
      size_ += static_cast<uint64_t>(n);
    }
    return Status::OK();
  }
  Status WriteAt(uint64_t offset, std::string_view data) override {
    if (o_append_) return Status::NotSupported(path_ + ": opened for appending; no positioned writes");
    if (offset > size_ || data.size() > size_ - offset)
      return Status::Invalid(path_ + ": positioned write of " + std::to_string(data.size()) +
                             " bytes at " + std::to_string(offset) + " runs past the end (" +
                             std::to_string(size_) + " bytes written)");
    while (!data.empty()) {
      ssize_t n = ::pwrite(fd_, data.data(), data.size(), static_cast<off_t>(offset));
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus("pwrite", path_, errno);
      }
      data.remove_prefix(static_cast<size_t>(n));
      offset += static_cast<uint64_t>(n);
    }
    return Status::OK();
  }
  Status Sync() override {
    if (::fsync(fd_) != 0) return ErrnoStatus("fsync", path_, errno);
    return Status::OK();
  }
  Status Close() override {
    int fd = fd_;
    fd_ = -1;
    if (fd >= 0 && ::close(fd) != 0) return ErrnoStatus("close", path_, errno);
    return Status::OK();
  }

 private:
  std::string path_;
  int fd_;
  uint64_t size_;  // where Append continues (the descriptor's offset)
  bool o_append_;
};

class PosixFileLock final : public FileLock {
 public:
  explicit PosixFileLock(int fd) : fd_(fd) {}
  ~PosixFileLock() override {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }

 private:
  int fd_;
};

// Opens `path` read-only (plus `flags`) and fsyncs it.
Status FsyncPath(const std::string& path, int flags, const std::string& what) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | flags);
  if (fd < 0) return ErrnoStatus("open " + what, path, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return ErrnoStatus("fsync " + what, path, err);
  return Status::OK();
}

class PosixFileSystem final : public FileSystem {
 public:
  Result<FileInfo> Stat(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return StatError(path, errno);
    return InfoOf(st);
  }

  std::vector<Result<FileInfo>> StatMany(const std::string& dir, const std::vector<std::string>& names) override {
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return FileSystem::StatMany(dir, names);  // the errors as Stat gives them
    std::vector<Result<FileInfo>> out;
    out.reserve(names.size());
    for (const std::string& name : names) {
      struct stat st;
      // A name with '/' would leave `dir`: resolved from `dir` all the same, as Stat would.
      if (::fstatat(dfd, name.c_str(), &st, 0) != 0) out.push_back(StatError(dir + "/" + name, errno));
      else out.push_back(InfoOf(st));
    }
    ::close(dfd);
    return out;
  }

  Result<std::vector<DirEntry>> ListDir(const std::string& path) override {
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) return ErrnoStatus("opendir", path, errno);
    std::vector<DirEntry> entries;
    // readdir reports an error only through errno, which the stat calls below may set.
    for (errno = 0; struct dirent* e = ::readdir(dir); errno = 0) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      FileType type = FileType::kOther;
      bool symlink = e->d_type == DT_LNK;
      if (e->d_type == DT_REG) {
        type = FileType::kFile;
      } else if (e->d_type == DT_DIR) {
        type = FileType::kDirectory;
      } else if (e->d_type == DT_UNKNOWN || e->d_type == DT_LNK) {
        const std::string child = path + "/" + name;
        struct stat st;
        if (e->d_type == DT_UNKNOWN && ::lstat(child.c_str(), &st) == 0) symlink = S_ISLNK(st.st_mode);
        if (::stat(child.c_str(), &st) == 0) type = TypeOfMode(st.st_mode);  // a loop stays kOther
      }
      entries.push_back({.name = std::move(name), .type = type, .symlink = symlink});
    }
    int err = errno;
    ::closedir(dir);
    if (err != 0) return ErrnoStatus("readdir", path, err);
    std::sort(entries.begin(), entries.end(),
              [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
    return entries;
  }

  Result<std::string> ReadFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus("open", path, errno);
    struct stat st;
    if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
      ::close(fd);
      return Status::Invalid(path + ": is a directory, expected a file");
    }
    std::string out;
    char buf[1 << 16];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0) {
        if (errno == EINTR) continue;
        int err = errno;
        ::close(fd);
        return ErrnoStatus("read", path, err);
      }
      if (n == 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return out;
  }

  Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenRandomAccess(
      const std::string& path) override {
    // Probe with open(2) first so the error carries errno's meaning.
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus("open", path, errno);
    auto file = arrow::io::ReadableFile::Open(fd);
    if (!file.ok()) {
      ::close(fd);
      return Status::IOError(path + ": " + file.status().message());
    }
    return std::shared_ptr<arrow::io::RandomAccessFile>(*file);
  }

  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return ErrnoStatus("create", path, errno);
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd));
  }

  Result<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return ErrnoStatus("open for append", path, errno);
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      int err = errno;
      ::close(fd);
      return ErrnoStatus("fstat", path, err);
    }
    return std::unique_ptr<WritableFile>(
        new PosixWritableFile(path, fd, static_cast<uint64_t>(st.st_size), true));
  }

  Status RemoveDir(const std::string& path) override {
    if (::rmdir(path.c_str()) != 0) return ErrnoStatus("rmdir", path, errno);
    return Status::OK();
  }

  Result<std::string> CreateUniqueDir(const std::string& prefix) override {
    std::string name = prefix + "XXXXXX";
    if (::mkdtemp(name.data()) == nullptr) return ErrnoStatus("mkdtemp", name, errno);
    return name;
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return ErrnoStatus("rename to " + to, from, errno);
    return Status::OK();
  }

  Status SyncDir(const std::string& path) override { return FsyncPath(path, O_DIRECTORY, "directory"); }
  Status SyncFile(const std::string& path) override { return FsyncPath(path, 0, "file"); }

  Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return ErrnoStatus("unlink", path, errno);
    return Status::OK();
  }

  FileSystemCapabilities Capabilities() const override { return {}; }  // everything

  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return ErrnoStatus("open lock", path, errno);
    while (::flock(fd, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return ErrnoStatus("flock", path, err);
    }
    return std::unique_ptr<FileLock>(new PosixFileLock(fd));
  }

  Status CreateDirs(const std::string& path) override {
    if (path.empty()) return Status::OK();
    std::string partial;
    size_t pos = 0;
    while (pos != std::string::npos) {
      pos = path.find('/', pos + 1);
      partial = path.substr(0, pos);
      if (partial.empty()) continue;
      if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
        return ErrnoStatus("mkdir", partial, errno);
    }
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return Status::IOError(path + ": exists and is not a directory");
    return Status::OK();
  }
};

}  // namespace

Result<std::unique_ptr<FileLock>> FileSystem::LockFile(const std::string& path) {
  return Status::NotSupported(path + ": this file system has no locks");
}

Status WritableFile::WriteAt(uint64_t offset, std::string_view data) {
  (void)offset;
  (void)data;
  return Status::NotSupported("this file system cannot overwrite what it has written");
}

Result<std::unique_ptr<WritableFile>> FileSystem::NewAppendableFile(const std::string& path) {
  return Status::NotSupported(path + ": this file system cannot append to a file");
}

std::vector<Result<FileInfo>> FileSystem::StatMany(const std::string& dir, const std::vector<std::string>& names) {
  std::vector<Result<FileInfo>> out;
  out.reserve(names.size());
  for (const std::string& name : names) out.push_back(Stat(JoinPath(dir, name)));
  return out;
}

Status FileSystem::RemoveDir(const std::string& path) {
  return Status::NotSupported(path + ": this file system cannot remove directories");
}

Result<std::string> FileSystem::CreateUniqueDir(const std::string& prefix) {
  return Status::NotSupported(prefix + "XXXXXX: this file system cannot create unique directories");
}

Status RemoveAll(FileSystem* fs, const std::string& path, bool* removed) {
  if (removed) *removed = false;
  REEL_ASSIGN_OR_RETURN(FileInfo info, fs->Stat(path));
  if (info.type == FileType::kNotFound) return Status::OK();
  if (info.type == FileType::kDirectory) {
    REEL_ASSIGN_OR_RETURN(auto entries, fs->ListDir(path));
    for (const DirEntry& e : entries) {
      const std::string child = JoinPath(path, e.name);
      if (e.type == FileType::kDirectory && !e.symlink) {
        REEL_RETURN_IF_ERROR(RemoveAll(fs, child));
      } else {
        Status st = fs->RemoveFile(child);
        if (!st.ok() && st.code() != StatusCode::kNotFound) return st;  // gone meanwhile: fine
      }
    }
    Status st = fs->RemoveDir(path);
    if (!st.ok() && st.code() != StatusCode::kNotFound) return st;
  } else {
    Status st = fs->RemoveFile(path);
    if (!st.ok() && st.code() != StatusCode::kNotFound) return st;
  }
  if (removed) *removed = true;
  return Status::OK();
}

Status FileSystem::SyncFile(const std::string& path) {
  return Status::NotSupported(path + ": this file system cannot sync files it did not write");
}

FileSystem* DefaultFileSystem() {
  static PosixFileSystem* fs = new PosixFileSystem();
  return fs;
}

std::string JoinPath(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  if (a.back() == '/') return a + b;
  return a + "/" + b;
}

std::string BaseName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string TaskDirName(const std::string& path_or_uri) {
  if (path_or_uri.find("://") != std::string::npos) {
    std::string path = path_or_uri;
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    return BaseName(path);
  }
  std::filesystem::path p = std::filesystem::absolute(path_or_uri).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

std::string DirName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status WriteFileSynced(FileSystem* fs, const std::string& path, std::string_view contents) {
  REEL_ASSIGN_OR_RETURN(auto file, fs->NewWritableFile(path));
  REEL_RETURN_IF_ERROR(file->Append(contents));
  REEL_RETURN_IF_ERROR(file->Sync());
  return file->Close();
}

Status WriteFileAtomic(FileSystem* fs, const std::string& path, std::string_view contents) {
  // An object store's object appears whole when its upload completes; its "rename" would be
  // a copy and a delete, neither atomic nor needed.
  if (!fs->Capabilities().atomic_rename) return WriteFileSynced(fs, path, contents);
  const std::string dir = DirName(path);
  // A dotfile beside `path` (readers ignore it) whose host and pid let a later writer tell
  // a dead process's leftover from a live one's (io/temp_name.h).
  const std::string tmp = internal::TempPathFor(path, "atomic");
  auto write = [&]() -> Status {
    REEL_RETURN_IF_ERROR(WriteFileSynced(fs, tmp, contents));
    REEL_RETURN_IF_ERROR(fs->Rename(tmp, path));
    return fs->SyncDir(dir);
  };
  Status st = write();
  if (!st.ok()) {
    auto info = fs->Stat(tmp);
    if (info.ok() && info->type != FileType::kNotFound) (void)fs->RemoveFile(tmp);
  }
  return st;
}

}  // namespace reel
