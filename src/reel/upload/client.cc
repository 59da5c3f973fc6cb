// UploadEpisode(s) (include/reel/upload.h): pack, send, retry with the landed check,
// delete after a confirmed upload. The wire protocol is in protocol.cc and tus.cc.
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <exception>
#include <filesystem>
#include <random>
#include <thread>

#include "reel/file_group.h"
#include "reel/pack.h"
#include "reel/recorder.h"
#include "reel/task.h"
#include "reel/upload.h"
#include "io/scratch_dir.h"
#include "upload/client_internal.h"
#include "upload/http.h"
#include "upload/protocol.h"

namespace reel {
namespace {

using upload::AttemptResult;
using upload::Failure;
using upload::HttpSession;

// Retry-After values beyond this are not believed (a misconfigured proxy must not park
// the collector for a day).
constexpr double kMaxRetryAfterS = 3600;

// Seconds to wait before attempt `attempt + 1`: exponential from backoff_initial_s,
// capped at backoff_max_s, with "equal jitter" (half fixed, half random) so that many
// collectors failing together do not retry together; at least the server's Retry-After.
double BackoffSeconds(const UploadOptions& o, int attempt, double retry_after_s) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const double exp = o.backoff_initial_s * std::pow(2.0, std::min(attempt - 1, 30));
  const double cap = std::max(0.0, std::min(o.backoff_max_s, exp));
  const double wait = cap / 2 + std::uniform_real_distribution<double>(0, cap / 2)(rng);
  return std::max(wait, std::min(retry_after_s, kMaxRetryAfterS));
}

void Sleep(double seconds) {
  if (seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

// Proof before deletion (issue 28): CheckHeld, retried within the attempt budget. An
// import answer and the landed check judge by name and N; another rig's episode N would
// pass them, never this. No answer, another answer, or a server without the endpoint (the
// reference collector's): an error, and nothing is deleted.
Status ProveHeld(HttpSession& http, const std::string& task_root, const upload::Slice& slice,
                 const PackResult& packed, const UploadOptions& options, FileSystem* fs) {
  std::map<std::string, uint64_t> recompressed;
  for (const PackedEntry& p : packed.entries)
    if (p.recompressed) recompressed[p.arcname] = p.size;
  const std::string project = slice.project_id.empty() ? slice.name : slice.project_id;
  for (int attempt = 1;; ++attempt) {
    upload::Proof proof = upload::CheckHeld(http, task_root, project, slice.episode_index, recompressed, fs);
    if (proof.kind == upload::Proof::kHeld) return Status::OK();
    if (proof.kind != upload::Proof::kFailed) return proof.detail;
    if (!proof.failure.retryable || attempt >= std::max(1, options.max_attempts)) return proof.failure.status;
    Sleep(BackoffSeconds(options, attempt, proof.failure.retry_after_s));
  }
}

// Packs, sends and confirms episode N through `http` (shared by the episodes of one
// UploadEpisodes call: one login, one kept-alive connection).
Result<UploadOutcome> UploadPacked(HttpSession* http, const std::string& task_root, int64_t n,
                                   const UploadOptions& options, FileSystem* fs) {
  const std::string ep = "episode " + std::to_string(n);
  // The packed slice lives in a private directory, removed whether the upload succeeded or not.
  REEL_ASSIGN_OR_RETURN(auto scratch, internal::ScratchDir::Create(".reel-upload", options.work_dir, fs));
  upload::Slice slice;
  slice.name = options.name.empty() ? upload::TaskDirName(task_root) : options.name;
  slice.filename = slice.name + ".zip";
  slice.episode_index = n;
  slice.project_id = options.project_id;

  PackOptions pack;
  pack.task_fs = fs;
  pack.output_fs = fs;
  pack.precompress = options.precompress;
  const std::string zip_path = JoinPath(scratch->path(), DefaultSliceName(slice.name, n));
  auto packed = PackEpisode(task_root, n, zip_path, pack);
  if (!packed.ok()) return packed.status().WithContext(ep + ": pack");
  auto file = fs->OpenRandomAccess(zip_path);
  if (!file.ok()) return file.status().WithContext(ep + ": open the packed slice");
  slice.file = *file;
  slice.size = packed->zip_bytes;

  UploadOutcome outcome;
  outcome.episode_index = n;
  outcome.bytes = slice.size;
  outcome.resumable = slice.size > options.resumable_threshold;

  int attempt = 1;
  uint64_t reported = 0;  // progress is monotone within an attempt
  auto report = [&](uint64_t sent) {
    if (!options.progress) return;
    reported = std::max(reported, std::min(sent, slice.size));
    options.progress(UploadProgress{n, reported, slice.size, attempt});
  };
  upload::TusState tus;
  std::optional<upload::Imported> imported;
  const int max_attempts = std::max(1, options.max_attempts);
  while (!imported) {
    outcome.attempts = attempt;
    reported = 0;
    AttemptResult r = outcome.resumable ? TusUpload(*http, tus, slice, options.chunk_bytes, report)
                                        : PostMultipart(*http, slice, report);
    if (r.imported) {
      imported = r.imported;
      break;
    }
    Failure last = r.failure;
    // Retryable: before sending again, find out whether the failed attempt landed. A
    // failed check is retried too (within the attempt budget), never taken as "absent".
    for (;;) {
      if (!last.retryable) return last.status.WithContext(ep);
      if (attempt >= max_attempts)
        return last.status.WithContext(ep + ": gave up after " + std::to_string(attempt) + " attempts");
      Sleep(BackoffSeconds(options, attempt, last.retry_after_s));
      ++attempt;
      outcome.attempts = attempt;
      upload::LandedAnswer landed = upload::CheckLanded(*http, slice.name, n);
      if (!landed.ok) {
        last = landed.failure;
        continue;
      }
      if (landed.session_id) imported = upload::Imported{*landed.session_id, /*already_present=*/true};
      break;
    }
  }
  outcome.session_id = imported->session_id;
  outcome.already_present = imported->already_present;
  reported = 0;
  report(slice.size);  // confirmed: every byte is on the server

  if (options.delete_after) {
    // Only now: the server has confirmed the episode (an import answer or the landed
    // check) and proved it holds these bytes.
    if (Status proof = ProveHeld(*http, task_root, slice, *packed, options, fs); !proof.ok())
      return proof.WithContext(ep + ": uploaded as session " + outcome.session_id + " but not deleted");
    Status st = DeleteEpisode(task_root, n, fs);
    if (!st.ok())
      return st.WithContext(ep + ": uploaded as session " + outcome.session_id + " but delete_after failed");
    outcome.deleted = true;
  }
  return outcome;
}

// Asks the server once, before anything is packed or sent, whether it takes these
// credentials at all (the landed check, a small GET): a 401 or 403 there is final, so a
// missing or wrong token costs one request, not a whole slice sent first. Any other
// answer, a transport error included, is left to the upload itself (retried as usual).
Status CredentialsRefused(HttpSession& http, const UploadOptions& options, const std::string& task_root,
                          int64_t first) {
  const std::string name = options.name.empty() ? upload::TaskDirName(task_root) : options.name;
  upload::LandedAnswer landed = upload::CheckLanded(http, name, first);
  if (landed.ok || landed.failure.status.code() != StatusCode::kPermissionDenied) return Status::OK();
  return landed.failure.status.WithContext("credentials refused before any slice was sent");
}

// Uploads each N through one HTTP session; a server URL that cannot be used fails every
// episode with the same error.
std::vector<Result<UploadOutcome>> UploadAll(const std::string& task_root, const std::vector<int64_t>& todo,
                                             const UploadOptions& options) {
  FileSystem* fs = options.fs ? options.fs : DefaultFileSystem();
  std::vector<Result<UploadOutcome>> out;
  out.reserve(todo.size());
  auto http = HttpSession::Open(upload::HttpOptionsOf(options));
  Status refused = http.ok() && !todo.empty() ? CredentialsRefused(**http, options, task_root, todo.front())
                                              : http.status();
  for (int64_t n : todo) {
    const std::string ep = "episode " + std::to_string(n);
    if (!refused.ok()) {
      out.push_back(refused.WithContext(ep));
      continue;
    }
    try {  // nothing thrown below (httplib, std::filesystem) escapes the library
      out.push_back(UploadPacked(http->get(), task_root, n, options, fs));
    } catch (const std::exception& e) {
      out.push_back(Status::IOError(ep + ": upload: " + e.what()));
    }
  }
  return out;
}

}  // namespace

Result<UploadOutcome> UploadEpisode(const std::string& task_root, int64_t episode_index,
                                    const UploadOptions& options) {
  return std::move(UploadAll(task_root, {episode_index}, options).front());
}

Result<std::vector<int64_t>> EpisodesToUpload(const std::string& task_root, FileSystem* fs) {
  TaskOptions topt;
  topt.fs = fs;
  REEL_ASSIGN_OR_RETURN(auto task, Task::Open(task_root, topt));
  REEL_ASSIGN_OR_RETURN(auto episodes, task->ListEpisodes());
  std::vector<int64_t> out;
  for (const EpisodeEntry& e : episodes)
    if (!e.data_path.empty()) out.push_back(e.episode_index);
  return out;
}

std::vector<Result<UploadOutcome>> UploadEpisodes(const std::string& task_root,
                                                  const std::vector<int64_t>& episode_indices,
                                                  const UploadOptions& options) {
  std::vector<int64_t> todo = episode_indices;
  if (todo.empty()) {
    auto all = EpisodesToUpload(task_root, options.fs);
    if (!all.ok()) return {all.status()};
    todo = std::move(*all);
  }
  return UploadAll(task_root, todo, options);
}

namespace upload {

HttpOptions HttpOptionsOf(const UploadOptions& o) {
  HttpOptions h;
  h.server = o.server;
  h.token = o.token;
  h.username = o.username;
  h.password = o.password;
  h.ca_cert_path = o.ca_cert_path;
  h.connect_timeout_s = o.connect_timeout_s;
  h.io_timeout_s = o.io_timeout_s;
  return h;
}

std::string TaskDirName(std::string root) {
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  return BaseName(root);
}

std::string ProjectOf(const UploadOptions& o, const std::string& task_root) {
  if (!o.project_id.empty()) return o.project_id;
  return o.name.empty() ? TaskDirName(task_root) : o.name;
}

Result<std::vector<FileDigest>> LocalDigests(const std::string& task_root, int64_t n, FileSystem* fs) {
  TaskOptions to;
  to.fs = fs;
  to.io_threads = 1;
  REEL_ASSIGN_OR_RETURN(auto task, Task::Open(task_root, to));
  REEL_ASSIGN_OR_RETURN(EpisodeEntry e, task->FindEpisode(n));
  if (e.data_path.empty())  // a proof over no files would hold vacuously
    return Status::NotFound("episode " + std::to_string(n) + " has no data here").WithRule("local.deleted");
  return DigestFileGroup(*task, e);
}

Proof CheckHeld(HttpSession& http, const std::string& task_root, const std::string& project, int64_t n,
                const std::map<std::string, uint64_t>& recompressed, FileSystem* fs) {
  auto mine = LocalDigests(task_root, n, fs);
  if (mine.ok()) return CompareHeld(http, project, n, *mine, recompressed);
  Proof out;
  out.kind = mine.status().rule() == "local.deleted" ? Proof::kNoLocalData : Proof::kDiffers;
  out.detail = mine.status();
  return out;
}

Proof CompareHeld(HttpSession& http, const std::string& project, int64_t n, const std::vector<FileDigest>& mine,
                  const std::map<std::string, uint64_t>& recompressed) {
  Proof out;
  auto differs = [&](Status s) {
    out.kind = Proof::kDiffers;
    out.detail = std::move(s);
    return out;
  };
  HeldAnswer held = FetchHeldFiles(http, project, n);
  if (!held.ok) {
    out.failure = held.failure;
    // 404 episode.not_found: the server holds no N. Any other 404 (http.not_found, or the
    // reference collector's framework answer): the server has no such endpoint.
    if (held.failure.http_status == 404) {
      out.kind = held.failure.status.rule() == "episode.not_found" ? Proof::kDiffers : Proof::kNoEndpoint;
      out.detail = held.failure.status;
    }
    return out;
  }
  std::map<std::string, const FileDigest*> theirs;
  for (const FileDigest& d : held.files) theirs[d.role] = &d;
  for (const FileDigest& d : mine) {
    if (d.role == "episodes_row") continue;  // a delete keeps it; a legacy shard's row is re-sliced
    auto it = theirs.find(d.role);
    if (it == theirs.end())
      return differs(Status::Invalid("the server holds no " + d.role + " of episode " + std::to_string(n) + " (" +
                                     d.path + ")"));
    auto sent = recompressed.find(d.path);
    const bool same = sent != recompressed.end()
                          ? it->second->size == sent->second
                          : it->second->size == d.size && it->second->sha256 == d.sha256;
    if (!same)
      return differs(Status::Invalid("the server's " + d.role + " of episode " + std::to_string(n) + " (" +
                                     std::to_string(it->second->size) + " bytes, sha256 " + it->second->sha256 +
                                     ") is not " + d.path + " (" + std::to_string(d.size) + " bytes, sha256 " +
                                     d.sha256 + ")"));
  }
  out.kind = Proof::kHeld;
  return out;
}

}  // namespace upload
}  // namespace reel
