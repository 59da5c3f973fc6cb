#include "serve/deadline_server.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace reel::serve {

namespace {

thread_local ConnStream* current_connection = nullptr;

// Milliseconds left until `deadline`, rounded up (0 once it has passed).
int MillisUntil(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>((left + 999) / 1000, 0, 1 << 30));
}

int Millis(double seconds) { return static_cast<int>(std::clamp(seconds * 1000, 0.0, double(1 << 30))); }

// poll() for one event, retried on EINTR; > 0 ready, 0 timeout, < 0 error.
int PollOne(socket_t sock, short events, int timeout_ms) {
  pollfd p{sock, events, 0};
  const Clock::time_point until = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const int r = ::poll(&p, 1, timeout_ms);
    if (r >= 0 || errno != EINTR) return r;
    timeout_ms = MillisUntil(until);
  }
}

void AddressOf(const sockaddr_storage& addr, socklen_t len, std::string& ip, int& port) {
  char host[NI_MAXHOST] = {0}, serv[NI_MAXSERV] = {0};
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
    ip = host;
    port = std::atoi(serv);
  }
}

}  // namespace

ConnStream* CurrentConnection() { return current_connection; }

bool ConnStream::WaitForRequest(double idle_s, const std::function<bool()>& keep_going) {
  if (off_ < len_) return true;
  const Clock::time_point until = Clock::now() + std::chrono::milliseconds(Millis(idle_s));
  while (keep_going()) {
    const int wait = std::min(100, MillisUntil(until));
    const int r = PollOne(sock_, POLLIN, wait);
    if (r < 0) return false;
    if (r > 0) return true;  // data, or EOF that the first read will see
    if (Clock::now() >= until) return false;
  }
  return false;
}

void ConnStream::BeginRequest() {
  start_ = Clock::now();
  deadline_ = start_ + std::chrono::milliseconds(Millis(limits_.head_timeout_s));
  in_head_ = true;
  body_left_ = 0;
  head_.clear();
  timed_out_ = false;
  head_too_large_ = false;
  close_after_ = false;
}

void ConnStream::BodyAllowed(uint64_t body_bytes, Clock::time_point deadline) {
  in_head_ = false;
  body_left_ = body_bytes;
  deadline_ = deadline;
}

ssize_t ConnStream::Fill() {
  const int until_deadline = MillisUntil(deadline_);
  const int wait = std::min(Millis(limits_.read_timeout_s), until_deadline);
  const int r = wait > 0 ? PollOne(sock_, POLLIN, wait) : 0;
  if (r == 0) {
    if (wait == until_deadline) timed_out_ = true;
    return -1;  // the deadline, or one read's timeout
  }
  if (r < 0) return -1;
  ssize_t n;
  do {
    n = ::recv(sock_, buffer_.data(), buffer_.size(), 0);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return n < 0 ? -1 : 0;
  off_ = 0;
  len_ = static_cast<size_t>(n);
  return n;
}

bool ConnStream::is_readable() const {
  if (off_ < len_) return true;
  const int wait = std::min(Millis(limits_.read_timeout_s), MillisUntil(deadline_));
  return wait > 0 && PollOne(sock_, POLLIN, wait) > 0;
}

bool ConnStream::is_writable() const { return PollOne(sock_, POLLOUT, Millis(limits_.write_timeout_s)) > 0; }

ssize_t ConnStream::read(char* ptr, size_t size) {
  if (!in_head_ && body_left_ == 0) return 0;  // the body is over (or there is none)
  if (off_ == len_) {
    const ssize_t got = Fill();
    if (got <= 0) return got;  // 0: the peer closed; -1: error or timeout
  }
  size_t n = std::min(size, len_ - off_);
  if (!in_head_) n = static_cast<size_t>(std::min<uint64_t>(n, body_left_));
  std::memcpy(ptr, buffer_.data() + off_, n);
  off_ += n;
  if (in_head_) {
    if (head_.size() + n > limits_.max_head_bytes) {
      head_too_large_ = true;
      return -1;
    }
    head_.append(ptr, n);
  } else if (body_left_ != kUnlimited) {
    body_left_ -= n;
  }
  return static_cast<ssize_t>(n);
}

ssize_t ConnStream::write(const char* ptr, size_t size) {
  size_t done = 0;
  while (done < size) {
    if (PollOne(sock_, POLLOUT, Millis(limits_.write_timeout_s)) <= 0) return -1;
    const ssize_t n = ::send(sock_, ptr + done, size - done, MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return -1;
    done += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

void ConnStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getpeername(sock_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) AddressOf(addr, len, ip, port);
}

void ConnStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(sock_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) AddressOf(addr, len, ip, port);
}

void ConnStream::HoldSlot() {
  if (holding_slot_ || !slots_) return;
  slots_->Acquire();
  holding_slot_ = true;
}

void ConnStream::ReleaseSlot() {
  if (!holding_slot_) return;
  slots_->Release();
  holding_slot_ = false;
}

bool DeadlineServer::Admit(const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t& n = per_address_[address];
  if (n >= limits_.per_address) {
    if (n == 0) per_address_.erase(address);
    return false;
  }
  ++n;
  return true;
}

void DeadlineServer::Leave(const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = per_address_.find(address);
  if (it != per_address_.end() && --it->second == 0) per_address_.erase(it);
}

bool DeadlineServer::process_and_close_socket(socket_t sock) {
  ConnStream strm(sock, limits_, &slots_);
  std::string address;
  int port = 0;
  strm.get_remote_ip_and_port(address, port);
  if (!Admit(address)) {
    static const std::string kBody =
        R"({"detail":"too many connections from this address","rule":"limit.connections","request_id":""})";
    const std::string answer = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                               "X-Reel-Rule: limit.connections\r\nRetry-After: 1\r\nConnection: close\r\n"
                               "Content-Length: " + std::to_string(kBody.size()) + "\r\n\r\n" + kBody;
    (void)strm.write(answer.data(), answer.size());
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return false;
  }
  auto running = [this] { return svr_sock_ != INVALID_SOCKET; };
  bool ret = false;
  for (size_t left = keep_alive_max_count_; left > 0 && running(); --left) {
    // The first request may take as long to start as a kept-alive one.
    if (!strm.WaitForRequest(static_cast<double>(keep_alive_timeout_sec_), running)) break;
    strm.BeginRequest();
    current_connection = &strm;
    if (request_begin_) request_begin_();
    bool connection_closed = false;
    ret = process_request(strm, left == 1, connection_closed, nullptr);
    strm.ReleaseSlot();
    current_connection = nullptr;
    if (!ret || connection_closed || strm.timed_out() || strm.head_too_large() || strm.must_close()) break;
  }
  Leave(address);
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ret;
}

}  // namespace reel::serve
