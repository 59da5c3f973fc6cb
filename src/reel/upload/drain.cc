// DrainOutbox and ReadOutboxStatus (include/reel/upload.h): the outbox's jobs moved through
// their states by a few worker threads, each with its own HTTP session. The store is
// outbox.h; the wire protocol is protocol.h; the states and guarantees are docs/upload.md.
//
// A job advances one state per step and saves after each, so a kill loses at most the
// step in flight: a pack (redone from the task), one PATCH (re-sent from HEAD's offset),
// an import answer (the landed check and the server's already_present find it), a proof
// (asked again). Local files are deleted only right after a proof in the same step.
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "reel/file_group.h"
#include "reel/pack.h"
#include "reel/recorder.h"
#include "reel/task.h"
#include "reel/upload.h"
#include "upload/client_internal.h"
#include "upload/outbox.h"
#include "util/hex.h"
#include "util/json_util.h"
#include "write/transaction.h"

namespace reel {
namespace {

using upload::Job;
using upload::JobState;
using upload::Outbox;

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Full jitter (a uniform wait in [0, min(max, initial * 2^(k-1))]): many rigs failing
// together spread out instead of retrying in step. At least the server's Retry-After,
// believed up to an hour.
double FullJitter(const OutboxOptions& o, int failures, double retry_after_s) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const double cap = std::min(o.backoff_max_s, o.backoff_initial_s * std::pow(2.0, std::min(failures - 1, 30)));
  const double wait = std::uniform_real_distribution<double>(0, std::max(0.0, cap))(rng);
  return std::max(wait, std::min(retry_after_s, 3600.0));
}

// The content digest a job is keyed by: SHA-256 over "role size sha256\n" of the
// episode's data and videos (the files a delete removes; the episodes row stays).
std::string GroupDigest(const std::vector<FileDigest>& files) {
  std::string text;
  for (const FileDigest& d : files)
    if (d.role != "episodes_row") text += d.role + " " + std::to_string(d.size) + " " + d.sha256 + "\n";
  return Sha256Hex(text);
}

// A token bucket over every worker's bytes: Take() sleeps until the bytes may go.
class RateLimiter {
 public:
  explicit RateLimiter(std::function<uint64_t()> rate) : rate_(std::move(rate)) {}
  void Take(uint64_t bytes) {
    double wait = 0;
    {
      std::lock_guard<std::mutex> g(mu_);
      const uint64_t rate = rate_();
      if (rate == 0) return;
      const double now = Seconds();
      // The bucket holds at most a quarter second of bytes: a burst stays short.
      tokens_ = std::min(static_cast<double>(rate) / 4, tokens_ + (now - last_) * static_cast<double>(rate));
      last_ = now;
      tokens_ -= static_cast<double>(bytes);
      if (tokens_ < 0) wait = -tokens_ / static_cast<double>(rate);
    }
    if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  }

 private:
  static double Seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  std::function<uint64_t()> rate_;
  std::mutex mu_;
  double tokens_ = 0;
  double last_ = Seconds();
};

class Drain {
 public:
  Drain(std::string root, const std::vector<int64_t>& only, const OutboxOptions& o, Outbox* box)
      : root_(std::move(root)),
        only_(only.begin(), only.end()),
        o_(o),
        fs_(o.upload.fs ? o.upload.fs : DefaultFileSystem()),
        box_(box),
        server_(ServerKey(o.upload.server)),
        project_(upload::ProjectOf(o.upload, root_)),
        limiter_([this] { return CurrentRate(); }) {}

  Result<std::vector<EpisodeUploadResult>> Run();

 private:
  static std::string ServerKey(std::string s) {
    while (!s.empty() && s.back() == '/') s.pop_back();
    return s;
  }
  // The rate now: --bwlimit-recording while an episode is being recorded in the task (a live
  // reservation in meta/episodes/, looked at no more than every 0.2 s: a second of an
  // unlimited upload over a fast link is hundreds of MiB), else --bwlimit.
  // Called under the limiter's mutex.
  uint64_t CurrentRate() {
    if (o_.bwlimit_recording_bytes_per_s == 0) return o_.bwlimit_bytes_per_s;
    const auto now = std::chrono::steady_clock::now();
    if (now - recording_checked_ >= std::chrono::milliseconds(200)) {
      recording_checked_ = now;
      auto live = internal::LiveReservations(fs_, root_);
      recording_ = live.ok() && !live->empty();
    }
    return recording_ ? o_.bwlimit_recording_bytes_per_s : o_.bwlimit_bytes_per_s;
  }
  Status Sync();
  void Worker();
  bool PickLocked(Job* out);
  bool FinishedLocked() const;
  void Step(upload::HttpSession& http, Job& job);
  void Pack(Job& job);
  void Send(upload::HttpSession& http, Job& job);
  void Prove(upload::HttpSession& http, Job& job);
  void Prune(upload::HttpSession& http, Job& job);
  void Backoff(Job& job, const Status& why, double retry_after_s);
  void Settle(Job& job, JobState state, const Status& why);
  void Save(Job& job, const char* event, const std::string& detail = "");
  void Emit(const Job& job, const char* event, const std::string& detail, const std::string& rule = "");
  void PruneForSpace(upload::HttpSession& http);
  void WatchLoop();
  void SweepSlices();
  Status CredentialsRefused();
  bool Stopping() { return stop_.load() || (o_.should_stop && o_.should_stop()); }
  std::vector<EpisodeUploadResult> Outcomes();

