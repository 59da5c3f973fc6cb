// Pieces of the upload client shared by the one-shot upload (client.cc) and the outbox
// (drain.cc): the HTTP options of UploadOptions, the task's default name, and the proof
// that the server holds an episode's bytes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "reel/fs.h"
#include "reel/upload.h"
#include "upload/http.h"
#include "upload/protocol.h"

namespace reel::upload {

HttpOptions HttpOptionsOf(const UploadOptions& o);

// The task directory's name: the last non-empty component of `root`.
std::string TaskDirName(std::string root);

// The project a job is keyed by and the server is asked about: project_id, else the name.
std::string ProjectOf(const UploadOptions& o, const std::string& task_root);

// The answer of one proof request (docs/serve.md "What the server holds of an episode").
struct Proof {
  enum Kind {
    kHeld,        // every data and video file held with the same size and SHA-256
    kDiffers,     // the server holds other bytes (or none) for one of them: `detail`
    kNoEndpoint,  // the server has no digest endpoint (the reference collector's): no proof
    kFailed,      // the request failed: `failure` (retryable or not)
    kNoLocalData, // N has no data parquet here (deleted): nothing to compare, nothing to delete
  };
  Kind kind = kFailed;
  Status detail;
  Failure failure;
};

// Asks once what the server holds of episode N of `project` and compares it with this
// task's files that DeleteEpisode removes (the data parquet and each video, by role). A
// video `precompress` re-encoded was sent as other bytes: its packed size, from
// `recompressed` (arcname -> size), is compared instead. Local errors (the task, its
// files) are kDiffers with the error: nothing may be deleted on them.
Proof CheckHeld(HttpSession& http, const std::string& task_root, const std::string& project, int64_t n,
                const std::map<std::string, uint64_t>& recompressed, FileSystem* fs);

// The digests of N's local files (DigestFileGroup); NotFound with rule local.deleted when
// N has no data parquet here.
Result<std::vector<FileDigest>> LocalDigests(const std::string& task_root, int64_t n, FileSystem* fs);

// CheckHeld's comparison against given digests `mine` (those of the bytes sent: the outbox
// records them when it packs, so confirming a slice reads no local file again).
Proof CompareHeld(HttpSession& http, const std::string& project, int64_t n, const std::vector<FileDigest>& mine,
                  const std::map<std::string, uint64_t>& recompressed);

}  // namespace reel::upload
