#include "io/read_through_fs.h"

#include <algorithm>
#include <map>

namespace reel::internal {

ReadThroughFileSystem::ReadThroughFileSystem(FileSystem* local, std::string staging_root, FileSystem* store,
                                             std::string store_root)
    : FileSystemWrapper(local),
      local_(local),
      staging_root_(std::move(staging_root)),
      store_(store),
      store_root_(std::move(store_root)) {
  while (staging_root_.size() > 1 && staging_root_.back() == '/') staging_root_.pop_back();
}

std::optional<std::string> ReadThroughFileSystem::AtStore(const std::string& path) const {
  if (path == staging_root_) return store_root_;
  if (!path.starts_with(staging_root_ + "/")) return std::nullopt;
  if (BaseName(path).starts_with(".")) return std::nullopt;
  return JoinPath(store_root_, path.substr(staging_root_.size() + 1));
}

Result<FileInfo> ReadThroughFileSystem::Stat(const std::string& path) {
  REEL_ASSIGN_OR_RETURN(FileInfo here, local_->Stat(path));
  const auto there = AtStore(path);
  if (here.type != FileType::kNotFound || !there) return here;
  return store_->Stat(*there);
}

Result<std::vector<DirEntry>> ReadThroughFileSystem::ListDir(const std::string& path) {
  const auto there = AtStore(path);
  auto here = local_->ListDir(path);
  if (!there) return here;
  if (!here.ok() && here.status().code() != StatusCode::kNotFound) return here.status();
  auto stored = store_->ListDir(*there);
  if (!stored.ok() && stored.status().code() != StatusCode::kNotFound) return stored.status();
  if (!here.ok() && !stored.ok()) return here.status();
  std::map<std::string, DirEntry> merged;  // sorted by name, as ListDir promises
  if (stored.ok())
    for (DirEntry& e : *stored)
      if (!e.name.starts_with(".")) merged[e.name] = std::move(e);
  if (here.ok())
    for (DirEntry& e : *here) merged[e.name] = std::move(e);  // the staged file wins
  std::vector<DirEntry> out;
  out.reserve(merged.size());
  for (auto& [name, e] : merged) out.push_back(std::move(e));
  return out;
}

Result<bool> ReadThroughFileSystem::IsStaged(const std::string& path) {
  REEL_ASSIGN_OR_RETURN(FileInfo here, local_->Stat(path));
  return here.type != FileType::kNotFound;
}

Result<std::string> ReadThroughFileSystem::ReadFile(const std::string& path) {
  REEL_ASSIGN_OR_RETURN(bool staged, IsStaged(path));
  const auto there = AtStore(path);
  return staged || !there ? local_->ReadFile(path) : store_->ReadFile(*there);
}

Result<std::shared_ptr<arrow::io::RandomAccessFile>> ReadThroughFileSystem::OpenRandomAccess(
    const std::string& path) {
  REEL_ASSIGN_OR_RETURN(bool staged, IsStaged(path));
  const auto there = AtStore(path);
  return staged || !there ? local_->OpenRandomAccess(path) : store_->OpenRandomAccess(*there);
}

Status ReadThroughFileSystem::StoreOnly(const std::string& path, const char* what) {
  REEL_ASSIGN_OR_RETURN(bool staged, IsStaged(path));
  const auto there = AtStore(path);
  if (staged || !there) return Status::OK();
  REEL_ASSIGN_OR_RETURN(FileInfo stored, store_->Stat(*there));
  if (stored.type == FileType::kNotFound) return Status::OK();
  return Status::NotSupported(path + ": " + what + " of a file that is only at the store (" + *there +
                              "): a staged change never changes the store's files in place");
}

Status ReadThroughFileSystem::Rename(const std::string& from, const std::string& to) {
  REEL_RETURN_IF_ERROR(StoreOnly(from, "rename"));
  return local_->Rename(from, to);
}

Status ReadThroughFileSystem::RemoveFile(const std::string& path) {
  REEL_RETURN_IF_ERROR(StoreOnly(path, "removal"));
  return local_->RemoveFile(path);
}

Status ReadThroughFileSystem::SyncDir(const std::string& path) {
  REEL_ASSIGN_OR_RETURN(bool staged, IsStaged(path));
  return staged ? local_->SyncDir(path) : Status::OK();
}

}  // namespace reel::internal
