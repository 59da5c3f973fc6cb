// DigestFileGroup (include/reel/file_group.h): SHA-256 of an episode's files, read in
// 1 MiB pieces through the task's FileSystem (a local disk or an object store).
#include <arrow/buffer.h>
#include <arrow/io/interfaces.h>
#include <openssl/evp.h>

#include <memory>

#include "reel/file_group.h"
#include "util/hex.h"

namespace reel {

namespace {

struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

}  // namespace

Result<FileDigest> DigestFile(FileSystem* fs, const std::string& root, const std::string& rel,
                              const std::string& role) {
  const std::string path = JoinPath(root, rel);
  REEL_ASSIGN_OR_RETURN(auto file, fs->OpenRandomAccess(path));
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
    return Status::IOError(path + ": cannot start a SHA-256 digest (OpenSSL)");
  constexpr int64_t kPiece = int64_t{1} << 20;
  FileDigest out{role, rel, 0, ""};
  for (;;) {
    auto piece = file->Read(kPiece);
    if (!piece.ok()) return Status::IOError(path + ": " + piece.status().message());
    const auto& buffer = *piece;
    if (buffer->size() == 0) break;
    if (EVP_DigestUpdate(ctx.get(), buffer->data(), static_cast<size_t>(buffer->size())) != 1)
      return Status::IOError(path + ": SHA-256 digest failed (OpenSSL)");
    out.size += static_cast<uint64_t>(buffer->size());
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(ctx.get(), md, &n) != 1) return Status::IOError(path + ": SHA-256 digest failed (OpenSSL)");
  out.sha256 = HexOf(md, n);
  return out;
}

Result<std::vector<FileDigest>> DigestFileGroup(const Task& task, const EpisodeEntry& e) {
  std::vector<std::pair<std::string, std::string>> files;  // role, path
  if (!e.data_path.empty()) files.emplace_back("data", e.data_path);
  if (e.row_source == RowSource::kEpisodeFile) files.emplace_back("episodes_row", e.row_path);
  for (const auto& [key, rel] : e.videos) files.emplace_back("video/" + key, rel);
  std::vector<FileDigest> out;
  for (const auto& [role, rel] : files) {
    REEL_ASSIGN_OR_RETURN(FileDigest d, DigestFile(task.fs(), task.root(), rel, role));
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace reel
