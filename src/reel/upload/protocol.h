// The import server's upload protocol as the client speaks it (include/reel/upload.h):
// one attempt of the simple multipart upload, one attempt of the resumable (tus 1.0.0)
// upload, the landed check, and how an answer is judged (retryable or final).
//
// Thread safety: free functions over a caller-owned HttpSession (one thread).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "reel/file_group.h"
#include "reel/status.h"
#include "upload/http.h"

namespace reel::upload {

// A failed request, judged by the retry policy of upload.h.
struct Failure {
  Status status;
  bool retryable = false;
  double retry_after_s = -1;  // the server's Retry-After (429/503), -1 = none
  int http_status = 0;        // the answer's status; 0 = no answer (or not an HTTP failure)
};

// What the server said when it imported (or already had) the episode.
struct Imported {
  std::string session_id;
  bool already_present = false;
};

// Either Imported or a Failure.
struct AttemptResult {
  std::optional<Imported> imported;
  Failure failure;

  static AttemptResult Ok(Imported i) { return {std::move(i), {}}; }
  static AttemptResult Fail(Failure f) { return {std::nullopt, std::move(f)}; }
};

// The packed slice being sent and its form fields.
struct Slice {
  std::shared_ptr<arrow::io::RandomAccessFile> file;
  uint64_t size = 0;
  std::string filename;      // "<task>.zip"
  std::string name;          // form field `name`
  int64_t episode_index = 0;  // N
  std::string project_id;
};

// Called with the slice bytes sent (or acknowledged) so far in this attempt.
using SentCallback = std::function<void(uint64_t sent)>;

// Judges a non-success answer (or no answer): transport errors, 5xx, 408 and 429 are
// retryable; any other status is final. The message names `what`, the status, and the
// server's JSON error (rule, detail, request_id) when the body is one.
Failure JudgeAnswer(const HttpResponse& r, const std::string& what);

// 200/201 with {"session_id", "already_present", ...} -> Imported; anything else -> Failure.
AttemptResult ParseImportAnswer(const HttpResponse& r, const std::string& what);

// POST /api/v1/session/upload, multipart/form-data, the zip streamed from `slice.file`.
AttemptResult PostMultipart(HttpSession& http, const Slice& slice, const SentCallback& sent);

// GET /api/v1/sessions?name=<name>: the session id of the entry with that name and
// episode_index == N, nullopt when there is none, or a Failure when the check failed
// (a failed check never means "absent").
struct LandedAnswer {
  bool ok = false;
  std::optional<std::string> session_id;
  Failure failure;
};
LandedAnswer CheckLanded(HttpSession& http, const std::string& name, int64_t episode_index);

// GET /api/v1/projects/<project>/episodes/<N> (docs/serve.md "What the server holds of an
// episode"): the files the server holds of N with their digests, or a Failure (a server
// without the endpoint answers 404 http.not_found: final, and no proof).
struct HeldAnswer {
  bool ok = false;
  std::vector<FileDigest> files;
  Failure failure;
};
HeldAnswer FetchHeldFiles(HttpSession& http, const std::string& project, int64_t episode_index);

// The resumable protocol's memory across attempts of one episode: the upload's path
// ("/api/v1/uploads/<id>"), empty before creation or after it expired.
struct TusState {
  std::string location;
  // Called after the upload is created and after each acknowledged PATCH, with the
  // location and the server's offset: the outbox persists them (a killed client then
  // resumes at HEAD's offset instead of byte 0).
  std::function<void(const std::string& location, uint64_t offset)> saved;
};

// One attempt of the resumable protocol: creates the upload (or asks HEAD where the
// existing one stands), PATCHes chunks of at most `chunk_bytes` from the server's
// offset (HEAD again after a 409), then POSTs .../import. A failed PATCH ends the
// attempt; the next one resumes from HEAD's offset.
AttemptResult TusUpload(HttpSession& http, TusState& state, const Slice& slice,
                        uint64_t chunk_bytes, const SentCallback& sent);

}  // namespace reel::upload
