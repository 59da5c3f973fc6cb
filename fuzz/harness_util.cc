#include "harness_util.h"

#include <arrow/api.h>
#include <arrow/buffer.h>
#include <arrow/io/memory.h>
#include <unistd.h>

#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "io/parquet_io.h"
#include "reel/layout.h"
#include "reel/metadata.h"
#include "write/task_files.h"

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

static bool SafeRelativePath(const std::string& rel) {
  return !rel.empty() && rel[0] != '/' && rel.find("..") == std::string::npos && rel.find('\0') == std::string::npos;
}

int UnpackTreeToDisk(const uint8_t* data, size_t size, const std::string& root) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(root, ec);
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  int files = 0;
  for (int parts = 0; parts < 32; ++parts) {
    const size_t at = rest.find(kPartSeparator);
    std::string_view part = rest.substr(0, at);
    const size_t nl = part.find('\n');
    if (nl != std::string_view::npos && nl > 0 && nl < 256 && SafeRelativePath(std::string(part.substr(0, nl)))) {
      const fs::path path = fs::path(root) / std::string(part.substr(0, nl));
      fs::create_directories(path.parent_path(), ec);
      if (!ec && !fs::is_directory(path, ec)) {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        const std::string_view bytes = part.substr(nl + 1);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        files += out.good() ? 1 : 0;
      }
      ec.clear();
    }
    if (at == std::string_view::npos) break;
    rest.remove_prefix(at + kPartSeparator.size());
  }
  return files;
}

std::map<std::string, std::string> Snapshot(const std::string& dir) {
  namespace fs = std::filesystem;
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const std::string rel = fs::relative(it->path(), dir, ec).string();
    if (it->is_symlink(ec)) {
      out[rel] = "@" + fs::read_symlink(it->path(), ec).string();
    } else if (it->is_directory(ec)) {
      out[rel] = "/";
    } else {
      std::ifstream in(it->path(), std::ios::binary);
      out[rel] = std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  }
  return out;
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

const std::string* MemFs::Get(const std::string& path) const {
  auto it = files_.find(Norm(path));
  return it == files_.end() ? nullptr : &it->second;
}

Result<FileInfo> MemFs::Stat(const std::string& raw) {
  const std::string path = Norm(raw);
  FileInfo info;
  if (auto it = files_.find(path); it != files_.end()) {
    info.type = FileType::kFile;
    info.size = it->second.size();
    info.mtime_ns = mtime_ns_;
    return info;
  }
  const std::string prefix = path + "/";
  auto it = files_.lower_bound(prefix);
  if (it != files_.end() && it->first.starts_with(prefix)) {
    info.type = FileType::kDirectory;
    info.mtime_ns = mtime_ns_;
  }
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

namespace {

// Buffers what is written; the file appears (whole) in the MemFs on Close.
class MemWritable final : public WritableFile {
 public:
  MemWritable(MemFs* fs, std::string path) : fs_(fs), path_(std::move(path)) {}
  Status Append(std::string_view data) override {
    bytes_.append(data);
    return Status::OK();
  }
  Status WriteAt(uint64_t offset, std::string_view data) override {
    if (offset > bytes_.size() || data.size() > bytes_.size() - offset)
      return Status::Invalid(path_ + ": WriteAt past the end");
    bytes_.replace(offset, data.size(), data);
    return Status::OK();
  }
  Status Sync() override { return Status::OK(); }
  Status Close() override {
    fs_->Put(path_, bytes_);
    return Status::OK();
  }

 private:
  MemFs* fs_;
  std::string path_;
  std::string bytes_;
};

}  // namespace

Result<std::unique_ptr<WritableFile>> MemFs::NewWritableFile(const std::string& path) {
  if (!writable_) return Status::PermissionDenied(path + ": the fuzzing file system is read-only");
  return std::unique_ptr<WritableFile>(std::make_unique<MemWritable>(this, path));
}
Status MemFs::Rename(const std::string& from, const std::string& to) {
  if (!writable_) return Status::PermissionDenied(from + ": read-only");
  auto it = files_.find(Norm(from));
  if (it == files_.end()) return Status::NotFound(from + ": no such file");
  std::string bytes = std::move(it->second);
  files_.erase(it);
  files_[Norm(to)] = std::move(bytes);
  return Status::OK();
}
Status MemFs::SyncDir(const std::string&) { return Status::OK(); }
Status MemFs::RemoveFile(const std::string& path) {
  if (!writable_) return Status::PermissionDenied(path + ": read-only");
  return files_.erase(Norm(path)) ? Status::OK() : Status::NotFound(path + ": no such file");
}
Status MemFs::RemoveDir(const std::string& path) {
  if (!writable_) return Status::PermissionDenied(path + ": read-only");
  const std::string prefix = Norm(path) + "/";
  auto it = files_.lower_bound(prefix);
  if (it != files_.end() && it->first.starts_with(prefix)) return Status::IOError(path + ": not empty");
  return Status::OK();
}
Status MemFs::CreateDirs(const std::string& path) {
  if (!writable_) return Status::PermissionDenied(path + ": read-only");
  return Status::OK();
}

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

void PutSmallTask(MemFs& fs, const std::string& root, int episodes, int frames) {
  InfoJson info;
  info.format = "pooled_episodes_v1";
  info.codebase_version = "v3.0";
  info.task_name = "fuzz_task";
  info.total_episodes = episodes;
  auto info_text = SerializeInfoJson(info);
  if (!info_text.ok()) {
    fprintf(stderr, "PutSmallTask: %s\n", info_text.status().ToString().c_str());
    std::abort();
  }
  fs.Put(root + "/meta/info.json", *info_text);
  fs.Put(root + "/meta/tasks.jsonl", "{\"task_index\": 0, \"task\": \"fuzz_task\"}\n");
  for (int n = 1; n <= episodes; ++n) {
    arrow::Int64Builder episode, frame, task;
    arrow::FloatBuilder timestamp;
    for (int f = 0; f < frames; ++f) {
      (void)episode.Append(n);
      (void)frame.Append(f);
      (void)timestamp.Append(static_cast<float>(f) / 30.0f);
      (void)task.Append(0);
    }
    auto schema = arrow::schema({arrow::field("episode_index", arrow::int64()), arrow::field("frame_index", arrow::int64()),
                                 arrow::field("timestamp", arrow::float32()), arrow::field("task_index", arrow::int64())});
    auto table = arrow::Table::Make(schema, {episode.Finish().ValueOrDie(), frame.Finish().ValueOrDie(),
                                             timestamp.Finish().ValueOrDie(), task.Finish().ValueOrDie()});
    const EpisodeLocation loc = LocateEpisode(n, info.chunks_size);
    const PathVars vars{loc.chunk, loc.file, n, std::nullopt, std::nullopt};
    const std::string data_rel = *PathTemplate::Parse(info.data_path)->Render(vars);
    const std::string row_rel = *PathTemplate::Parse(info.episodes_path)->Render(vars);
    Status st = internal::WriteParquet(&fs, root + "/" + data_rel, *table);
    EpisodeRow row;
    row.episode_index = n;
    row.length = frames;
    row.end_frame_index = frames - 1;
    row.created_at = 1.6e9 + n;
    row.duration_sec = frames / 30.0;
    if (st.ok()) st = internal::WriteEpisodeRow(&fs, root + "/" + row_rel, row);
    if (!st.ok()) {
      fprintf(stderr, "PutSmallTask: %s\n", st.ToString().c_str());
      std::abort();
    }
  }
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