  const std::string root_;
  const std::set<int64_t> only_;
  const OutboxOptions o_;
  FileSystem* fs_;
  Outbox* box_;
  const std::string server_, project_;
  RateLimiter limiter_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int64_t, Job> jobs_;           // by job id, in scope
  std::set<int64_t> running_;             // job ids a worker holds
  std::set<int64_t> verified_;            // job ids whose kept slice was checked this run
  std::map<int64_t, Status> gave_up_;     // job ids given up in this run (no watch), why
  std::map<int64_t, int> run_failures_;   // failed attempts in this run
  std::map<int64_t, bool> present_before_;  // settled before this run: already there
  std::atomic<bool> stop_{false};
  bool recording_ = false;  // CurrentRate's, under the limiter's mutex
  std::chrono::steady_clock::time_point recording_checked_{};
  std::set<int64_t> already_present_;     // job ids the server answered already_present in this run
  std::set<int64_t> known_;               // every N with a job of (server, project); Sync's
  bool loaded_ = false;                   // whether Sync read the jobs once
  std::mutex events_mu_;
};

// Makes the outbox hold a job for every episode with data (the ones asked for), and this
// run's map every job in scope. Costs one listing of the task; only episodes without a job
// yet are looked at further (their sizes), and the database is read again only when a job
// was added: a rescan of an uploaded task does no per-episode work.
Status Drain::Sync() {
  TaskOptions to;
  to.fs = fs_;
  to.io_threads = 1;
  REEL_ASSIGN_OR_RETURN(auto task, Task::Open(root_, to));
  REEL_ASSIGN_OR_RETURN(auto episodes, task->ListEpisodes());
  std::set<int64_t> with_data;
  std::vector<std::pair<int64_t, uint64_t>> add;
  for (const EpisodeEntry& e : episodes) {
    if (e.data_path.empty() || (!only_.empty() && !only_.count(e.episode_index))) continue;
    with_data.insert(e.episode_index);
    if (known_.count(e.episode_index)) continue;
    uint64_t bytes = 0;
    auto data = fs_->Stat(task->Path(e.data_path));
    if (data.ok()) bytes += data->size;
    for (const auto& [key, rel] : e.videos)
      if (auto v = fs_->Stat(task->Path(rel)); v.ok()) bytes += v->size;
    add.emplace_back(e.episode_index, bytes);
  }
  int added = 0;
  if (!add.empty()) {
    REEL_ASSIGN_OR_RETURN(added, box_->Enqueue(server_, project_, add));
  }
  std::vector<Job> all;
  if (!loaded_ || added > 0) {
    REEL_ASSIGN_OR_RETURN(all, box_->Jobs(server_, project_));
  }
  loaded_ = true;
  std::lock_guard<std::mutex> g(mu_);
  for (Job& j : all) {
    known_.insert(j.episode_index);
    // In scope: the episodes asked for, every episode that still has data, and every job
    // not yet settled (an episode deleted locally after it was enqueued is found in Pack).
    const bool asked = only_.empty() || only_.count(j.episode_index);
    if (!asked || jobs_.count(j.id)) continue;  // a worker's copy is newer
    if (!with_data.count(j.episode_index) && upload::IsSettled(j.state) && j.state != JobState::kConfirmed) continue;
    if (upload::IsSettled(j.state)) present_before_[j.id] = true;
    if (j.state == JobState::kCommitted) Emit(j, "enqueued", "");
    jobs_[j.id] = std::move(j);
  }
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    Job& j = it->second;
    if (j.state == JobState::kConfirmed && !with_data.count(j.episode_index) && !running_.count(j.id)) {
      // Deleted after the confirmation (a kill between the delete and its record, or
      // `reel delete`): there is nothing left to prune.
      j.state = JobState::kPruned;
      if (Status st = box_->Save(j); !st.ok()) return st;
      if (present_before_.count(j.id)) {  // pruned before this run: out of its scope
        it = jobs_.erase(it);
        continue;
      }
    }
    ++it;
  }
  cv_.notify_all();
  return Status::OK();
}

