#include "serve/spool.h"

#include <chrono>

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
  REEL_RETURN_IF_ERROR(fs_->CreateDirs(dir_));
  auto entries = fs_->ListDir(dir_);
  if (!entries.ok()) return Status::OK();  // best effort, as before: nothing expires this time
  const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch()).count();
  for (const DirEntry& e : *entries) {
    const std::string path = JoinPath(dir_, e.name);
    auto info = fs_->Stat(path);
    if (!info.ok() || info->mtime_ns == 0) continue;
    if ((now_ns - info->mtime_ns) / 1000000000 <= max_age_s) continue;
    // Files go; a directory only when empty (the spool makes none).
    (void)(e.type == FileType::kDirectory && !e.symlink ? fs_->RemoveDir(path) : fs_->RemoveFile(path));
  }
  max_age_s_ = max_age_s;
  std::lock_guard<std::mutex> lock(mu_);
  pending_.clear();
  for (const DirEntry& e : *entries) {  // an upload whose part is still there is pending
    if (!e.name.ends_with(".part")) continue;
    auto up = Get(e.name.substr(0, e.name.size() - 5));
    if (up.ok()) pending_[up->principal][up->id] = up->length;
  }
  return Status::OK();
}

std::pair<int, uint64_t> Spool::Pending(const std::string& principal) {
  std::lock_guard<std::mutex> lock(mu_);
  return PendingLocked(principal);
}

std::pair<int, uint64_t> Spool::PendingLocked(const std::string& principal) const {
  auto it = pending_.find(principal);
  if (it == pending_.end()) return {0, 0};
  uint64_t bytes = 0;
  for (const auto& [id, length] : it->second) bytes += length;
  return {static_cast<int>(it->second.size()), bytes};
}

void Spool::DropIdle(const std::string& principal) {
  auto it = pending_.find(principal);
  if (it == pending_.end()) return;
  const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch()).count();
  for (auto up = it->second.begin(); up != it->second.end();) {
    auto info = fs_->Stat(PartPath(up->first));
    const bool idle = info.ok() && info->type == FileType::kFile && info->mtime_ns != 0 &&
                      (now_ns - info->mtime_ns) / 1000000000 > max_age_s_;
    const bool gone = info.ok() && info->type == FileType::kNotFound;
    if (!idle && !gone) {
      ++up;
      continue;
    }
    (void)fs_->RemoveFile(PartPath(up->first));
    (void)fs_->RemoveFile(dir_ + "/" + up->first + ".json");
    up = it->second.erase(up);
  }
}

Result<std::optional<SpoolUpload>> Spool::Create(const SpoolUpload& what, const PendingLimits& limits) {
  std::lock_guard<std::mutex> lock(mu_);  // the count and the new upload, at once
  auto fits = [&] {
    const auto [count, bytes] = PendingLocked(what.principal);
    return count < limits.max_uploads && bytes + what.length <= limits.max_bytes;
  };
  if (!fits()) DropIdle(what.principal);
  if (!fits()) return std::optional<SpoolUpload>();
  SpoolUpload up = what;
  up.id = RandomHex(16);
  up.offset = 0;
  Json j = {{"length", up.length}, {"name", up.name}, {"project", up.project},
            {"form_episode_index", up.form_episode_index}, {"principal", up.principal}};
  REEL_RETURN_IF_ERROR(WriteFileSynced(fs_, PartPath(up.id), ""));
  REEL_RETURN_IF_ERROR(WriteFileAtomic(fs_, dir_ + "/" + up.id + ".json", internal::Dump(j, -1)));
  pending_[up.principal][up.id] = up.length;
  return std::optional<SpoolUpload>(std::move(up));
}

Result<SpoolUpload> Spool::Get(const std::string& id) {
  if (!IsUploadId(id)) return Status::NotFound("upload \"" + id + "\" does not exist");
  FileSystem* fs = fs_;
  const std::string meta = dir_ + "/" + id + ".json";
  auto text = fs->ReadFile(meta);
  if (!text.ok()) return Status::NotFound("upload " + id + " does not exist or has expired");
  REEL_ASSIGN_OR_RETURN(Json j, internal::ParseJson(*text, meta));
  // The state outlives the process that wrote it (a restart, another version, a damaged
  // disk): each key is read with a typed getter, so a wrong type is an error naming it.
  if (!j.is_object()) return Status::Invalid(meta + ": upload state must be a JSON object, found " + internal::JsonTypeName(j));
  SpoolUpload up;
  up.id = id;
  int64_t length = 0;
  REEL_RETURN_IF_ERROR(internal::GetInt(j, "length", meta, length));
  if (length < 0) return Status::Invalid(meta + ": upload state length " + std::to_string(length) + " is negative");
  up.length = static_cast<uint64_t>(length);
  REEL_RETURN_IF_ERROR(internal::GetString(j, "name", meta, up.name));
  REEL_RETURN_IF_ERROR(internal::GetString(j, "project", meta, up.project));
  REEL_RETURN_IF_ERROR(internal::GetInt(j, "form_episode_index", meta, up.form_episode_index));
  REEL_RETURN_IF_ERROR(internal::GetString(j, "principal", meta, up.principal));
  REEL_ASSIGN_OR_RETURN(FileInfo part, fs->Stat(PartPath(id)));
  up.offset = part.type == FileType::kFile ? part.size : up.length;  // imported: the part is gone
  return up;
}

Result<uint64_t> Spool::Append(const SpoolUpload& upload, const std::string& data) {
  const std::string path = PartPath(upload.id);
  // The part exists (Create made it); a missing one (imported, expired) is an error,
  // not a fresh start.
  REEL_ASSIGN_OR_RETURN(FileInfo part, fs_->Stat(path));
  if (part.type != FileType::kFile) return Status::IOError(path + ": the upload's part file is gone");
  REEL_ASSIGN_OR_RETURN(auto file, fs_->NewAppendableFile(path));
  Status st = file->Append(data);
  if (st.ok()) st = file->Sync();
  Status closed = file->Close();
  REEL_RETURN_IF_ERROR(st);
  REEL_RETURN_IF_ERROR(closed);
  return upload.offset + data.size();
}

Status Spool::SaveResult(const std::string& id, const std::string& json) {
  return WriteFileAtomic(fs_, dir_ + "/" + id + ".result.json", json);
}

std::optional<std::string> Spool::LoadResult(const std::string& id) {
  auto text = fs_->ReadFile(dir_ + "/" + id + ".result.json");
  if (!text.ok()) return std::nullopt;
  return *text;
}

void Spool::RemovePart(const std::string& id) {
  (void)fs_->RemoveFile(PartPath(id));
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [principal, ids] : pending_) ids.erase(id);
}

std::mutex& Spool::LockFor(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& m = locks_[id];
  if (!m) m = std::make_unique<std::mutex>();
  return *m;
}

}  // namespace reel::serve
