#include "io/scratch_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

namespace reel::internal {

Result<std::unique_ptr<ScratchDir>> ScratchDir::Create(const std::string& prefix, const std::string& parent,
                                                     FileSystem* fs) {
  std::error_code ec;
  std::filesystem::path base = parent;
  if (parent.empty()) {
    base = std::filesystem::temp_directory_path(ec);
    if (ec) base = "/tmp";
  } else {
    REEL_RETURN_IF_ERROR((fs ? fs : DefaultFileSystem())->CreateDirs(parent));
  }
  std::string pattern = (base / (prefix + "-XXXXXX")).string();
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr)
    return Status::IOError(pattern + ": cannot create a scratch directory: " + std::strerror(errno));
  return std::unique_ptr<ScratchDir>(new ScratchDir(buf.data()));
}

ScratchDir::~ScratchDir() {
  // Best effort: the scratch holds only copies, so a leftover is garbage, not loss.
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace reel::internal
