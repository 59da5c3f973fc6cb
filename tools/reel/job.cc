// What long jobs share in the CLI: progress on stderr, and scratch removed when
// interrupted.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <thread>

#include "cli.h"
#include "reel/fs.h"

namespace reel::cli {
namespace {

// Redraws at most ten times a second, and always the last update of a stage.
class ProgressRenderer {
 public:
  explicit ProgressRenderer(bool json) : json_(json) {}
  void Update(const Progress& p) {
    const auto now = std::chrono::steady_clock::now();
    const bool last = p.total > 0 && p.done >= p.total;
    if (!last && p.stage == stage_ && now - shown_ < std::chrono::milliseconds(100)) return;
    if (p.stage != stage_ && open_line_) std::cerr << "\n";
    stage_ = p.stage;
    shown_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    if (json_) {
      std::cerr << Json{{"progress", p.stage}, {"done", p.done}, {"total", p.total}, {"item", p.item},
                        {"elapsed_s", elapsed}}
                       .dump(-1, ' ', false, Json::error_handler_t::replace)
                << std::endl;
      return;
    }
    std::cerr << "\r" << p.stage << ": " << p.done;
    if (p.total > 0) std::cerr << "/" << p.total;
    if (!p.item.empty()) std::cerr << "  (" << p.item << ")";
    std::cerr << "\033[K" << (last ? "\n" : "") << std::flush;
    open_line_ = !last;
  }
  ~ProgressRenderer() {
    if (open_line_) std::cerr << std::endl;
  }

 private:
  bool json_;
  std::string stage_;
  bool open_line_ = false;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point shown_{};
};

// Waits for SIGINT, SIGTERM or SIGHUP; removes the scratch the job holds, then ends
// the process by that same signal.
void WatchInterrupts(sigset_t signals) {
  int signal = 0;
  if (sigwait(&signals, &signal) != 0) return;
  const int removed = RemoveOpenScratchDirs();
  std::cerr << "\nreel: interrupted (" << strsignal(signal) << "); removed " << removed
            << " scratch director" << (removed == 1 ? "y" : "ies") << std::endl;
  ::signal(signal, SIG_DFL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, signal);
  pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
  pthread_kill(pthread_self(), signal);
  _exit(128 + signal);  // not reached: the default action ends the process
}

}  // namespace

void AddProgressOption(CLI::App* cmd, std::string& mode) {
  cmd->add_option("--progress", mode,
                  "auto: progress on stderr when it is a terminal; json: one JSON line per update on "
                  "stderr; none")
      ->check(CLI::IsMember({"auto", "json", "none"}))
      ->capture_default_str();
}

ProgressFn MakeProgress(const std::string& mode) {
  if (mode == "none" || (mode == "auto" && ::isatty(STDERR_FILENO) != 1)) return {};
  auto renderer = std::make_shared<ProgressRenderer>(mode == "json");
  return [renderer](const Progress& p) { renderer->Update(p); };
}

void RemoveScratchOnInterrupt() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&signals, s);
  // Blocked here before any worker thread exists, so every thread inherits it and
  // only the watcher receives these signals.
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::thread(WatchInterrupts, signals).detach();
}

}  // namespace reel::cli
