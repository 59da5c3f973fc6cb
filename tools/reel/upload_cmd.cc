// reel upload: send episodes to an import server (include/reel/upload.h).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "cli.h"
#include "reel/index_list.h"
#include "reel/jobs.h"

namespace reel::cli {
namespace {

struct UploadArgs {
  std::string task;
  std::vector<std::string> episodes;  // each "7" or "1,3,5-9"; positional
  std::string episodes_flag;          // --episodes
  std::string token_file, password_file;
  std::string user;
  bool no_progress = false, json = false;
  std::string progress = "auto";  // auto: the bar (terminal) or a line every 5 s; json; none
  bool status = false, prometheus = false;
  std::string delete_after = "keep";
  std::string events_path;  // JSON lines, appended
  OutboxOptions outbox;
};

// The first line of a secret file, without surrounding whitespace.
Result<std::string> ReadSecret(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(std::string(what) + " file '" + path + "' cannot be read");
  std::string line;
  std::getline(in, line);
  const size_t b = line.find_first_not_of(" \t\r\n");
  const size_t e = line.find_last_not_of(" \t\r\n");
  if (b == std::string::npos) return Status::Invalid(std::string(what) + " file '" + path + "' is empty");
  return line.substr(b, e - b + 1);
}

std::string Mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

// Progress on stderr: a bar redrawn in place on a terminal, otherwise a plain line at
// most every few seconds (and at 100%), so logs stay readable.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(bool tty) : tty_(tty) {}
  void Update(const UploadProgress& p) {
    const auto now = std::chrono::steady_clock::now();
    const bool done = p.total > 0 && p.sent >= p.total;
    const double pct = p.total ? 100.0 * static_cast<double>(p.sent) / static_cast<double>(p.total) : 100.0;
    char head[96];
    std::snprintf(head, sizeof head, "episode %lld%s", static_cast<long long>(p.episode_index),
                  p.attempt > 1 ? (" (attempt " + std::to_string(p.attempt) + ")").c_str() : "");
    // 100% is reported more than once (last block sent, then confirmed): print it once.
    const std::pair<int64_t, int> key{p.episode_index, p.attempt};
    if (done && done_key_ == key) return;
    if (done) done_key_ = key;
    if (tty_) {
      if (open_line_ && bar_key_ != key) EndLine();  // the previous attempt stopped part-way
      bar_key_ = key;
      if (!done && now - last_ < std::chrono::milliseconds(100)) return;
      constexpr int kWidth = 30;
      const int fill = static_cast<int>(pct / 100.0 * kWidth);
      std::cerr << "\r" << head << " [" << std::string(fill, '#') << std::string(kWidth - fill, ' ') << "] "
                << static_cast<int>(pct) << "% " << Mib(p.sent) << " / " << Mib(p.total) << "\033[K";
      if (done) std::cerr << "\n";
      std::cerr.flush();
      open_line_ = !done;
    } else {
      if (!done && now - last_ < std::chrono::seconds(5)) return;
      std::cerr << head << ": " << static_cast<int>(pct) << "% (" << Mib(p.sent) << " of " << Mib(p.total)
                << ")\n";
    }
    last_ = now;
  }
  // Ends a bar left unfinished (an episode that failed part-way) before the results.
  void EndLine() {
    if (open_line_) std::cerr << "\n";
    open_line_ = false;
  }

