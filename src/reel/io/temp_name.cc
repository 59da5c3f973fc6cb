#include "io/temp_name.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <vector>

#include "reel/fs.h"

namespace reel::internal {

namespace {

// FNV-1a, 64 bits: stable across builds and platforms (std::hash is not).
uint64_t Fnv1a(std::string_view bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string ComputeHostId() {
  char host[256] = {0};
  (void)::gethostname(host, sizeof host - 1);
  // The pid namespace's inode (not a disk read: the kernel's name for the namespace); 0
  // where /proc is not mounted, which leaves the host name alone to decide.
  struct stat ns;
  const uint64_t pid_ns = ::stat("/proc/self/ns/pid", &ns) == 0 ? static_cast<uint64_t>(ns.st_ino) : 0;
  const uint64_t h = Fnv1a(std::string(host) + '\n' + std::to_string(pid_ns));
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>((h >> 32) ^ (h & 0xffffffffu)));
  return hex;
}

bool AllOf(std::string_view s, std::string_view chars) {
  return !s.empty() && s.find_first_not_of(chars) == std::string_view::npos;
}

}  // namespace

const std::string& HostId() {
  static const std::string id = ComputeHostId();
  return id;
}

std::string UniqueWriterTag() {
  static std::atomic<uint64_t> counter{0};
  return HostId() + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

TempWriter ReadTempWriter(std::string_view fields) {
  std::vector<std::string_view> parts;
  for (size_t at = 0;;) {
    const size_t dash = fields.find('-', at);
    parts.push_back(fields.substr(at, dash == std::string_view::npos ? std::string_view::npos : dash - at));
    if (dash == std::string_view::npos) break;
    at = dash + 1;
  }
  constexpr std::string_view kDigits = "0123456789";
  // A pid of at most 9 digits (pid_max is at most 2^22 on Linux): no overflow, never 0.
  const auto pid_of = [&](std::string_view p) -> int64_t {
    if (!AllOf(p, kDigits) || p.size() > 9) return 0;
    return std::stoll(std::string(p));
  };
  TempWriter w;
  if (parts.size() == 3 && parts[0].size() == 8 && AllOf(parts[0], "0123456789abcdef") && !parts[2].empty()) {
    w.pid = pid_of(parts[1]);
    if (w.pid > 0) w.kind = parts[0] == HostId() ? TempWriter::Kind::kThisHost : TempWriter::Kind::kOtherHost;
  } else if (parts.size() == 2 && !parts[1].empty()) {
    w.pid = pid_of(parts[0]);
    if (w.pid > 0) w.kind = TempWriter::Kind::kOldFormat;
  }
  if (w.kind == TempWriter::Kind::kUnknown) w.pid = 0;
  return w;
}

bool PidGone(int64_t pid) {
  return pid > 0 && pid != ::getpid() && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

bool TempWriterGone(const TempWriter& writer, int64_t mtime_ns, int64_t now_ns) {
  const auto untouched_for = [&](int64_t age_ns) { return mtime_ns != 0 && now_ns - mtime_ns > age_ns; };
  switch (writer.kind) {
    case TempWriter::Kind::kThisHost:
      return PidGone(writer.pid);
    case TempWriter::Kind::kOldFormat:
      return (PidGone(writer.pid) && untouched_for(kOldFormatGraceNs)) || untouched_for(kForeignTempAgeNs);
    case TempWriter::Kind::kOtherHost:
    case TempWriter::Kind::kUnknown:
      return untouched_for(kForeignTempAgeNs);
  }
  return false;
}

int64_t UnixNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string TempPathFor(const std::string& final_path, const std::string& tag) {
  return JoinPath(DirName(final_path), "." + BaseName(final_path) + "." + tag + ".reel-" + UniqueWriterTag() + ".tmp");
}

}  // namespace reel::internal
