// Internal: the resumable-upload spool (tus 1.0.0 core + creation; docs/serve.md).
// Each upload is <dir>/<id>.json (what it is for, written atomically), <id>.part (the
// bytes received so far: its size is the offset) and, once imported, <id>.result.json
// (the answer, so a repeated import call returns it again). Server scratch space, not
// task data: a crash loses at most the bytes of the PATCH in flight.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "reel/fs.h"
#include "reel/status.h"

namespace reel::serve {

struct SpoolUpload {
  std::string id;                  // 32 hex digits
  uint64_t length = 0;             // Upload-Length
  uint64_t offset = 0;             // bytes received
  std::string name;                // form `name`
  std::string project;             // the task directory it goes to
  int64_t form_episode_index = -1;
  std::string principal;           // who created it; only they may continue it
};

// How many uploads one principal may have pending (created, not yet imported) at once, and
// their declared lengths together: a client cannot promise away the server's disk by
// creating uploads it never sends (issue 27: 2,000 x 8 GiB were accepted in 17 s).
struct PendingLimits {
  int max_uploads = 16;
  uint64_t max_bytes = 64ull << 30;
};

// Thread safe; callers serialise work on one upload with LockFor(id). Every disk
// operation goes through `fs` (null = DefaultFileSystem(); not owned, must outlive the
// spool): part files grow through NewAppendableFile, ages come from Stat's mtime.
class Spool {
 public:
  explicit Spool(std::string dir, FileSystem* fs = nullptr)
      : dir_(std::move(dir)), fs_(fs ? fs : DefaultFileSystem()) {}

  // Creates the directory, drops uploads untouched for longer than `max_age_s` and counts
  // the pending ones per principal.
  Status Init(int64_t max_age_s);
  // A new upload, unless what.principal's pending uploads would then pass `limits`
  // (nullopt: nothing created; Pending says what they hold). Before refusing, the
  // principal's uploads untouched for longer than Init's max_age_s are dropped.
  Result<std::optional<SpoolUpload>> Create(const SpoolUpload& what, const PendingLimits& limits);
  // The count and the declared bytes of `principal`'s pending uploads.
  std::pair<int, uint64_t> Pending(const std::string& principal);
  // NotFound for an unknown or malformed id.
  Result<SpoolUpload> Get(const std::string& id);
  // Appends `data` to the part file and fsyncs it; returns the new offset. The caller
  // holds LockFor(id) and has checked that the data fits in `length`.
  Result<uint64_t> Append(const SpoolUpload& upload, const std::string& data);
  std::string PartPath(const std::string& id) const { return dir_ + "/" + id + ".part"; }
  Status SaveResult(const std::string& id, const std::string& json);
  std::optional<std::string> LoadResult(const std::string& id);
  // Frees an imported upload's bytes; it is no longer pending.
  void RemovePart(const std::string& id);
  std::mutex& LockFor(const std::string& id);

 private:
  void DropIdle(const std::string& principal);               // holds mu_
  std::pair<int, uint64_t> PendingLocked(const std::string& principal) const;  // holds mu_

  std::string dir_;
  FileSystem* fs_;
  int64_t max_age_s_ = 7 * 24 * 3600;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<std::mutex>> locks_;
  std::map<std::string, std::map<std::string, uint64_t>> pending_;  // principal -> id -> length
};

bool IsUploadId(const std::string& id);

}  // namespace reel::serve