// The next job to step: ready (not backing off, not given up), not held by a worker;
// the smallest first so that one big episode never holds back the rest.
bool Drain::PickLocked(Job* out) {
  const double now = Now();
  const Job* best = nullptr;
  for (const auto& [id, j] : jobs_) {
    if (running_.count(id) || gave_up_.count(id) || j.next_try > now) continue;
    // An imported job whose server had no proof is asked again once its wait is over.
    const bool work = !upload::IsSettled(j.state) ||
                      (j.state == JobState::kConfirmed && o_.delete_after == DeleteAfter::kConfirmed);
    if (!work) continue;
    if (!best || j.bytes < best->bytes || (j.bytes == best->bytes && j.episode_index < best->episode_index))
      best = &j;
  }
  if (!best) return false;
  *out = *best;
  running_.insert(best->id);
  return true;
}

// Without --watch the run ends when no job has work left in it: settled, given up, or
// imported by a server that cannot prove what it holds.
bool Drain::FinishedLocked() const {
  if (o_.watch || !running_.empty()) return false;
  for (const auto& [id, j] : jobs_) {
    if (gave_up_.count(id)) continue;
    if (j.state == JobState::kImported && j.proof_unavailable) continue;
    if (j.state == JobState::kConfirmed && o_.delete_after == DeleteAfter::kConfirmed) return false;
    if (!upload::IsSettled(j.state)) return false;
  }
  return true;
}

void Drain::Emit(const Job& job, const char* event, const std::string& detail, const std::string& rule) {
  if (!o_.events) return;
  UploadEvent e;
  e.time = Now();
  e.episode_index = job.episode_index;
  e.event = event;
  e.state = upload::JobStateName(job.state);
  e.sent = job.sent;
  e.total = job.zip_bytes;
  e.attempt = job.attempts + 1;
  e.detail = detail;
  e.rule = rule;
  std::lock_guard<std::mutex> g(events_mu_);
  o_.events(e);
}

void Drain::Save(Job& job, const char* event, const std::string& detail) {
  if (Status st = box_->Save(job); !st.ok()) {
    // The database is the only memory across kills: without it, stop rather than go on
    // with work nobody will remember.
    Emit(job, "outbox_error", st.message());
    stop_ = true;
    return;
  }
  if (event) Emit(job, event, detail, job.rule);
}

void Drain::Backoff(Job& job, const Status& why, double retry_after_s) {
  ++job.attempts;
  job.last_error = why.message();
  job.rule = why.rule();
  job.next_try = Now() + FullJitter(o_, job.attempts, retry_after_s);
  (void)box_->Count("retries");
  Save(job, "retry", why.message());
  std::lock_guard<std::mutex> g(mu_);
  if (!o_.watch && ++run_failures_[job.id] >= std::max(1, o_.upload.max_attempts)) {
    gave_up_[job.id] = Status(why.code(), why.message() + " (gave up after " + std::to_string(run_failures_[job.id]) +
                                              " attempts)").WithRule(why.rule());
    Emit(job, "gave_up", why.message(), why.rule());
  }
}

void Drain::Settle(Job& job, JobState state, const Status& why) {
  job.state = state;
  job.last_error = why.message();
  job.rule = why.rule();
  job.tus_location.clear();
  ::unlink(box_->SlicePath(job).c_str());
  (void)box_->Count(upload::JobStateName(state));
  Save(job, upload::JobStateName(state), why.message());
}

