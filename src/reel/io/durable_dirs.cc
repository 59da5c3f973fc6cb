#include "io/durable_dirs.h"

#include <vector>

namespace reel::internal {

Status CreateDirsDurable(FileSystem* fs, const std::string& path) {
  // The directories missing now, deepest first: the walk stops at the first that exists.
  std::vector<std::string> missing;
  for (std::string at = path; !at.empty() && at != "/" && at != "."; at = DirName(at)) {
    REEL_ASSIGN_OR_RETURN(FileInfo st, fs->Stat(at));
    if (st.type != FileType::kNotFound) break;
    missing.push_back(at);
  }
  REEL_RETURN_IF_ERROR(fs->CreateDirs(path));
  for (const std::string& dir : missing) REEL_RETURN_IF_ERROR(fs->SyncDir(DirName(dir)));
  return Status::OK();
}

}  // namespace reel::internal