 private:
  bool tty_;
  std::chrono::steady_clock::time_point last_{};
  std::pair<int64_t, int> done_key_{-1, 0};
  std::pair<int64_t, int> bar_key_{-1, 0};
  bool open_line_ = false;
};

// reel upload --status: the outbox, one line (or JSON object) per job, or Prometheus text.
int PrintStatus(const UploadArgs& a) {
  auto st = ReadOutboxStatus(a.task);
  if (!st.ok()) return Fail(st.status());
  if (a.prometheus) {
    std::map<std::string, int64_t> by_state;
    uint64_t pending_bytes = 0;
    for (const OutboxEntry& e : st->entries) {
      ++by_state[e.state];
      if (e.state == "committed" || e.state == "packing" || e.state == "sending") pending_bytes += e.bytes - std::min(e.bytes, e.sent);
    }
    std::cout << "# HELP reel_upload_jobs Jobs in the task's upload outbox by state.\n# TYPE reel_upload_jobs gauge\n";
    for (const char* s : {"committed", "packing", "sending", "imported", "confirmed", "pruned", "rejected", "conflict"})
      std::cout << "reel_upload_jobs{state=\"" << s << "\"} " << by_state[s] << "\n";
    std::cout << "# HELP reel_upload_pending_bytes Bytes of episodes not yet imported.\n# TYPE reel_upload_pending_bytes gauge\n"
              << "reel_upload_pending_bytes " << pending_bytes << "\n";
    for (const auto& [name, value] : st->counters)
      std::cout << "# TYPE reel_upload_" << name << "_total counter\nreel_upload_" << name << "_total " << value << "\n";
    return kExitOk;
  }
  if (a.json) {
    std::cout << ToJson(*st) << "\n";
    return kExitOk;
  }
  for (const OutboxEntry& e : st->entries) {
    std::cout << "episode " << e.episode_index << ": " << e.state;
    if (e.state == "sending") std::cout << " " << Mib(e.sent) << " of " << Mib(e.zip_bytes);
    if (e.attempts) std::cout << ", " << e.attempts << (e.attempts == 1 ? " failed attempt" : " failed attempts");
    if (e.next_try_in_s > 0) std::cout << ", next try in " << static_cast<int64_t>(e.next_try_in_s + 0.5) << " s";
    if (!e.last_error.empty()) std::cout << ", last error" << (e.rule.empty() ? "" : " (rule " + e.rule + ")") << ": " << e.last_error;
    std::cout << " [" << e.server << " " << e.project << ", " << static_cast<int64_t>(e.age_s) << " s old]\n";
  }
  if (st->entries.empty()) std::cout << "the outbox is empty\n";
  return kExitOk;
}

int RunUpload(UploadArgs a) {
  if (a.status) {
    if (!a.outbox.watch) return PrintStatus(a);
    for (;;) {  // --status --watch: the table again every second, until interrupted
      std::cout << "\033[H\033[2J";
      if (int rc = PrintStatus(a); rc != kExitOk) return rc;
      std::cout.flush();
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  }
  if (a.outbox.upload.server.empty()) return UsageFail("upload needs --server (or --status)");
  UploadOptions& o = a.outbox.upload;
  if (o.token.empty() && !a.token_file.empty()) {
    auto t = ReadSecret(a.token_file, "--token-file");
    if (!t.ok()) return Fail(t.status());
    o.token = *t;
  }
  if (o.token.empty()) {
    const char* env = std::getenv("REEL_TOKEN");
    if (env) o.token = env;
  }
  if (!a.user.empty()) {
    if (a.password_file.empty()) return Fail(Status::Invalid("--user needs --password-file"));
    auto p = ReadSecret(a.password_file, "--password-file");
    if (!p.ok()) return Fail(p.status());
    o.username = a.user;
    o.password = *p;
  }
  std::vector<int64_t> todo;
  if (!a.episodes_flag.empty()) a.episodes.push_back(a.episodes_flag);
  for (const std::string& list : a.episodes) {
    auto parsed = ParseListFlag("episodes", list, true);
    if (!parsed.ok()) return UsageFail(parsed.status().message());
    todo.insert(todo.end(), parsed->begin(), parsed->end());
  }
  todo = DropRepeats(todo);
  if (a.delete_after == "confirmed") a.outbox.delete_after = DeleteAfter::kConfirmed;
  std::unique_ptr<std::ofstream> events;
  std::mutex events_mu;
  if (!a.events_path.empty()) {
    events = std::make_unique<std::ofstream>(a.events_path, std::ios::app);
    if (!*events) return Fail(Status::IOError("--events: cannot open " + a.events_path));
    a.outbox.events = [&events, &events_mu](const UploadEvent& e) {
      std::lock_guard<std::mutex> g(events_mu);
      *events << ToJson(e) << "\n";
      events->flush();
    };
  }
  std::unique_ptr<ProgressPrinter> printer;
  if (a.no_progress) a.progress = "none";
  if (a.progress == "json") {
    o.progress = [json = MakeProgress("json")](const UploadProgress& u) {
      const std::string attempt = u.attempt > 1 ? " attempt " + std::to_string(u.attempt) : "";
      json({"bytes sent", static_cast<int64_t>(u.sent), static_cast<int64_t>(u.total),
            "episode " + std::to_string(u.episode_index) + attempt});
    };
  } else if (a.progress == "auto") {
    printer = std::make_unique<ProgressPrinter>(::isatty(STDERR_FILENO) == 1);
    o.progress = [p = printer.get()](const UploadProgress& u) { p->Update(u); };
  }
  // The task's outbox: resumable, and nothing re-sent that the server confirmed.
  auto drained = DrainOutbox(a.task, todo, a.outbox);
  if (printer) printer->EndLine();
  if (!drained.ok()) return Fail(drained.status());
  std::vector<EpisodeUploadResult> results = std::move(*drained);
  bool all_ok = true;
  for (const EpisodeUploadResult& one : results) all_ok = all_ok && one.outcome.ok();
  if (a.json) {
    PrintJson(ToJson(results));
    return all_ok ? kExitOk : kExitUnreadable;
  }
  for (size_t i = 0; i < results.size(); ++i) {
    const Result<UploadOutcome>& r = results[i].outcome;
    const int64_t n = results[i].episode_index;
    if (!r.ok()) {
      std::string why = r.status().message();
      const std::string prefix = "episode " + std::to_string(n) + ": ";
      if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());  // said once is enough
      std::cout << prefix << "FAILED: " << why << "\n";
    } else {
      std::cout << "episode " << n << ": " << (r->already_present ? "already on the server" : "uploaded")
                << " as session " << r->session_id << " (" << r->bytes << " bytes, " << r->attempts
                << (r->attempts == 1 ? " attempt" : " attempts") << (r->resumable ? ", resumable" : "")
                << (r->deleted ? ", local data deleted" : "") << ")\n";
    }
  }
  if (results.empty()) std::cout << "nothing to upload\n";
  return all_ok ? kExitOk : kExitUnreadable;
}

}  // namespace