void Drain::Pack(Job& job) {
  const std::string ep = "episode " + std::to_string(job.episode_index);
  if (o_.upload.precompress) {
    // Re-encoding takes the cores a recording needs: not while an episode is being recorded.
    auto live = internal::LiveReservations(fs_, root_);
    if (!live.ok() || !live->empty()) {
      job.next_try = Now() + 5;
      Save(job, nullptr);
      return;
    }
  }
  job.state = JobState::kPacking;
  Save(job, nullptr);
  TaskOptions to;
  to.fs = fs_;
  to.io_threads = 1;
  auto task = Task::Open(root_, to);
  if (!task.ok()) return Backoff(job, task.status(), -1);
  auto e = (*task)->FindEpisode(job.episode_index);
  if (!e.ok() || e->data_path.empty()) {
    if (e.ok() || e.status().code() == StatusCode::kNotFound)
      return Settle(job, JobState::kRejected,
                    Status::NotFound(ep + " was deleted locally before it was uploaded").WithRule("local.deleted"));
    return Backoff(job, e.status(), -1);
  }
  auto group = DigestFileGroup(**task, *e);
  if (!group.ok()) return Backoff(job, group.status().WithContext(ep), -1);
  PackOptions pack;
  pack.task_fs = fs_;
  pack.output_fs = fs_;
  pack.precompress = o_.upload.precompress;
  pack.replace_existing = true;
  const std::string zip = box_->SlicePath(job);
  auto packed = PackEpisode(root_, job.episode_index, zip, pack);
  if (!packed.ok()) return Backoff(job, packed.status().WithContext(ep + ": pack"), -1);
  auto sum = DigestFile(fs_, box_->dir(), "slices/" + BaseName(zip));
  if (!sum.ok()) return Backoff(job, sum.status(), -1);
  nlohmann::json recompressed = nlohmann::json::object();
  for (const PackedEntry& p : packed->entries)
    if (p.recompressed) recompressed[p.arcname] = p.size;
  job.digest = GroupDigest(*group);
  nlohmann::json files = nlohmann::json::array();
  for (const FileDigest& d : *group) files.push_back({d.role, d.path, d.size, d.sha256});
  job.files = files.dump();
  job.zip_bytes = sum->size;
  job.zip_sha256 = sum->sha256;
  job.recompressed = recompressed.dump();
  job.tus_location.clear();
  job.sent = 0;
  job.state = JobState::kSending;
  {
    std::lock_guard<std::mutex> g(mu_);
    verified_.insert(job.id);
  }
  (void)box_->Count("packed");
  Save(job, "packed");
}

void Drain::Send(upload::HttpSession& http, Job& job) {
  const std::string ep = "episode " + std::to_string(job.episode_index);
  const std::string zip = box_->SlicePath(job);
  bool verified;
  {
    std::lock_guard<std::mutex> g(mu_);
    verified = verified_.count(job.id) > 0;
  }
  if (!verified) {
    // A slice kept from an earlier run is sent only when it is still the one recorded:
    // a lost or changed file is packed again, and a resumable upload of the old bytes
    // is abandoned (the server expires it).
    auto sum = DigestFile(fs_, box_->dir(), "slices/" + BaseName(zip));
    if (!sum.ok() || sum->sha256 != job.zip_sha256 || sum->size != job.zip_bytes) {
      job.state = JobState::kCommitted;
      job.tus_location.clear();
      Save(job, "repack", sum.ok() ? "the kept slice changed" : sum.status().message());
      return;
    }
    std::lock_guard<std::mutex> g(mu_);
    verified_.insert(job.id);
  }
  auto file = fs_->OpenRandomAccess(zip);
  if (!file.ok()) return Backoff(job, file.status(), -1);
  upload::Slice slice;
  slice.file = *file;
  slice.size = job.zip_bytes;
  slice.name = o_.upload.name.empty() ? upload::TaskDirName(root_) : o_.upload.name;
  slice.filename = slice.name + ".zip";
  slice.episode_index = job.episode_index;
  slice.project_id = o_.upload.project_id;

  const bool resumable = slice.size > o_.upload.resumable_threshold;
  uint64_t last_reported = 0, resumed_from = 0;
  bool first = true;
  auto sent = [&](uint64_t bytes) {
    // The resumable protocol first reports the offset it resumes at: bytes sent earlier.
    if (first && resumable) last_reported = resumed_from = bytes;
    first = false;
    if (bytes > last_reported) limiter_.Take(bytes - last_reported);
    last_reported = std::max(last_reported, bytes);
    if (o_.upload.progress)
      o_.upload.progress(UploadProgress{job.episode_index, std::min(bytes, slice.size), slice.size, job.attempts + 1});
  };
  Emit(job, "sending", "");
  upload::AttemptResult r;
  if (resumable) {
    upload::TusState tus;
    tus.location = job.tus_location;
    auto last_save = std::chrono::steady_clock::now();
    tus.saved = [&](const std::string& location, uint64_t offset) {
      // At most every 8 MiB or 1 s: a kill re-sends no more than that (HEAD says where).
      const auto now = std::chrono::steady_clock::now();
      const bool due = location != job.tus_location || offset >= job.sent + (8ull << 20) ||
                       now - last_save >= std::chrono::seconds(1) || offset == slice.size;
      job.tus_location = location;
      job.sent = offset;
      if (due) {
        last_save = now;
        Save(job, nullptr);
      }
    };
    r = upload::TusUpload(http, tus, slice, o_.upload.chunk_bytes, sent);
    // A server without the resumable protocol (the reference collector's) answers its
    // creation 404 or 405: the slice goes as one multipart upload instead.
    const int status = r.failure.http_status;
    if (!r.imported && tus.location.empty() && (status == 404 || status == 405)) {
      Emit(job, "no_resumable", r.failure.status.message());
      r = upload::PostMultipart(http, slice, sent);
    }
  } else {
    r = upload::PostMultipart(http, slice, sent);
  }
  (void)box_->Count("bytes_sent", static_cast<int64_t>(last_reported - resumed_from));
  if (!r.imported) {
    const upload::Failure& f = r.failure;
    if (f.http_status == 409) return Settle(job, JobState::kConflict, f.status.WithContext(ep));
    if (!f.retryable) {
      if (f.status.code() == StatusCode::kPermissionDenied) {  // the credentials, not the episode
        std::lock_guard<std::mutex> g(mu_);
        gave_up_[job.id] = f.status.WithContext(ep);
        if (o_.watch) stop_ = true;
        return;
      }
      return Settle(job, JobState::kRejected, f.status.WithContext(ep));
    }
    // Before sending again: did the failed attempt land? A failed check is no answer.
    upload::LandedAnswer landed = upload::CheckLanded(http, slice.name, job.episode_index);
    if (!landed.ok || !landed.session_id) return Backoff(job, f.status.WithContext(ep), f.retry_after_s);
    r = upload::AttemptResult::Ok(upload::Imported{*landed.session_id, true});
  }
  job.session_id = r.imported->session_id;
  job.sent = job.zip_bytes;
  job.state = JobState::kImported;
  job.last_error.clear();
  job.rule.clear();
  job.next_try = 0;
  (void)box_->Count(r.imported->already_present ? "already_present" : "imported");
  if (r.imported->already_present) {
    std::lock_guard<std::mutex> g(mu_);
    already_present_.insert(job.id);
  }
  Save(job, "imported", r.imported->already_present ? "already present" : "");
}

