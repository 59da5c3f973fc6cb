#include "io/copy_file.h"

#include <arrow/buffer.h>
#include <arrow/io/interfaces.h>

#include <algorithm>

#include "io/temp_name.h"

namespace reel::internal {

namespace {
constexpr int64_t kCopyBlock = int64_t{8} << 20;  // 8 MiB per read and append
}  // namespace

Result<uint64_t> CopyFileAcross(FileSystem* from_fs, const std::string& from, FileSystem* to_fs,
                                const std::string& to) {
  REEL_ASSIGN_OR_RETURN(auto in, from_fs->OpenRandomAccess(from));
  auto size = in->GetSize();
  if (!size.ok()) return Status::IOError(from + ": " + size.status().ToString());
  REEL_RETURN_IF_ERROR(to_fs->CreateDirs(DirName(to)));
  REEL_ASSIGN_OR_RETURN(auto out, to_fs->NewWritableFile(to));
  for (int64_t at = 0; at < *size; at += kCopyBlock) {
    auto block = in->ReadAt(at, std::min(kCopyBlock, *size - at));
    if (!block.ok()) return Status::IOError(from + ": " + block.status().ToString());
    REEL_RETURN_IF_ERROR(out->Append(std::string_view(reinterpret_cast<const char*>((*block)->data()),
                                                      static_cast<size_t>((*block)->size()))));
  }
  REEL_RETURN_IF_ERROR(out->Sync());
  REEL_RETURN_IF_ERROR(out->Close());
  return static_cast<uint64_t>(*size);
}

Result<uint64_t> ReplaceFileAcross(FileSystem* from_fs, const std::string& from, FileSystem* to_fs,
                                   const std::string& to) {
  if (!to_fs->Capabilities().atomic_rename) return CopyFileAcross(from_fs, from, to_fs, to);
  const std::string tmp = TempPathFor(to, "replace");
  auto copied = CopyFileAcross(from_fs, from, to_fs, tmp);
  Status st = copied.status();
  if (st.ok()) st = to_fs->Rename(tmp, to);
  if (st.ok()) return copied;
  auto left = to_fs->Stat(tmp);
  if (left.ok() && left->type != FileType::kNotFound) (void)to_fs->RemoveFile(tmp);
  return st;
}

}  // namespace reel::internal
