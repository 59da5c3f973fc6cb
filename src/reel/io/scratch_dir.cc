#include "io/scratch_dir.h"

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <mutex>
#include <string>

#include "io/temp_name.h"

namespace reel::internal {

namespace {

// The scratch paths alive in this process and the file system each lives on, for
// RemoveOpenScratchDirs.
std::mutex& OpenMutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, FileSystem*>& OpenDirs() {
  static std::map<std::string, FileSystem*> dirs;
  return dirs;
}

// True when `path` has not been modified for `age` (false when its time is unknown).
bool UntouchedFor(FileSystem* fs, const std::string& path, std::chrono::minutes age) {
  auto info = fs->Stat(path);
  if (!info.ok() || info->mtime_ns == 0) return false;
  const auto mtime = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(info->mtime_ns)));
  return std::chrono::system_clock::now() - mtime > age;
}

// A scratch directory left behind by a process that did not get to remove it (killed,
// crashed):
//   "<prefix>-<host>-<pid>-XXXXXX" of this host, or an earlier version's
//   "<prefix>-<pid>-XXXXXX": its pid is gone here and nothing touched it for ten minutes;
//   "<prefix>-<host>-<pid>-XXXXXX" of another host (a work directory on NFS, a $TMPDIR
//   shared with another container): untouched for a day, its pid means nothing here
//   (io/temp_name.h);
//   the oldest unnumbered "<prefix>-XXXXXX": untouched for a day.
bool IsStale(FileSystem* fs, const std::string& base, const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() + 1 || name.compare(0, prefix.size() + 1, prefix + "-") != 0) return false;
  const std::string rest = name.substr(prefix.size() + 1);
  const std::string path = JoinPath(base, name);
  const TempWriter writer = ReadTempWriter(rest);
  switch (writer.kind) {
    case TempWriter::Kind::kThisHost:
    case TempWriter::Kind::kOldFormat:
      return PidGone(writer.pid) && UntouchedFor(fs, path, std::chrono::minutes(10));
    case TempWriter::Kind::kOtherHost:
      return UntouchedFor(fs, path, std::chrono::hours(24));
    case TempWriter::Kind::kUnknown:
      break;
  }
  if (rest.size() != 6 || rest.find('-') != std::string::npos) return false;
  return UntouchedFor(fs, path, std::chrono::hours(24));
}

// Removes the stale siblings of a new scratch directory. Best effort, bounded: the parent
// is a shared temp directory that may hold anything. A listing error skips the sweep: it
// only removes garbage, so skipping it leaves garbage, never a wrong answer, and a $TMPDIR
// that may be written but not listed (mode 1733) must still take scratch directories.
void SweepStale(FileSystem* fs, const std::string& base, const std::string& prefix) {
  auto entries = fs->ListDir(base);
  if (!entries.ok()) return;
  int seen = 0;
  for (const DirEntry& e : *entries) {
    if (++seen > 10000) break;
    if (e.type != FileType::kDirectory || e.symlink || !IsStale(fs, base, e.name, prefix)) continue;
    (void)RemoveAll(fs, JoinPath(base, e.name));
  }
}

}  // namespace

Result<std::unique_ptr<ScratchDir>> ScratchDir::Create(const std::string& prefix, const std::string& parent,
                                                     FileSystem* fs) {
  if (fs == nullptr) fs = DefaultFileSystem();
  std::string base = parent;
  if (parent.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  } else {
    REEL_RETURN_IF_ERROR(fs->CreateDirs(parent));
  }
  SweepStale(fs, base, prefix);
  const std::string stem = JoinPath(base, prefix + "-" + HostId() + "-" + std::to_string(::getpid()) + "-");
  auto made = fs->CreateUniqueDir(stem);
  if (!made.ok())
    return Status::IOError(stem + "XXXXXX: cannot create a scratch directory: " + made.status().message());
  HoldScratchPath(*made, fs);
  return std::unique_ptr<ScratchDir>(new ScratchDir(*made, fs));
}

ScratchDir::~ScratchDir() {
  // Best effort: the scratch holds only copies, so a leftover is garbage, not loss.
  (void)RemoveAll(fs_, path_);
  ReleaseScratchPath(path_);
}

void HoldScratchPath(const std::string& path, FileSystem* fs) {
  std::lock_guard<std::mutex> lock(OpenMutex());
  OpenDirs()[path] = fs ? fs : DefaultFileSystem();
}

void ReleaseScratchPath(const std::string& path) {
  std::lock_guard<std::mutex> lock(OpenMutex());
  OpenDirs().erase(path);
}

}  // namespace reel::internal

namespace reel {

int RemoveOpenScratchDirs() {
  std::lock_guard<std::mutex> lock(internal::OpenMutex());
  int removed = 0;
  // In reverse order: one nested in another goes first, and is counted.
  for (auto it = internal::OpenDirs().rbegin(); it != internal::OpenDirs().rend(); ++it) {
    bool gone = false;
    (void)RemoveAll(it->second, it->first, &gone);
    removed += gone;
  }
  return removed;
}

}  // namespace reel