// The packed sizes of entries precompress re-encoded (Job::recompressed).
std::map<std::string, uint64_t> RecompressedOf(const Job& job) {
  std::map<std::string, uint64_t> out;
  if (job.recompressed.empty()) return out;
  auto j = internal::ParseJson(job.recompressed, "upload outbox");  // bounded: a task's file
  if (j.ok() && j->is_object())
    for (auto& [k, v] : j->items())
      if (v.is_number_unsigned()) out[k] = v.get<uint64_t>();
  return out;
}

// The digests recorded when the job was packed (Job::files); empty when unreadable.
std::vector<FileDigest> PackedDigests(const Job& job) {
  std::vector<FileDigest> out;
  if (job.files.empty()) return out;
  auto j = internal::ParseJson(job.files, "upload outbox");  // bounded: a task's file
  if (!j.ok() || !j->is_array()) return {};
  for (const auto& f : *j) {
    if (!f.is_array() || f.size() != 4 || !f[0].is_string() || !f[1].is_string() || !f[2].is_number_unsigned() ||
        !f[3].is_string())
      return {};
    out.push_back({f[0].get<std::string>(), f[1].get<std::string>(), f[2].get<uint64_t>(), f[3].get<std::string>()});
  }
  return out;
}

// imported -> confirmed: the server's digests against those of the bytes sent.
void Drain::Prove(upload::HttpSession& http, Job& job) {
  const std::vector<FileDigest> packed = PackedDigests(job);
  upload::Proof p = packed.empty()
                        ? upload::CheckHeld(http, root_, project_, job.episode_index, RecompressedOf(job), fs_)
                        : upload::CompareHeld(http, project_, job.episode_index, packed, RecompressedOf(job));
  const std::string ep = "episode " + std::to_string(job.episode_index);
  switch (p.kind) {
    case upload::Proof::kHeld:
      job.confirmed_at = Now();
      job.proof_unavailable = false;
      Settle(job, JobState::kConfirmed, Status::OK());
      return;
    case upload::Proof::kDiffers:
      return Settle(job, JobState::kConflict, p.detail.WithContext(ep + ": the proof failed"));
    case upload::Proof::kNoEndpoint:
    case upload::Proof::kNoLocalData:
      job.proof_unavailable = true;
      job.last_error = p.kind == upload::Proof::kNoLocalData
                           ? "deleted here before the proof: " + p.detail.message()
                           : "the server cannot prove what it holds: " + p.detail.message();
      // Asked again now and then (a server may be upgraded); nothing is deleted meanwhile.
      job.next_try = Now() + o_.backoff_max_s;
      ::unlink(box_->SlicePath(job).c_str());
      Save(job, "no_proof", job.last_error);
      return;
    case upload::Proof::kFailed:
      if (!p.failure.retryable) {
        std::lock_guard<std::mutex> g(mu_);
        gave_up_[job.id] = p.failure.status.WithContext(ep);
        return;
      }
      return Backoff(job, p.failure.status.WithContext(ep + ": proof"), p.failure.retry_after_s);
  }
}

