// The upload client (contract §9, reference-behaviour.md "Upload"): sends episode
// slices to an import server and makes sure each lands exactly once.
//
// One attempt packs the slice (pack.h) and posts it as multipart/form-data to
// POST {server}/api/v1/session/upload with the fields `file` (<task>.zip,
// application/zip), `name` (the task), `episode_index` ((N-1) % 1000, as text) and
// `project_id`. Slices larger than `resumable_threshold` go through the resumable
// protocol instead (tus 1.0.0 core + creation, see docs/serve.md): POST
// /api/v1/uploads, then PATCH chunks at the server's offset (HEAD after a failure), then
// POST /api/v1/uploads/<id>/import.
//
// Retries: after a failed attempt (connection error, timeout, 5xx, 429) the client
// first asks GET /api/v1/sessions?name=<task> whether episode N already landed; if it
// did, the upload counts as done and nothing is sent again. Otherwise it waits
// (exponential backoff with jitter, capped) and retries. 4xx answers other than 408 and
// 429 are final: the server has judged the slice and resending would not change that.
//
// Thread safety: UploadEpisodes may be called concurrently with different options.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "reel/fs.h"
#include "reel/status.h"

namespace reel {

struct UploadProgress {
  int64_t episode_index = 0;  // N
  uint64_t sent = 0;          // bytes of the slice sent in this attempt (or acknowledged)
  uint64_t total = 0;         // slice size
  int attempt = 1;
};

struct UploadOptions {
  std::string server;      // "http://host:port" or "https://host:port", no trailing path
  std::string token;       // bearer token (Authorization: Bearer ...); empty = none
  // Login-cookie flow of the reference: POST /api/v1/auth/login with
  // {"username", "password"}; the session cookie it sets is sent on every request.
  std::string username;
  std::string password;
  std::string project_id;  // form field `project_id`; empty = the server matches by name
  std::string name;        // form field `name`; empty = the task directory's name
  bool precompress = false;    // RGB video to HEVC CRF 30 before packing (pack.h)
  // After a confirmed upload, DeleteEpisode (recorder.h), only once the server proved it
  // holds the same bytes (GET /api/v1/projects/<p>/episodes/<N>: each data and video file's
  // SHA-256; a precompressed video's size). No proof: an error, nothing deleted.
  bool delete_after = false;
  int max_attempts = 5;
  double backoff_initial_s = 0.5;
  double backoff_max_s = 30.0;
  double connect_timeout_s = 10.0;
  double io_timeout_s = 1800.0;             // per read/write on the socket
  // Slices above this use the resumable protocol: a killed upload then re-sends at most one
  // chunk. (A server without it, the reference collector's, gets one multipart upload.)
  uint64_t resumable_threshold = 8ull << 20;
  uint64_t chunk_bytes = 8ull << 20;         // PATCH size in the resumable protocol
  std::string work_dir;  // UploadEpisode(s): where slices are packed; empty = a temp directory
                         // (the outbox keeps its slices in meta/.upload-outbox/slices/)
  std::string ca_cert_path;  // https: extra CA bundle; empty = the system's
  std::function<void(const UploadProgress&)> progress;  // called from the uploading thread
  FileSystem* fs = nullptr;  // null = DefaultFileSystem()
};

struct UploadOutcome {
  int64_t episode_index = 0;         // N
  std::string session_id;            // the server's id for the imported episode
  bool already_present = false;      // the server had it already (a retry found it, or 200 no-op)
  int attempts = 0;
  bool resumable = false;            // sent through the resumable protocol
  bool deleted = false;              // delete_after removed the local data and videos
  uint64_t bytes = 0;                // slice size
};

// Uploads episode N of the task at `task_root`. Errors name the episode and, for an
// answer from the server, its status code and JSON error (rule and message).
Result<UploadOutcome> UploadEpisode(const std::string& task_root, int64_t episode_index,
                                    const UploadOptions& options);

// The episodes UploadEpisodes sends when given none: every committed episode that still
// has its data parquet (one deleted after an earlier upload has not), in order of N.
// Errors: those of Task::Open and ListEpisodes.
Result<std::vector<int64_t>> EpisodesToUpload(const std::string& task_root, FileSystem* fs = nullptr);

// Uploads each N in order (every committed episode when `episode_indices` is empty),
// continuing after a failure; one Result per episode. The episodes share one HTTP
// session (one login, a kept-alive connection).
std::vector<Result<UploadOutcome>> UploadEpisodes(const std::string& task_root,
                                                  const std::vector<int64_t>& episode_indices,
                                                  const UploadOptions& options);

// --- The upload outbox (docs/upload.md) -------------------------------------------
// `reel upload` as a durable pipeline: every committed episode of a local task gets a job
// in the task's outbox (meta/.upload-outbox/), keyed by (server, project, N, content
// digest). Each job goes committed -> packing -> sending -> imported -> confirmed
// (-> pruned), or ends rejected (the server's rule id) or conflict (409: another episode
// holds N). A job is packed once; its slice is kept until the server confirmed it, so a
// retry is byte-identical and a killed resumable upload resumes at the server's offset.
// Confirmed means the server proved it holds the same bytes (the episode-digest endpoint).

// What happens to the local files of a confirmed episode.
enum class DeleteAfter {
  kKeep,       // nothing (the default)
  kConfirmed,  // DeleteEpisode right after the proof
};

// One thing that happened to a job: the JSON-lines event log and progress.
struct UploadEvent {
  double time = 0;            // unix seconds
  int64_t episode_index = 0;  // N; 0 for events of the uploader itself
  std::string event;          // "enqueued", "packed", "sending", "retry", "imported", "confirmed",
                              // "pruned", "rejected", "conflict", "gave_up", "rescan", "watching"
  std::string state;          // the job's state after it
  uint64_t sent = 0, total = 0;
  int attempt = 0;
  std::string detail;         // the error, with the rule id, for retry / rejected / conflict / gave_up
  std::string rule;
};

struct OutboxOptions {
  UploadOptions upload;  // server, credentials, pack and protocol options; max_attempts bounds
                         // the failed attempts of one job in one run without `watch`
  // Keep running: pick up episodes as they are committed (inotify on meta/ plus a rescan
  // every rescan_s) and retry transient failures forever with backoff.
  bool watch = false;
  double rescan_s = 30;
  int parallel = 2;  // jobs sent at once, smallest first
  DeleteAfter delete_after = DeleteAfter::kKeep;
  // > 0: while the task's file system has less free space than this, confirmed episodes
  // are deleted oldest-first (each proved again right before), whatever delete_after says.
  uint64_t min_free_bytes = 0;
  uint64_t bwlimit_bytes_per_s = 0;            // all jobs together; 0 = none
  uint64_t bwlimit_recording_bytes_per_s = 0;  // instead, while a writer holds the task's lock
  // Transient failures back off with full jitter: a uniform wait in [0, min(max, initial * 2^k)],
  // at least the server's Retry-After.
  double backoff_initial_s = 1;
  double backoff_max_s = 300;
  std::function<void(const UploadEvent&)> events;  // from any uploader thread, serialized
  std::function<bool()> should_stop;                // polled about every 0.2 s; true = stop
};

// One episode's result of a DrainOutbox run: N, and its outcome or the error.
struct EpisodeUploadResult {
  int64_t episode_index = 0;
  Result<UploadOutcome> outcome = Status::Invalid("not run");
};

// Syncs the outbox with the task (a job for every committed episode with data; only
// `episode_indices` when given), then sends until every job of this server and project
// has settled (or, without `watch`, has used its attempts). Returns one result per job
// in scope, by N, when it stops. Errors: another uploader holds the outbox; the task
// cannot be opened.
Result<std::vector<EpisodeUploadResult>> DrainOutbox(const std::string& task_root,
                                                       const std::vector<int64_t>& episode_indices,
                                                       const OutboxOptions& options);

// One job as `reel upload --status` shows it.
struct OutboxEntry {
  std::string server, project;
  int64_t episode_index = 0;
  std::string state;  // JobState's name
  std::string digest;
  uint64_t bytes = 0, zip_bytes = 0, sent = 0;
  int attempts = 0;
  std::string last_error, rule, session_id;
  double age_s = 0;        // since enqueued
  double next_try_in_s = 0;  // > 0: backing off
};
struct OutboxStatus {
  std::vector<OutboxEntry> entries;             // by N
  std::map<std::string, int64_t> counters;      // lifetime counters (Prometheus text)
};
// Reads the outbox without taking the uploader's lock (it may be draining). Errors:
// NotFound when the task has no outbox.
Result<OutboxStatus> ReadOutboxStatus(const std::string& task_root);

}  // namespace reel
