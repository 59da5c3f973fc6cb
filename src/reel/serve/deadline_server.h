// Internal: cpp-httplib's Server with deadlines on each request's head and body, and
// the raw bytes of each request head (docs/serve.md "Slow clients").
//
// Why: httplib 0.11's read timeout bounds each recv, not a request. A client that
// trickles one header byte every few seconds holds a worker for as long as it likes,
// and `workers` such clients block every other request, /health included, without any
// credential (the gate runs only once the head is complete). httplib also %-decodes
// header values and cuts them at NUL, so a bearer token could not be compared exactly.
//
// How: httplib hands each accepted socket to the virtual process_and_close_socket on a
// worker thread. DeadlineServer overrides it with the same keep-alive loop over its own
// Stream (ConnStream), calling httplib's protected process_request for each request.
// The stream knows when a request began, so every read waits at most until the head
// deadline (`head_timeout_s`) while the head is read, and until the body deadline once
// the gate (pre-routing, on the same worker thread) has said how much body the request
// may send (RequestPhase::BodyAllowed). A read past a deadline fails: httplib ends the
// request and the connection is closed. The stream also caps the head at 64 KiB and
// makes a request without Content-Length or chunked encoding bodiless, as RFC 9112 §6.3
// says (httplib 0.11 would read such a body until the peer closes).
//
// Thread safety: a ConnStream belongs to the worker thread serving its connection;
// CurrentConnection() is that thread's stream while a request is being processed.
#pragma once

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <string>

namespace reel::serve {

using Clock = std::chrono::steady_clock;

struct ConnLimits {
  double head_timeout_s = 10;    // request line + headers, from the first byte
  double read_timeout_s = 30;    // one recv
  double write_timeout_s = 30;   // one send
  size_t max_head_bytes = 64 << 10;
  size_t per_address = 32;       // connections served at once from one address
};

// A counting semaphore: the requests processed at once (`workers`), as opposed to the
// connections being read (one thread each).
class Slots {
 public:
  explicit Slots(int n) : free_(n) {}
  void Acquire() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return free_ > 0; });
    --free_;
  }
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++free_;
    }
    cv_.notify_one();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int free_;
};

class ConnStream final : public httplib::Stream {
 public:
  static constexpr uint64_t kUnlimited = std::numeric_limits<uint64_t>::max();

  ConnStream(socket_t sock, const ConnLimits& limits, Slots* slots)
      : sock_(sock), limits_(limits), slots_(slots) {}
  ~ConnStream() override { ReleaseSlot(); }

  // Waits until a request's first byte is here (buffered or readable), at most
  // `idle_s`, checking `keep_going` every 100 ms. False on timeout, EOF or stop.
  bool WaitForRequest(double idle_s, const std::function<bool()>& keep_going);
  // A request begins: the head deadline starts now and the raw head is recorded.
  void BeginRequest();
  // The head is complete: from now on reads return at most `body_bytes` more bytes
  // (kUnlimited for chunked bodies, counted by the handler) until `deadline`.
  void BodyAllowed(uint64_t body_bytes, Clock::time_point deadline);

  // The connection ends after this request's answer. Said when a request is answered
  // without its body being read: the unread bytes would otherwise be parsed as the next
  // request (a refused upload logged four empty, malformed "requests").
  void CloseAfterRequest() { close_after_ = true; }
  // True when the connection must not serve another request: asked for, or a body
  // announced by Content-Length was not read to its end (chunked bodies cannot be told
  // apart from what follows them, so a connection never outlives one).
  bool must_close() const { return close_after_ || (!in_head_ && body_left_ != 0); }

  // Waits for one of the `workers` processing slots and holds it until the request
  // ends: called by the gate once a request's head is complete and accepted, so slow
  // heads and refused requests never take one.
  void HoldSlot();
  void ReleaseSlot();

  Clock::time_point request_start() const { return start_; }
  const std::string& head() const { return head_; }
  bool in_head() const { return in_head_; }
  bool timed_out() const { return timed_out_; }
  bool head_too_large() const { return head_too_large_; }

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return sock_; }

 private:
  // Receives into the empty buffer, waiting until the current deadline at most: the
  // bytes received, 0 when the peer closed, -1 on error or timeout (timed_out() tells
  // the deadline from one read's timeout).
  ssize_t Fill();

  socket_t sock_;
  ConnLimits limits_;
  Slots* slots_;
  bool holding_slot_ = false;
  std::string buffer_ = std::string(64 << 10, '\0');
  size_t off_ = 0, len_ = 0;
  Clock::time_point start_{};
  Clock::time_point deadline_{};
  bool in_head_ = false;
  uint64_t body_left_ = 0;
  std::string head_;
  bool timed_out_ = false;
  bool head_too_large_ = false;
  bool close_after_ = false;
};

// The stream of the request this thread is processing, or null.
ConnStream* CurrentConnection();

// Connections are read by the server's task queue (one thread each, `max_connections`
// of them, set through new_task_queue); requests are processed `workers` at a time
// (Slots). A connection from an address that already has `per_address` connections
// being served is answered 503 `limit.connections` and closed.
class DeadlineServer final : public httplib::Server {
 public:
  DeadlineServer(const ConnLimits& limits, int workers) : limits_(limits), slots_(workers) {}

  // Called on the worker thread as each request begins, before httplib reads it (and
  // so before any handler of it runs): per-request state is reset here, never left
  // over from the previous request on the thread.
  void set_request_begin(std::function<void()> fn) { request_begin_ = std::move(fn); }

 private:
  bool process_and_close_socket(socket_t sock) override;
  // Counts a connection from `address`; false when it already has `per_address`.
  bool Admit(const std::string& address);
  void Leave(const std::string& address);

  ConnLimits limits_;
  Slots slots_;
  std::function<void()> request_begin_;
  std::mutex mu_;
  std::map<std::string, size_t> per_address_;
};

}  // namespace reel::serve
