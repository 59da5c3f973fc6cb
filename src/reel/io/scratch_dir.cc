#include "io/scratch_dir.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <map>
#include <mutex>
#include <string>

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
// crashed): "<prefix>-<pid>-XXXXXX" whose pid is gone and that nothing touched for ten
// minutes (a process of another pid namespace sharing the directory looks gone too), or
// one of the older unnumbered "<prefix>-XXXXXX" untouched for a day.
bool IsStale(FileSystem* fs, const std::string& base, const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() + 1 || name.compare(0, prefix.size() + 1, prefix + "-") != 0) return false;
  const std::string rest = name.substr(prefix.size() + 1);
  const size_t dash = rest.find('-');
  const std::string path = JoinPath(base, name);
  if (dash != std::string::npos && dash > 0 && dash <= 9 &&
      rest.find_first_not_of("0123456789") == dash) {
    const pid_t pid = static_cast<pid_t>(std::stol(rest.substr(0, dash)));
    const bool gone = pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH;
    return gone && UntouchedFor(fs, path, std::chrono::minutes(10));
  }
  if (rest.size() != 6 || dash != std::string::npos) return false;
  return UntouchedFor(fs, path, std::chrono::hours(24));
}

// Removes the stale siblings of a new scratch directory. Best effort, bounded: the parent
// is a shared temp directory that may hold anything.
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
  const std::string stem = JoinPath(base, prefix + "-" + std::to_string(::getpid()) + "-");
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