// A confirmed episode's data and videos go only after the server proved, just now, that
// it holds the same bytes (the first proof may be hours old, and files can change).
void Drain::Prune(upload::HttpSession& http, Job& job) {
  const std::string ep = "episode " + std::to_string(job.episode_index);
  upload::Proof p = upload::CheckHeld(http, root_, project_, job.episode_index, RecompressedOf(job), fs_);
  if (p.kind == upload::Proof::kNoLocalData) {  // deleted already (a kill after the delete)
    job.state = JobState::kPruned;
    return Save(job, "pruned", "already deleted here");
  }
  if (p.kind == upload::Proof::kDiffers)  // the files here or there changed since the proof
    return Settle(job, JobState::kConflict, p.detail.WithContext(ep + ": confirmed earlier, not deleted"));
  if (p.kind != upload::Proof::kHeld) {
    const Status why = p.kind == upload::Proof::kFailed ? p.failure.status : p.detail;
    return Backoff(job, why.WithContext(ep + ": not deleted (no proof)"), p.failure.retry_after_s);
  }
  if (Status st = DeleteEpisode(root_, job.episode_index, fs_); !st.ok())
    return Backoff(job, st.WithContext(ep + ": confirmed but the delete failed"), -1);
  job.state = JobState::kPruned;
  job.last_error.clear();
  (void)box_->Count("pruned");
  Save(job, "pruned");
}

void Drain::Step(upload::HttpSession& http, Job& job) {
  switch (job.state) {
    case JobState::kCommitted:
    case JobState::kPacking:
      return Pack(job);
    case JobState::kSending:
      return Send(http, job);
    case JobState::kImported:
      return Prove(http, job);
    case JobState::kConfirmed:
      return Prune(http, job);
    default:
      return;
  }
}

// The uploader yields to the recorder: its worker threads run at nice 10 and in the lowest
// best-effort I/O class (Linux: both are per thread). Failure to lower is harmless.
void LowerPriority() {
  const pid_t tid = static_cast<pid_t>(::syscall(SYS_gettid));
  (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(tid), 10);
  constexpr int kIoprioWhoProcess = 1, kIoprioClassBe = 2, kIoprioClassShift = 13;
  (void)::syscall(SYS_ioprio_set, kIoprioWhoProcess, tid, (kIoprioClassBe << kIoprioClassShift) | 7);
}

void Drain::Worker() {
  LowerPriority();
  auto http = upload::HttpSession::Open(upload::HttpOptionsOf(o_.upload));
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> g(mu_);
      for (;;) {
        if (stop_.load() || FinishedLocked()) {
          cv_.notify_all();
          return;
        }
        if (PickLocked(&job)) break;
        cv_.wait_for(g, std::chrono::milliseconds(200));
        if (o_.should_stop && o_.should_stop()) stop_ = true;
      }
    }
    if (!http.ok()) {
      std::lock_guard<std::mutex> g(mu_);
      gave_up_[job.id] = http.status();
      running_.erase(job.id);
      continue;
    }
    try {  // nothing thrown below (httplib, std::filesystem) escapes the library
      Step(**http, job);
    } catch (const std::exception& e) {
      Backoff(job, Status::IOError("episode " + std::to_string(job.episode_index) + ": upload: " + e.what()), -1);
    }
    std::lock_guard<std::mutex> g(mu_);
    jobs_[job.id] = job;
    running_.erase(job.id);
    cv_.notify_all();
  }
}

// Deletes confirmed episodes oldest-first while the task's file system has less free
// space than min_free_bytes; each is proved again right before (Prune).
void Drain::PruneForSpace(upload::HttpSession& http) {
  if (o_.min_free_bytes == 0) return;
  std::vector<Job> confirmed;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (const auto& [id, j] : jobs_)
      if (j.state == JobState::kConfirmed && !running_.count(id)) confirmed.push_back(j);
  }
  std::sort(confirmed.begin(), confirmed.end(),
            [](const Job& a, const Job& b) { return a.confirmed_at < b.confirmed_at; });
  for (Job& j : confirmed) {
    struct statvfs vfs {};
    if (::statvfs(root_.c_str(), &vfs) != 0) return;
    if (static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize >= o_.min_free_bytes) return;
    Prune(http, j);
    std::lock_guard<std::mutex> g(mu_);
    if (!running_.count(j.id)) jobs_[j.id] = j;
  }
}

