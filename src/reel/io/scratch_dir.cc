#include "io/scratch_dir.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <system_error>
#include <vector>

namespace reel::internal {

namespace {

// The scratch directories alive in this process, for RemoveOpenScratchDirs.
std::mutex& OpenMutex() {
  static std::mutex m;
  return m;
}
std::set<std::string>& OpenDirs() {
  static std::set<std::string> dirs;
  return dirs;
}

// True when `path` has not been modified for `age`.
bool UntouchedFor(const std::filesystem::path& path, std::chrono::minutes age) {
  std::error_code ec;
  const auto mtime = std::filesystem::last_write_time(path, ec);
  return !ec && std::filesystem::file_time_type::clock::now() - mtime > age;
}

// A scratch directory left behind by a process that did not get to remove it (killed,
// crashed): "<prefix>-<pid>-XXXXXX" whose pid is gone and that nothing touched for ten
// minutes (a process of another pid namespace sharing the directory looks gone too), or
// one of the older unnumbered "<prefix>-XXXXXX" untouched for a day.
bool IsStale(const std::filesystem::directory_entry& entry, const std::string& prefix) {
  const std::string name = entry.path().filename().string();
  if (name.size() <= prefix.size() + 1 || name.compare(0, prefix.size() + 1, prefix + "-") != 0) return false;
  const std::string rest = name.substr(prefix.size() + 1);
  const size_t dash = rest.find('-');
  if (dash != std::string::npos && dash > 0 && dash <= 9 &&
      rest.find_first_not_of("0123456789") == dash) {
    const pid_t pid = static_cast<pid_t>(std::stol(rest.substr(0, dash)));
    const bool gone = pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH;
    return gone && UntouchedFor(entry.path(), std::chrono::minutes(10));
  }
  if (rest.size() != 6 || dash != std::string::npos) return false;
  return UntouchedFor(entry.path(), std::chrono::hours(24));
}

// Removes the stale siblings of a new scratch directory. Best effort, bounded: the parent
// is a shared temp directory that may hold anything.
void SweepStale(const std::filesystem::path& base, const std::string& prefix) {
  std::error_code ec;
  std::filesystem::directory_iterator it(base, ec), end;
  for (int seen = 0; !ec && it != end && seen < 10000; it.increment(ec), ++seen) {
    std::error_code type_ec;
    if (!it->is_directory(type_ec) || it->is_symlink(type_ec) || !IsStale(*it, prefix)) continue;
    std::error_code rm_ec;
    std::filesystem::remove_all(it->path(), rm_ec);
  }
}

}  // namespace

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
  SweepStale(base, prefix);
  std::string pattern = (base / (prefix + "-" + std::to_string(::getpid()) + "-XXXXXX")).string();
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr)
    return Status::IOError(pattern + ": cannot create a scratch directory: " + std::strerror(errno));
  HoldScratchPath(buf.data());
  return std::unique_ptr<ScratchDir>(new ScratchDir(buf.data()));
}

ScratchDir::~ScratchDir() {
  // Best effort: the scratch holds only copies, so a leftover is garbage, not loss.
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
  ReleaseScratchPath(path_);
}

void HoldScratchPath(const std::string& path) {
  std::lock_guard<std::mutex> lock(OpenMutex());
  OpenDirs().insert(path);
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
    std::error_code ec;
    removed += std::filesystem::remove_all(*it, ec) > 0;
  }
  return removed;
}

}  // namespace reel
