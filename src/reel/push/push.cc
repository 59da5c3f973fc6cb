// PushTask (reel/push.h): the object-storage publishing protocol of docs/storage.md.
#include "reel/push.h"

#include <arrow/buffer.h>
#include <arrow/io/interfaces.h>
#include <arrow/result.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include <chrono>
#include <ctime>
#include <map>
#include <random>
#include <set>

#include "io/same_bytes.h"
#include "layout/journal.h"
#include "reel/task.h"
#include "util/json_util.h"

namespace reel {
namespace {

using internal::Json;

constexpr const char* kLockRel = "meta/.push-lock.json";
constexpr int64_t kCopyChunk = int64_t{8} << 20;  // 8 MiB per read/append

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string IsoUtc(double seconds) {
  const std::time_t t = static_cast<std::time_t>(seconds);
  char buf[32];
  std::tm tm{};
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
  return buf;
}

// ---- the push lock --------------------------------------------------------------------------
//
// Object stores offer no flock and arrow::fs no conditional PUT, so the lock is a lease
// object: refused while another holder's lease is live, taken over once it expired, and
// read back after writing so that of two pushes racing for it at most the last writer
// goes on (docs/storage.md "One writer").

class PushLock {
 public:
  static Result<std::unique_ptr<PushLock>> Acquire(FileSystem* fs, const std::string& root, double lease_s) {
    std::unique_ptr<PushLock> lock(new PushLock(fs, JoinPath(root, kLockRel), lease_s));
    REEL_RETURN_IF_ERROR(lock->CheckFree());
    REEL_RETURN_IF_ERROR(lock->Write());
    REEL_ASSIGN_OR_RETURN(Json back, lock->Read());
    if (back.value("holder", "") != lock->holder_)
      return Status::AlreadyExists(lock->path_ + ": another push took the lock at the same moment (" +
                                   back.value("holder", "?") + "); one writer per task");
    lock->held_ = true;
    return lock;
  }
  // Releases the lock, only when this push holds it (never another writer's).
  ~PushLock() {
    if (held_) (void)fs_->RemoveFile(path_);
  }

  // Renews the lease when half of it has passed.
  Status Renew() { return Now() - written_at_ > lease_s_ / 2 ? Write() : Status::OK(); }

 private:
  PushLock(FileSystem* fs, std::string path, double lease_s) : fs_(fs), path_(std::move(path)), lease_s_(lease_s) {
    char host[256] = {0};
    (void)::gethostname(host, sizeof host - 1);
    holder_ = std::string(host) + ":" + std::to_string(::getpid()) + ":" + std::to_string(std::random_device{}());
  }

  Result<Json> Read() {
    REEL_ASSIGN_OR_RETURN(std::string text, fs_->ReadFile(path_));
    REEL_ASSIGN_OR_RETURN(Json doc, internal::ParseJson(text, path_, {.max_bytes = 64 << 10, .max_depth = 4}));
    if (!doc.is_object()) return Status::Invalid(path_ + ": the push lock is not a JSON object");
    return doc;
  }

  Status CheckFree() {
    REEL_ASSIGN_OR_RETURN(FileInfo st, fs_->Stat(path_));
    if (st.type == FileType::kNotFound) return Status::OK();
    auto doc = Read();
    if (!doc.ok()) return Status::OK();  // unreadable: a lock that was never completed
    const double expires = doc->value("expires_at", 0.0);
    if (expires > Now() && !HolderIsGone(doc->value("holder", "")))
      return Status::AlreadyExists(path_ + ": the task is being pushed by " + doc->value("holder", "?") +
                                   " (its lease runs until " + IsoUtc(expires) + "); one writer per task");
    return Status::OK();  // an expired lease: its writer died
  }

  // A holder on this host whose process is gone (killed): its lease is void.
  static bool HolderIsGone(const std::string& holder) {
    char host[256] = {0};
    (void)::gethostname(host, sizeof host - 1);
    const std::string mine = std::string(host) + ":";
    if (!holder.starts_with(mine)) return false;
    const pid_t pid = static_cast<pid_t>(std::atoll(holder.c_str() + mine.size()));
    return pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH;
  }

  Status Write() {
    written_at_ = Now();
    Json doc = {{"holder", holder_}, {"written_at", written_at_}, {"expires_at", written_at_ + lease_s_}};
    return WriteFileSynced(fs_, path_, internal::Dump(doc, -1));
  }

  FileSystem* fs_;
  std::string path_, holder_;
  double lease_s_ = 600, written_at_ = 0;
  bool held_ = false;  // written and read back as ours
};

// ---- copying files ------------------------------------------------------------------------

// Copies `from` (local) to `to` (destination) in chunks; the destination object appears
// when the file is closed.
Status CopyFile(FileSystem* local, const std::string& from, FileSystem* dest, const std::string& to,
                int64_t* bytes) {
  REEL_ASSIGN_OR_RETURN(auto in, local->OpenRandomAccess(from));
  auto size = in->GetSize();
  if (!size.ok()) return Status::IOError(from + ": " + size.status().ToString());
  REEL_RETURN_IF_ERROR(dest->CreateDirs(DirName(to)));
  REEL_ASSIGN_OR_RETURN(auto out, dest->NewWritableFile(to));
  for (int64_t at = 0; at < *size; at += kCopyChunk) {
    auto chunk = in->ReadAt(at, std::min(kCopyChunk, *size - at));
    if (!chunk.ok()) return Status::IOError(from + ": " + chunk.status().ToString());
    REEL_RETURN_IF_ERROR(out->Append(std::string_view(reinterpret_cast<const char*>((*chunk)->data()),
                                                      static_cast<size_t>((*chunk)->size()))));
  }
  REEL_RETURN_IF_ERROR(out->Sync());
  REEL_RETURN_IF_ERROR(out->Close());
  *bytes += *size;
  return Status::OK();
}

// ---- the plan ------------------------------------------------------------------------------

struct Pusher {
  const std::string& task_root;
  FileSystem* local;
  FileSystem* dest;
  const std::string& dest_root;
  const PushOptions& options;
  PushReport report;

