#include "serve/spool.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "util/json_util.h"
#include "reel/fs.h"
#include "serve/serve_internal.h"

namespace reel::serve {

namespace {

using internal::Json;

}  // namespace

bool IsUploadId(const std::string& id) {
  if (id.size() != 32) return false;
  for (char c : id)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

Status Spool::Init(int64_t max_age_s) {
  REEL_RETURN_IF_ERROR(DefaultFileSystem()->CreateDirs(dir_));
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const auto age = std::chrono::duration_cast<std::chrono::seconds>(now - entry.last_write_time(ec)).count();
    if (age > max_age_s) fs::remove(entry.path(), ec);
  }
  return Status::OK();
}

Result<SpoolUpload> Spool::Create(const SpoolUpload& what) {
  SpoolUpload up = what;
  up.id = RandomHex(16);
  up.offset = 0;
  Json j = {{"length", up.length}, {"name", up.name}, {"project", up.project},
            {"form_episode_index", up.form_episode_index}, {"principal", up.principal}};
  FileSystem* fs = DefaultFileSystem();
  REEL_RETURN_IF_ERROR(WriteFileSynced(fs, PartPath(up.id), ""));
  REEL_RETURN_IF_ERROR(WriteFileAtomic(fs, dir_ + "/" + up.id + ".json", internal::Dump(j, -1)));
  return up;
}

Result<SpoolUpload> Spool::Get(const std::string& id) {
  if (!IsUploadId(id)) return Status::NotFound("upload \"" + id + "\" does not exist");
  FileSystem* fs = DefaultFileSystem();
  const std::string meta = dir_ + "/" + id + ".json";
  auto text = fs->ReadFile(meta);
  if (!text.ok()) return Status::NotFound("upload " + id + " does not exist or has expired");
  REEL_ASSIGN_OR_RETURN(Json j, internal::ParseJson(*text, meta));
  SpoolUpload up;
  up.id = id;
  up.length = j.value("length", uint64_t{0});
  up.name = j.value("name", std::string());
  up.project = j.value("project", std::string());
  up.form_episode_index = j.value("form_episode_index", int64_t{-1});
  up.principal = j.value("principal", std::string());
  REEL_ASSIGN_OR_RETURN(FileInfo part, fs->Stat(PartPath(id)));
  up.offset = part.type == FileType::kFile ? part.size : up.length;  // imported: the part is gone
  return up;
}

Result<uint64_t> Spool::Append(const SpoolUpload& upload, const std::string& data) {
  const std::string path = PartPath(upload.id);
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return Status::IOError(path + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return Status::IOError(path + ": " + std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced) return Status::IOError(path + ": fsync failed");
  return upload.offset + data.size();
}

Status Spool::SaveResult(const std::string& id, const std::string& json) {
  return WriteFileAtomic(DefaultFileSystem(), dir_ + "/" + id + ".result.json", json);
}

std::optional<std::string> Spool::LoadResult(const std::string& id) {
  auto text = DefaultFileSystem()->ReadFile(dir_ + "/" + id + ".result.json");
  if (!text.ok()) return std::nullopt;
  return *text;
}

void Spool::RemovePart(const std::string& id) { (void)DefaultFileSystem()->RemoveFile(PartPath(id)); }

std::mutex& Spool::LockFor(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& m = locks_[id];
  if (!m) m = std::make_unique<std::mutex>();
  return *m;
}

}  // namespace reel::serve
