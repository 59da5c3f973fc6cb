// The upload outbox of a task (docs/upload.md): what `reel upload` has to send, where
// each episode stands, and what the server confirmed, kept across kills and restarts.
//
// One SQLite database in WAL mode at <task>/meta/.upload-outbox/outbox.sqlite (a dot
// name under meta/: readers, pack and check ignore it). A job is keyed by (server,
// project, N, digest), never by a path or name: `digest` is the SHA-256 over the
// episode's file group (data and videos: role, size, sha256), set when the slice is
// packed. The packed slice stays in slices/ beside the database until the job leaves
// the sending states, so a retry sends the same bytes and a killed resumable upload
// goes on from the server's offset.
//
// Durability: synchronous=NORMAL. A power cut may lose the last transitions, never
// corrupt the database; a lost transition is redone (a re-sent chunk, a repeated
// landed or proof check) and never skips the proof before a local delete, which is
// made again right before each delete.
//
// Thread safety: one Outbox may be shared by threads (one connection, a mutex).
// Processes: one uploader at a time (Lock()); readers (--status) at any time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "reel/status.h"

struct sqlite3;

namespace reel::upload {

enum class JobState { kCommitted, kPacking, kSending, kImported, kConfirmed, kPruned, kRejected, kConflict };

// "committed", "packing", ... as stored and shown.
const char* JobStateName(JobState s);
// Final: nothing more will be sent for the job (pruned, rejected, conflict; confirmed
// is final for sending, a later prune only deletes local files).
bool IsSettled(JobState s);

struct Job {
  int64_t id = 0;
  std::string server;
  std::string project;
  int64_t episode_index = 0;
  std::string digest;       // "" until packed
  JobState state = JobState::kCommitted;
  uint64_t bytes = 0;       // the file group's bytes when enqueued: smallest first
  uint64_t zip_bytes = 0;   // the packed slice
  std::string zip_sha256;
  std::string recompressed;  // JSON {arcname: size} of entries pack re-encoded (precompress)
  std::string tus_location;  // the resumable upload's path while sending
  uint64_t sent = 0;         // bytes the server acknowledged (persisted every chunk)
  int attempts = 0;          // failed attempts so far (all runs)
  double next_try = 0;       // unix seconds; 0 = now
  std::string last_error;
  std::string rule;          // the server's rule id of the last refusal
  std::string session_id;
  bool proof_unavailable = false;  // imported, but the server has no digest endpoint
  double created = 0;
  double updated = 0;
  double confirmed_at = 0;
  // JSON [[role, path, size, sha256], ...]: the digests of the data and videos packed, so
  // that confirming the slice compares the server's with what was sent, reading nothing
  // again (a prune reads the local files afresh).
  std::string files;
};

class Outbox {
 public:
  // Opens (create: creating) the outbox of the local task at `task_root`. Errors:
  // NotFound when it does not exist and !create; IOError naming the database.
  static Result<std::unique_ptr<Outbox>> Open(const std::string& task_root, bool create);
  ~Outbox();
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  // The uploader's lock (an flock held until destruction). AlreadyExists, naming the
  // holder's pid, while another uploader drains this outbox.
  Status Lock();

  // Adds a committed job for each (N, bytes) that has no job of (server, project) yet;
  // one transaction. Returns how many were added.
  Result<int> Enqueue(const std::string& server, const std::string& project,
                      const std::vector<std::pair<int64_t, uint64_t>>& episodes);
  // The jobs of (server, project), or every job when both are empty; by N.
  Result<std::vector<Job>> Jobs(const std::string& server = "", const std::string& project = "");
  // Writes every field of `job` (by id) and stamps `updated`.
  Status Save(Job& job);
  // Adds `delta` to a named counter (Prometheus text on --status).
  Status Count(const std::string& name, int64_t delta = 1);
  Result<std::map<std::string, int64_t>> Counters();

  const std::string& dir() const { return dir_; }  // meta/.upload-outbox
  std::string SlicePath(const Job& job) const;    // slices/<N>-<job id>.zip

 private:
  Outbox(sqlite3* db, std::string dir) : db_(db), dir_(std::move(dir)) {}
  Status Exec(const std::string& sql);
  Status Migrate();  // an older schema brought to the current one
  sqlite3* db_;
  std::string dir_;
  int lock_fd_ = -1;
  std::mutex mu_;
};

// The outbox directory of a task: <task_root>/meta/.upload-outbox.
std::string OutboxDir(const std::string& task_root);

}  // namespace reel::upload
