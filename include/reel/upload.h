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
  uint64_t resumable_threshold = 64ull << 20;  // slices above this use the resumable protocol
  uint64_t chunk_bytes = 8ull << 20;         // PATCH size in the resumable protocol
  std::string work_dir;  // where slices are packed; empty = a temp directory
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

}  // namespace reel
