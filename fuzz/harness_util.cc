#include "harness_util.h"

#include <arrow/buffer.h>
#include <arrow/io/memory.h>
#include <unistd.h>

#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

namespace reel::fuzz {

std::vector<std::string_view> SplitParts(const uint8_t* data, size_t size, size_t n) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < n) {
    size_t at = rest.find(kPartSeparator);
    if (at == std::string_view::npos) break;
    parts.push_back(rest.substr(0, at));
    rest.remove_prefix(at + kPartSeparator.size());
  }
  parts.push_back(rest);
  while (parts.size() < n) parts.emplace_back();
  return parts;
}

int UnpackTree(const uint8_t* data, size_t size, const std::string& root, MemFs& fs) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  int files = 0;
  while (files < 32) {
    const size_t at = rest.find(kPartSeparator);
    std::string_view part = rest.substr(0, at);
    const size_t nl = part.find('\n');
    if (nl != std::string_view::npos && nl > 0 && nl < 256) {
      const std::string rel(part.substr(0, nl));
      if (rel[0] != '/' && rel.find("..") == std::string::npos && rel.find('\0') == std::string::npos) {
        fs.Put(root + "/" + rel, part.substr(nl + 1));
        ++files;
      }
    }
    if (at == std::string_view::npos) break;
    rest.remove_prefix(at + kPartSeparator.size());
  }
  return files;
}

// Arrow allocates through the system allocator, so that ASan sees (and bounds) the
// buffers reel reads from: a read past an Arrow array is then a report, not silence.
static const bool kArrowSystemPool = [] {
  setenv("ARROW_DEFAULT_MEMORY_POOL", "system", /*overwrite=*/0);
  return true;
}();

// ---- MemFs ------------------------------------------------------------------------
std::string MemFs::Norm(const std::string& path) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '/' && !out.empty() && out.back() == '/') continue;
    out.push_back(path[i]);
  }
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  // "a/./b" -> "a/b"
  for (size_t at; (at = out.find("/./")) != std::string::npos;) out.erase(at, 2);
  if (out.size() >= 2 && out.ends_with("/.")) out.resize(out.size() - 2);
  return out;
}

void MemFs::Put(const std::string& path, std::string_view bytes) { files_[Norm(path)] = std::string(bytes); }

Result<FileInfo> MemFs::Stat(const std::string& raw) {
  const std::string path = Norm(raw);
  FileInfo info;
  if (auto it = files_.find(path); it != files_.end()) {
    info.type = FileType::kFile;
    info.size = it->second.size();
    return info;
  }
  const std::string prefix = path + "/";
  auto it = files_.lower_bound(prefix);
  if (it != files_.end() && it->first.starts_with(prefix)) info.type = FileType::kDirectory;
  return info;
}

Result<std::vector<DirEntry>> MemFs::ListDir(const std::string& raw) {
  const std::string path = Norm(raw);
  const std::string prefix = path + "/";
  std::map<std::string, FileType> names;
  for (auto it = files_.lower_bound(prefix); it != files_.end() && it->first.starts_with(prefix); ++it) {
    std::string rest = it->first.substr(prefix.size());
    size_t slash = rest.find('/');
    if (slash == std::string::npos)
      names.emplace(rest, FileType::kFile);
    else
      names[rest.substr(0, slash)] = FileType::kDirectory;
  }
  if (names.empty()) {
    if (files_.count(path)) return Status::IOError(path + ": not a directory");
    return Status::NotFound(path + ": no such directory");
  }
  std::vector<DirEntry> out;
  for (auto& [name, type] : names) out.push_back({name, type});
  return out;
}

Result<std::string> MemFs::ReadFile(const std::string& raw) {
  auto it = files_.find(Norm(raw));
  if (it == files_.end()) return Status::NotFound(raw + ": no such file");
  return it->second;
}

Result<std::shared_ptr<arrow::io::RandomAccessFile>> MemFs::OpenRandomAccess(const std::string& raw) {
  auto it = files_.find(Norm(raw));
  if (it == files_.end()) return Status::NotFound(raw + ": no such file");
  // A copy the reader owns: the file may be Put() again while a reader is open.
  auto owned = arrow::Buffer::FromString(it->second);
  return std::shared_ptr<arrow::io::RandomAccessFile>(std::make_shared<arrow::io::BufferReader>(owned));
}

Result<std::unique_ptr<WritableFile>> MemFs::NewWritableFile(const std::string& path) {
  return Status::PermissionDenied(path + ": the fuzzing file system is read-only");
}
Status MemFs::Rename(const std::string& from, const std::string&) {
  return Status::PermissionDenied(from + ": read-only");
}
Status MemFs::SyncDir(const std::string&) { return Status::OK(); }
Status MemFs::RemoveFile(const std::string& path) { return Status::PermissionDenied(path + ": read-only"); }
Status MemFs::CreateDirs(const std::string& path) { return Status::PermissionDenied(path + ": read-only"); }

// ---- TempDir ----------------------------------------------------------------------
TempDir& TempDir::Get() {
  static TempDir dir;
  return dir;
}

TempDir::TempDir() {
  // $REEL_FUZZ_TMP (fuzz/run_campaign.sh sets one per campaign and removes it after, so
  // the directories of children killed by a crash do not pile up), else /dev/shm, else $TMPDIR.
  std::string base;
  if (const char* env = getenv("REEL_FUZZ_TMP"); env && *env) {
    base = env;
    std::error_code ec;
    std::filesystem::create_directories(base, ec);
  } else if (access("/dev/shm", W_OK) == 0) {
    base = "/dev/shm";
  } else {
    base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  }
  std::string tmpl = base + "/reel-fuzz-XXXXXX";
  if (!mkdtemp(tmpl.data())) {
    std::perror("reel fuzz: mkdtemp");
    std::abort();
  }
  path_ = tmpl;
}

TempDir::~TempDir() { RemoveTree(path_); }

std::string TempDir::Write(const std::string& name, std::string_view bytes) {
  const std::string path = path_ + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

void TempDir::Clean() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(path_, ec))
    std::filesystem::remove_all(entry.path(), ec);
}

bool Debug() {
  static const bool on = getenv("REEL_FUZZ_DEBUG") != nullptr;
  return on;
}

void RemoveTree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

}  // namespace reel::fuzz
