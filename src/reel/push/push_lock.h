// Internal: the push lock, a lease object at meta/.push-lock.json (docs/storage.md
// "One writer").
//
// Object stores offer no flock and arrow::fs no conditional PUT, so the lock is a lease:
// refused while another holder's lease is live, taken over once it expired (or its holder,
// a process on this host, is gone), and read back after writing so that of two pushes
// racing for it at most the last writer goes on.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "reel/fs.h"
#include "reel/status.h"

namespace reel::internal {

class PushLock {
 public:
  // Takes the lock of the task at `root` on `fs`. AlreadyExists while another holder's
  // lease is live, naming the holder and when the lease runs out.
  static Result<std::unique_ptr<PushLock>> Acquire(FileSystem* fs, const std::string& root, double lease_s);
  // Stops renewing and releases the lock, only when this process holds it (never another
  // writer's).
  ~PushLock();
  PushLock(const PushLock&) = delete;
  PushLock& operator=(const PushLock&) = delete;

  // Renews the lease when half of it has passed. Not while a keeper runs.
  Status Renew();

  // A thread that renews the lease every quarter of it, for a long step that cannot call
  // Renew itself (a staged change). StopKeeping joins it and returns the first renewal
  // error (the lease may then have lapsed: the caller must not publish).
  void StartKeeping();
  Status StopKeeping();

 private:
  PushLock(FileSystem* fs, std::string path, double lease_s);
  Result<std::string> Holder();
  Status CheckFree();
  Status Write();

  FileSystem* fs_;
  std::string path_, holder_;
  double lease_s_ = 600, written_at_ = 0;
  bool held_ = false;  // written and read back as ours

  std::thread keeper_;
  std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  Status keeper_status_;
};

}  // namespace reel::internal