void AddUploadCommand(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<UploadArgs>();
  UploadOptions& o = a->outbox.upload;
  OutboxOptions& ob = a->outbox;
  auto* up = app.add_subcommand("upload", "Upload episodes to an import server (one zip slice each)");
  up->add_option("task", a->task, "task directory")->required();
  up->add_option("episodes", a->episodes,
                 "global episode numbers, e.g. 7 or 1,3,5-9 (default: every one that still has data)");
  up->add_option("--episodes", a->episodes_flag, "the same as the positional episodes");
  up->add_option("--server", o.server, "http(s)://host[:port] of the import server (all but --status)");
  auto* token = up->add_option("--token", o.token, "bearer token (or --token-file, or env REEL_TOKEN)");
  up->add_option("--token-file", a->token_file, "file whose first line is the bearer token")->excludes(token);
  auto* user = up->add_option("--user", a->user, "log in with this user name (session cookie)");
  up->add_option("--password-file", a->password_file, "file whose first line is the password")->needs(user);
  up->add_option("--project-id", o.project_id, "form field project_id (default: empty)");
  up->add_option("--name", o.name, "form field name (default: the task directory's name)");
  up->add_flag("--precompress", o.precompress, "re-encode RGB video to HEVC CRF 30 before packing");
  up->add_option("--delete-after", a->delete_after,
                 "keep (default) or confirmed: delete an episode's data and videos once the server proved it "
                 "holds the same bytes (--delete-after alone means confirmed)")
      ->expected(0, 1)
      ->default_str("confirmed")
      ->check(CLI::IsMember({"keep", "confirmed"}));
  up->add_flag("--watch", ob.watch,
               "keep running: upload each episode as it is committed, retry forever with backoff "
               "(with --status: show the outbox every second)");
  up->add_flag("--status", a->status, "show the task's upload outbox (per episode: state, bytes, attempts, error)");
  up->add_flag("--prometheus", a->prometheus, "with --status: Prometheus text (a node_exporter textfile)")
      ->needs("--status");
  up->add_option("--parallel", ob.parallel, "episodes sent at once, smallest first")
      ->capture_default_str()->check(CLI::Range(1, 16));
  up->add_option("--bwlimit", ob.bwlimit_bytes_per_s, "bytes per second for all uploads, e.g. 20M (default: none)")
      ->transform(CLI::AsSizeValue(false));
  up->add_option("--bwlimit-recording", ob.bwlimit_recording_bytes_per_s,
                 "bytes per second while an episode is being recorded in the task (default: --bwlimit)")
      ->transform(CLI::AsSizeValue(false));
  up->add_option("--min-free", ob.min_free_bytes,
                 "delete confirmed episodes oldest-first while the task's disk has less free space, e.g. 20G")
      ->transform(CLI::AsSizeValue(false));
  up->add_option("--events", a->events_path, "append one JSON line per job event to this file");
  up->add_option("--rescan", ob.rescan_s, "with --watch: list the task at least this often (seconds)")
      ->capture_default_str();
  up->add_option("--retries", o.max_attempts, "attempts per episode")->capture_default_str();
  up->add_option("--resumable-threshold", o.resumable_threshold,
                 "slices larger than this many bytes use the resumable protocol")
      ->capture_default_str();
  up->add_option("--chunk", o.chunk_bytes, "bytes per PATCH in the resumable protocol")->capture_default_str();
  up->add_option("--ca-cert", o.ca_cert_path, "extra CA bundle for https");
  up->add_flag("--no-progress", a->no_progress, "no progress on stderr (the same as --progress none)");
  AddProgressOption(up, a->progress);
  AddJsonFlag(up, a->json);
  up->callback([&exit_code, a] {
    RemoveScratchOnInterrupt();
    exit_code = RunUpload(*a);
  });
}

}  // namespace reel::cli
