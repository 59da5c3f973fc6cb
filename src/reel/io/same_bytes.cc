#include "io/same_bytes.h"

#include <arrow/buffer.h>
#include <arrow/io/interfaces.h>

namespace reel::internal {

Result<bool> SameBytes(FileSystem* fs, const std::string& a, const std::string& b) {
  return SameBytesAcross(fs, a, fs, b);
}

Result<bool> SameBytesAcross(FileSystem* fs_a, const std::string& a, FileSystem* fs_b, const std::string& b) {
  REEL_ASSIGN_OR_RETURN(FileInfo ia, fs_a->Stat(a));
  REEL_ASSIGN_OR_RETURN(FileInfo ib, fs_b->Stat(b));
  if (ia.type != FileType::kFile || ib.type != FileType::kFile || ia.size != ib.size) return false;
  REEL_ASSIGN_OR_RETURN(auto fa, fs_a->OpenRandomAccess(a));
  REEL_ASSIGN_OR_RETURN(auto fb, fs_b->OpenRandomAccess(b));
  constexpr int64_t kBlock = 1 << 20;
  for (int64_t at = 0; at < static_cast<int64_t>(ia.size); at += kBlock) {
    auto ba = fa->ReadAt(at, kBlock);
    auto bb = fb->ReadAt(at, kBlock);
    if (!ba.ok() || !bb.ok()) return Status::IOError("comparing " + a + " with " + b + ": read failed");
    if (!(*ba)->Equals(**bb)) return false;
  }
  return true;
}

}  // namespace reel::internal
