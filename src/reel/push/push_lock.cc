#include "push/push_lock.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <random>

#include "util/json_util.h"
#include "util/time_util.h"

namespace reel::internal {
namespace {

constexpr const char* kLockRel = "meta/.push-lock.json";

std::string HostName() {
  char host[256] = {0};
  (void)::gethostname(host, sizeof host - 1);
  return host;
}

// A holder on this host whose process is gone (killed): its lease is void.
bool HolderIsGone(const std::string& holder) {
  const std::string mine = HostName() + ":";
  if (!holder.starts_with(mine)) return false;
  const pid_t pid = static_cast<pid_t>(std::atoll(holder.c_str() + mine.size()));
  return pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH;
}

}  // namespace

PushLock::PushLock(FileSystem* fs, std::string path, double lease_s)
    : fs_(fs), path_(std::move(path)), lease_s_(lease_s) {
  holder_ = HostName() + ":" + std::to_string(::getpid()) + ":" + std::to_string(std::random_device{}());
}

Result<std::unique_ptr<PushLock>> PushLock::Acquire(FileSystem* fs, const std::string& root, double lease_s) {
  std::unique_ptr<PushLock> lock(new PushLock(fs, JoinPath(root, kLockRel), lease_s));
  REEL_RETURN_IF_ERROR(lock->CheckFree());
  REEL_RETURN_IF_ERROR(lock->Write());
  REEL_ASSIGN_OR_RETURN(std::string back, lock->Holder());
  if (back != lock->holder_)
    return Status::AlreadyExists(lock->path_ + ": another push took the lock at the same moment (" + back +
                                 "); one writer per task");
  lock->held_ = true;
  return lock;
}

PushLock::~PushLock() {
  (void)StopKeeping();
  if (held_) (void)fs_->RemoveFile(path_);
}

Result<std::string> PushLock::Holder() {
  REEL_ASSIGN_OR_RETURN(std::string text, fs_->ReadFile(path_));
  REEL_ASSIGN_OR_RETURN(Json doc, ParseJson(text, path_, {.max_bytes = 64 << 10, .max_depth = 4}));
  if (!doc.is_object()) return Status::Invalid(path_ + ": the push lock is not a JSON object");
  std::string holder = "?";
  REEL_RETURN_IF_ERROR(GetString(doc, "holder", path_, holder));
  return holder;
}

Status PushLock::CheckFree() {
  REEL_ASSIGN_OR_RETURN(FileInfo st, fs_->Stat(path_));
  if (st.type == FileType::kNotFound) return Status::OK();
  auto text = fs_->ReadFile(path_);
  if (!text.ok()) return Status::OK();
  auto doc = ParseJson(*text, path_, {.max_bytes = 64 << 10, .max_depth = 4});
  double expires = 0;
  std::string holder = "?";
  if (!doc.ok() || !doc->is_object() || !GetDouble(*doc, "expires_at", path_, expires).ok() ||
      !GetString(*doc, "holder", path_, holder).ok())
    return Status::OK();  // unreadable: a lock that was never completed
  if (expires > UnixNow() && !HolderIsGone(holder))
    return Status::AlreadyExists(path_ + ": the task is being pushed by " + holder + " (its lease runs until " +
                                 IsoUtc(expires) + "); one writer per task");
  return Status::OK();  // an expired lease: its writer died
}

Status PushLock::Write() {
  written_at_ = UnixNow();
  Json doc = {{"holder", holder_}, {"written_at", written_at_}, {"expires_at", written_at_ + lease_s_}};
  return WriteFileSynced(fs_, path_, Dump(doc, -1));
}

Status PushLock::Renew() { return UnixNow() - written_at_ > lease_s_ / 2 ? Write() : Status::OK(); }

void PushLock::StartKeeping() {
  stop_ = false;
  keeper_ = std::thread([this] {
    std::unique_lock<std::mutex> lk(mu_);
    const auto period = std::chrono::duration<double>(lease_s_ / 4);
    while (!stop_cv_.wait_for(lk, period, [this] { return stop_; })) {
      Status st = Write();
      if (!st.ok() && keeper_status_.ok()) keeper_status_ = st;
    }
  });
}

Status PushLock::StopKeeping() {
  if (!keeper_.joinable()) return keeper_status_;
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  keeper_.join();
  return keeper_status_;
}

}  // namespace reel::internal