  // True when the destination holds `rel` whole: same size (and bytes with verify).
  Result<bool> Present(const std::string& rel) {
    if (options.verify) return internal::SameBytesAcross(local, JoinPath(task_root, rel), dest, JoinPath(dest_root, rel));
    REEL_ASSIGN_OR_RETURN(FileInfo there, dest->Stat(JoinPath(dest_root, rel)));
    if (there.type != FileType::kFile) return false;
    REEL_ASSIGN_OR_RETURN(FileInfo here, local->Stat(JoinPath(task_root, rel)));
    return here.size == there.size;
  }

  Status Send(const std::string& rel) {
    ++report.files_sent;
    if (options.dry_run) return Status::OK();
    return CopyFile(local, JoinPath(task_root, rel), dest, JoinPath(dest_root, rel), &report.bytes_sent);
  }

  // Episode N's own files in publishing order: videos, data, then the episodes row (a
  // legacy shard serves several episodes and goes with the task files).
  static std::vector<std::string> EpisodeFiles(const EpisodeEntry& e) {
    std::vector<std::string> files;
    for (const auto& [slot, path] : e.videos) files.push_back(path);
    if (!e.data_path.empty()) files.push_back(e.data_path);
    if (e.row_source == RowSource::kEpisodeFile) files.push_back(e.row_path);
    return files;
  }

  Status PushEpisode(const EpisodeEntry& e, const std::set<int64_t>& interrupted) {
    const std::vector<std::string> files = EpisodeFiles(e);
    std::vector<std::string> missing;
    for (const std::string& rel : files) {
      REEL_ASSIGN_OR_RETURN(bool present, Present(rel));
      if (!present) missing.push_back(rel);
    }
    const bool resumed = interrupted.count(e.episode_index) > 0;
    if (missing.empty() && !resumed) {
      ++report.present;
      return Status::OK();
    }
    report.sent.push_back(e.episode_index);
    if (resumed) report.resumed.push_back(e.episode_index);
    if (options.dry_run) {
      report.files_sent += static_cast<int64_t>(missing.size());
      return Status::OK();
    }
    // The journal first: from here until it is deleted, readers hide N.
    const std::string journal = internal::PushJournalPath(dest_root, e.episode_index);
    Json doc = {{"episode_index", e.episode_index}, {"files", files}, {"written_at", Now()}};
    REEL_RETURN_IF_ERROR(WriteFileSynced(dest, journal, internal::Dump(doc, -1)));
    for (const std::string& rel : missing) REEL_RETURN_IF_ERROR(Send(rel));
    return dest->RemoveFile(journal);
  }

  // Shards, then tasks.jsonl, info.json, stats.json: each replaced whole when it differs.
  Status PushTaskFiles(const std::vector<EpisodeEntry>& episodes) {
    std::set<std::string> shards;
    for (const EpisodeEntry& e : episodes)
      if (e.row_source == RowSource::kLegacyShard) shards.insert(e.row_path);
    std::vector<std::string> files(shards.begin(), shards.end());
    for (const char* rel : {"meta/tasks.jsonl", "meta/info.json", "meta/stats.json"}) {
      REEL_ASSIGN_OR_RETURN(FileInfo st, local->Stat(JoinPath(task_root, rel)));
      if (st.type == FileType::kFile) files.push_back(rel);
    }
    for (const std::string& rel : files) {
      REEL_ASSIGN_OR_RETURN(bool same,
                            internal::SameBytesAcross(local, JoinPath(task_root, rel), dest, JoinPath(dest_root, rel)));
      if (same) continue;
      report.task_files_sent.push_back(rel);
      REEL_RETURN_IF_ERROR(Send(rel));
    }
    return Status::OK();
  }
};

}  // namespace

Result<PushReport> PushTask(const std::string& task_root, FileSystem* dest, const std::string& dest_root,
                            const PushOptions& options) {
  FileSystem* local = options.fs ? options.fs : DefaultFileSystem();
  if (!dest) return Status::Invalid("push: no destination file system");
  REEL_ASSIGN_OR_RETURN(auto task, Task::Open(task_root, {local, 4}));
  REEL_ASSIGN_OR_RETURN(auto episodes, task->ListEpisodes());
  Pusher p{task_root, local, dest, dest_root, options, {}};
  p.report.episodes = static_cast<int64_t>(episodes.size());
  p.report.dry_run = options.dry_run;
  std::unique_ptr<PushLock> lock;
  if (!options.dry_run) {
    REEL_RETURN_IF_ERROR(dest->CreateDirs(JoinPath(dest_root, "meta")));
    REEL_ASSIGN_OR_RETURN(lock, PushLock::Acquire(dest, dest_root, options.lock_lease_s));
  }
  const std::vector<int64_t> journals = internal::PushJournals(dest, dest_root);
  const std::set<int64_t> interrupted(journals.begin(), journals.end());
  for (size_t i = 0; i < episodes.size(); ++i) {
    REEL_RETURN_IF_ERROR(p.PushEpisode(episodes[i], interrupted));
    if (lock) REEL_RETURN_IF_ERROR(lock->Renew());
    if (options.progress)
      options.progress({"episodes pushed", static_cast<int64_t>(i + 1), static_cast<int64_t>(episodes.size()),
                        "episode " + std::to_string(episodes[i].episode_index)});
  }
  REEL_RETURN_IF_ERROR(p.PushTaskFiles(episodes));
  return std::move(p.report);
}

}  // namespace reel
