// Internal: a private scratch directory for files that are copies or work in progress
// (a pack's single-row slice and re-encoded videos, the upload client's packed slice, the
// import server's staged slice). Removed with everything in it when the owner goes out
// of scope: best effort, since it holds nothing that is not also somewhere else.
// Every disk operation goes through a FileSystem (CreateUniqueDir, ListDir, Stat's
// mtime, RemoveAll); the FileSystem must outlive the ScratchDir.
#pragma once

#include <memory>
#include <string>

#include "reel/fs.h"
#include "reel/status.h"

namespace reel::internal {

class ScratchDir {
 public:
  // A new "<parent>/<prefix>-<host>-<pid>-XXXXXX" (fs->CreateUniqueDir; null fs =
  // DefaultFileSystem(); <host> is io/temp_name.h's HostId()). `parent` empty = $TMPDIR
  // (or /tmp); otherwise it is created first (CreateDirs).
  // First removes what killed owners left: this host's "<prefix>-<host>-<pid>-*" (and an
  // earlier version's "<prefix>-<pid>-*") whose process is gone and that nothing touched
  // for ten minutes; another host's, and unnumbered "<prefix>-XXXXXX" from older
  // versions, untouched for a day.
  // Errors: IOError naming the template when the directory cannot be created.
  static Result<std::unique_ptr<ScratchDir>> Create(const std::string& prefix, const std::string& parent = "",
                                                    FileSystem* fs = nullptr);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  ScratchDir(std::string path, FileSystem* fs) : path_(std::move(path)), fs_(fs) {}
  std::string path_;
  FileSystem* fs_;
};

// A scratch file outside a ScratchDir (pack's zip temp beside its output) that
// RemoveOpenScratchDirs (reel/fs.h) removes too while held. Release it once it was
// renamed into place or removed. `fs` (null = DefaultFileSystem()) removes it and must
// outlive the hold.
void HoldScratchPath(const std::string& path, FileSystem* fs = nullptr);
void ReleaseScratchPath(const std::string& path);

}  // namespace reel::internal