// --watch: wakes on changes in meta/ (every commit renames info.json into it), at the
// latest every rescan_s, and syncs the outbox with the task.
void Drain::WatchLoop() {
  int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd >= 0 &&
      ::inotify_add_watch(fd, JoinPath(root_, "meta").c_str(), IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE) < 0) {
    ::close(fd);
    fd = -1;
  }
  // Without inotify (a network file system, the watch limit reached) only the rescan finds
  // new episodes: said, so that a slow pick-up has a visible reason.
  if (fd < 0) Emit(Job{}, "no_inotify", std::string("only a rescan every ") + std::to_string(o_.rescan_s) + " s");
  auto http = upload::HttpSession::Open(upload::HttpOptionsOf(o_.upload));
  auto next_rescan = std::chrono::steady_clock::now();
  while (!Stopping()) {
    pollfd p{fd, POLLIN, 0};
    const int ready = fd >= 0 ? ::poll(&p, 1, 200) : (std::this_thread::sleep_for(std::chrono::milliseconds(200)), 0);
    bool changed = false;
    if (ready > 0) {
      char buf[4096];
      while (::read(fd, buf, sizeof buf) > 0) changed = true;
    }
    if (changed || std::chrono::steady_clock::now() >= next_rescan) {
      next_rescan = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(static_cast<int64_t>(1000 * std::max(0.2, o_.rescan_s)));
      if (Status st = Sync(); !st.ok()) Emit(Job{}, "rescan_failed", st.message());
      if (http.ok()) PruneForSpace(**http);
    }
  }
  stop_ = true;
  cv_.notify_all();
  if (fd >= 0) ::close(fd);
}

// Slices of jobs that no longer send (and pack's leftovers of a killed run) go: the
// outbox holds at most one slice per job in flight.
void Drain::SweepSlices() {
  std::set<std::string> keep;
  {
    auto all = box_->Jobs();
    if (!all.ok()) return;
    for (const Job& j : *all)
      if (j.state == JobState::kSending) keep.insert(BaseName(box_->SlicePath(j)));
  }
  const std::string dir = JoinPath(box_->dir(), "slices");
  auto entries = fs_->ListDir(dir);
  if (!entries.ok()) return;
  for (const DirEntry& e : *entries)
    if (!keep.count(e.name)) (void)fs_->RemoveFile(JoinPath(dir, e.name));
}

// Asks the server once, before anything is packed or sent, whether it takes these
// credentials (the landed check, a small GET): a 401 or 403 there is final. Any other
// answer, a transport error included, is left to the jobs (retried as usual).
Status Drain::CredentialsRefused() {
  int64_t first = 0;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (const auto& [id, j] : jobs_)
      if (!upload::IsSettled(j.state)) {
        first = j.episode_index;
        break;
      }
  }
  if (first == 0) return Status::OK();
  auto http = upload::HttpSession::Open(upload::HttpOptionsOf(o_.upload));
  if (!http.ok()) return http.status();
  const std::string name = o_.upload.name.empty() ? upload::TaskDirName(root_) : o_.upload.name;
  upload::LandedAnswer landed = upload::CheckLanded(**http, name, first);
  if (landed.ok || landed.failure.status.code() != StatusCode::kPermissionDenied) return Status::OK();
  return landed.failure.status.WithContext("credentials refused before any slice was sent");
}

std::vector<EpisodeUploadResult> Drain::Outcomes() {
  std::vector<EpisodeUploadResult> out;
  std::vector<const Job*> by_n;
  for (const auto& [id, j] : jobs_) by_n.push_back(&j);
  std::sort(by_n.begin(), by_n.end(), [](const Job* a, const Job* b) { return a->episode_index < b->episode_index; });
  for (const Job* j : by_n) {
    const std::string ep = "episode " + std::to_string(j->episode_index);
    if (auto g = gave_up_.find(j->id); g != gave_up_.end()) {
      out.push_back({j->episode_index, g->second});
      continue;
    }
    const bool done = j->state == JobState::kConfirmed || j->state == JobState::kPruned ||
                      (j->state == JobState::kImported && j->proof_unavailable);
    if (j->state == JobState::kRejected || j->state == JobState::kConflict) {
      out.push_back({j->episode_index, Status::Invalid(j->last_error).WithRule(j->rule)});
      continue;
    }
    if (!done) {
      out.push_back({j->episode_index, Status::IOError(ep + ": not uploaded yet (" + upload::JobStateName(j->state) +
                                                       ")" + (j->last_error.empty() ? "" : ": " + j->last_error))});
      continue;
    }
    if (o_.delete_after == DeleteAfter::kConfirmed && j->state != JobState::kPruned) {
      out.push_back({j->episode_index, Status::Invalid(ep + ": uploaded as session " + j->session_id +
                                                       " but not deleted: " +
                                                       (j->last_error.empty() ? "no proof yet" : j->last_error))});
      continue;
    }
    UploadOutcome u;
    u.episode_index = j->episode_index;
    u.session_id = j->session_id;
    u.already_present = present_before_.count(j->id) > 0 || already_present_.count(j->id) > 0;
    u.attempts = present_before_.count(j->id) ? 0 : run_failures_[j->id] + 1;
    u.resumable = j->zip_bytes > o_.upload.resumable_threshold;
    u.deleted = j->state == JobState::kPruned;
    u.bytes = j->zip_bytes;
    out.push_back({j->episode_index, u});
  }
  return out;
}

Result<std::vector<EpisodeUploadResult>> Drain::Run() {
  REEL_RETURN_IF_ERROR(Sync());
  SweepSlices();
  if (Status refused = CredentialsRefused(); !refused.ok()) {
    // A 401 or 403 is the credentials', not an episode's: nothing is packed or sent.
    std::lock_guard<std::mutex> g(mu_);
    for (const auto& [id, j] : jobs_)
      if (!upload::IsSettled(j.state)) gave_up_[id] = refused.WithContext("episode " + std::to_string(j.episode_index));
    return Outcomes();
  }
  if (o_.watch) Emit(Job{}, "watching", root_);
  std::vector<std::thread> workers;
  for (int i = 0; i < std::max(1, o_.parallel); ++i) workers.emplace_back([this] { Worker(); });
  if (o_.watch) WatchLoop();
  for (std::thread& t : workers) t.join();
  if (!o_.watch && o_.min_free_bytes > 0) {
    if (auto http = upload::HttpSession::Open(upload::HttpOptionsOf(o_.upload)); http.ok()) PruneForSpace(**http);
  }
  std::lock_guard<std::mutex> g(mu_);
  return Outcomes();
}

}  // namespace

Result<std::vector<EpisodeUploadResult>> DrainOutbox(const std::string& task_root,
                                                       const std::vector<int64_t>& episode_indices,
                                                       const OutboxOptions& options) {
  auto box = Outbox::Open(task_root, /*create=*/true);
  if (!box.ok() && box.status().code() == StatusCode::kPermissionDenied && !options.watch) {
    // A task this user may not write (an archive, a read-only mount) has no outbox: it is
    // uploaded once, as before the outbox (nothing remembered, nothing deleted).
    if (options.events) {
      UploadEvent e;
      e.event = "no_outbox";
      e.detail = box.status().message();
      options.events(e);
    }
    if (options.delete_after != DeleteAfter::kKeep || options.min_free_bytes > 0)
      return box.status().WithContext("deleting after upload needs the outbox");
    std::vector<int64_t> todo = episode_indices;
    if (todo.empty()) {
      REEL_ASSIGN_OR_RETURN(todo, EpisodesToUpload(task_root, options.upload.fs));
    }
    std::vector<Result<UploadOutcome>> once = UploadEpisodes(task_root, todo, options.upload);
    std::vector<EpisodeUploadResult> out;
    for (size_t i = 0; i < todo.size() && i < once.size(); ++i) out.push_back({todo[i], std::move(once[i])});
    return out;
  }
  if (!box.ok()) return box.status();
  REEL_RETURN_IF_ERROR((*box)->Lock());
  Drain drain(task_root, episode_indices, options, box->get());
  return drain.Run();
}

Result<OutboxStatus> ReadOutboxStatus(const std::string& task_root) {
  REEL_ASSIGN_OR_RETURN(auto box, Outbox::Open(task_root, /*create=*/false));
  REEL_ASSIGN_OR_RETURN(std::vector<Job> jobs, box->Jobs());
  OutboxStatus out;
  const double now = Now();
  for (const Job& j : jobs) {
    OutboxEntry e;
    e.server = j.server;
    e.project = j.project;
    e.episode_index = j.episode_index;
    e.state = upload::JobStateName(j.state);
    e.digest = j.digest;
    e.bytes = j.bytes;
    e.zip_bytes = j.zip_bytes;
    e.sent = j.sent;
    e.attempts = j.attempts;
    e.last_error = j.last_error;
    e.rule = j.rule;
    e.session_id = j.session_id;
    e.age_s = now - j.created;
    e.next_try_in_s = std::max(0.0, j.next_try - now);
    out.entries.push_back(std::move(e));
  }
  REEL_ASSIGN_OR_RETURN(out.counters, box->Counters());
  return out;
}

}  // namespace reel
