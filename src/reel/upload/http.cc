#include "upload/http.h"

#include <arrow/buffer.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <arrow/io/interfaces.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>

namespace reel::upload {
namespace {

// File bytes are read and handed to the socket in blocks of this size.
constexpr size_t kSendBlock = 256 << 10;
// GET and HEAD (landed check, tus offset) answer quickly on a healthy server; waiting the
// full io_timeout_s (meant for a server slowly reading or importing a large slice) for
// them would stall the retry loop, so they use at most this read timeout.
constexpr double kControlReadTimeoutS = 120;

// TCP keepalive: a peer that vanished silently (a NAT dropped the flow, the server host
// died) is noticed after about 60 + 15 * 4 s instead of Linux's default two hours; the
// reference collector had an upload thread hang silently without it.
void KeepAliveSocketOptions(socket_t sock) {
  int on = 1, idle = 60, interval = 15, count = 4;
  ::setsockopt(sock, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  ::setsockopt(sock, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(sock, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  ::setsockopt(sock, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

void SetTimeout(httplib::Client& client, void (httplib::Client::*setter)(time_t, time_t),
                double seconds) {
  seconds = std::max(seconds, 0.001);
  const double whole = std::floor(seconds);
  (client.*setter)(static_cast<time_t>(whole), static_cast<time_t>((seconds - whole) * 1e6));
}

// Sends `req` and reads at most kMaxAnswerBytes of the answer's body. A longer body is
// not read further: the answer comes back with its status, headers, the body's start
// and body_cut set (httplib reports the stop as Canceled and drops the connection).
HttpResponse SendBounded(httplib::Client& client, httplib::Request req) {
  HttpResponse head;  // status and headers, seen before the body is read
  std::string body;
  bool cut = false;
  req.response_handler = [&](const httplib::Response& r) {
    head.status = r.status;
    head.headers.clear();
    for (const auto& [k, v] : r.headers) head.headers.emplace_back(k, v);
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    const size_t room = kMaxAnswerBytes - body.size();
    body.append(data, std::min(n, room));
    if (n > room) cut = true;
    return !cut;
  };
  const httplib::Result result = client.send(req);
  HttpResponse out;
  if (result) {
    out.status = result->status;
    for (const auto& [k, v] : result->headers) out.headers.emplace_back(k, v);
    out.body = std::move(body);
    return out;
  }
  if (cut && head.status > 0) {
    head.body = std::move(body);
    head.body_cut = true;
    return head;
  }
  out.transport_error = httplib::to_string(result.error());
  return out;
}

bool IEquals(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// Streams a RequestBody through httplib's DataSink. Returns false (which makes httplib
// abandon the request with Error::Write or Canceled) when a file read or the socket fails.
class BodyWriter {
 public:
  explicit BodyWriter(const RequestBody& body) : body_(body) {}

  bool Write(size_t offset, httplib::DataSink& sink) {
    uint64_t seg_start = 0;
    for (const BodySegment& seg : body_.segments) {
      const uint64_t seg_len = seg.file ? seg.length : seg.literal.size();
      if (offset >= seg_start + seg_len) {
        seg_start += seg_len;
        continue;
      }
      const uint64_t within = offset - seg_start;
      const size_t n = static_cast<size_t>(std::min<uint64_t>(seg_len - within, kSendBlock));
      bool wrote;
      if (!seg.file) {
        wrote = sink.write(seg.literal.data() + within, n);
      } else {
        auto buffer = seg.file->ReadAt(static_cast<int64_t>(seg.file_offset + within),
                                       static_cast<int64_t>(n));
        if (!buffer.ok() || static_cast<size_t>((*buffer)->size()) != n) return false;
        wrote = sink.write(reinterpret_cast<const char*>((*buffer)->data()), n);
      }
      if (!wrote) return false;
      if (body_.progress) body_.progress(FileBytesBefore(offset + n));
      return true;
    }
    return false;  // httplib asked past the declared length
  }

 private:
  uint64_t FileBytesBefore(uint64_t position) const {
    uint64_t start = 0, file_bytes = 0;
    for (const BodySegment& seg : body_.segments) {
      const uint64_t len = seg.file ? seg.length : seg.literal.size();
      if (seg.file && position > start) file_bytes += std::min(position - start, len);
      start += len;
    }
    return file_bytes;
  }

  const RequestBody& body_;
};

// Writing to a socket the peer has closed raises SIGPIPE, whose default action ends the
// process; httplib sends without MSG_NOSIGNAL. Changing the process's disposition is not
// a library's business, so SIGPIPE is blocked in the calling thread for the duration of
// a request, and one it raised (thread-directed, so pending on this thread) is consumed
// before the old mask is restored. The failed write itself reports EPIPE to httplib.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    blocked_ = pthread_sigmask(SIG_BLOCK, &pipe_, &old_) == 0;
  }
  ~SigpipeGuard() {
    if (!blocked_) return;
    if (!was_pending_) {
      sigset_t pending;
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        const timespec zero{0, 0};
        sigtimedwait(&pipe_, nullptr, &zero);
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t pipe_, old_;
  bool was_pending_ = false;
  bool blocked_ = false;
};

}  // namespace

std::string HttpResponse::Header(const std::string& name) const {
  for (const auto& [k, v] : headers)
    if (IEquals(k, name)) return v;
  return "";
}

uint64_t RequestBody::Size() const {
  uint64_t n = 0;
  for (const BodySegment& seg : segments) n += seg.file ? seg.length : seg.literal.size();
  return n;
}

std::string UrlEncode(const std::string& value) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

struct HttpSession::Impl {
  HttpOptions options;
  std::unique_ptr<httplib::Client> client;
  std::string cookie;  // "name=value; name2=value2" from the last login
};

HttpSession::HttpSession(std::unique_ptr<Impl> impl, std::string server)
    : impl_(std::move(impl)), server_(std::move(server)) {}
HttpSession::~HttpSession() = default;

Result<std::unique_ptr<HttpSession>> HttpSession::Open(const HttpOptions& options) {
  static const std::regex kServer(R"(^(https?)://([A-Za-z0-9.\-]+|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?/?$)");
  std::smatch m;
  if (!std::regex_match(options.server, m, kServer))
    return Status::Invalid("upload: server '" + options.server +
                           "' is not http(s)://host[:port] (no path)");
  std::string server = options.server;
  if (server.back() == '/') server.pop_back();
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  try {  // httplib may throw on a malformed host; nothing escapes this function
    impl->client = std::make_unique<httplib::Client>(server);
  } catch (const std::exception& e) {
    return Status::Invalid("upload: server '" + server + "': " + e.what());
  }
  httplib::Client& c = *impl->client;
  if (!c.is_valid()) return Status::Invalid("upload: server '" + server + "' is not usable");
  SetTimeout(c, &httplib::Client::set_connection_timeout, options.connect_timeout_s);
  SetTimeout(c, &httplib::Client::set_read_timeout, options.io_timeout_s);
  SetTimeout(c, &httplib::Client::set_write_timeout, options.io_timeout_s);
  c.set_keep_alive(true);
  c.set_socket_options(KeepAliveSocketOptions);
  if (!options.ca_cert_path.empty()) c.set_ca_cert_path(options.ca_cert_path);
  return std::unique_ptr<HttpSession>(new HttpSession(std::move(impl), std::move(server)));
}

HttpResponse HttpSession::Login() {
  nlohmann::json j = {{"username", impl_->options.username}, {"password", impl_->options.password}};
  HttpResponse r;
  try {
    httplib::Request req;
    req.method = "POST";
    req.path = "/api/v1/auth/login";
    req.body = j.dump();
    req.headers.emplace("Content-Type", "application/json");
    r = SendBounded(*impl_->client, std::move(req));
  } catch (const std::exception& e) {
    r.transport_error = e.what();
  }
  if (r.status != 200) return r;
  std::string cookie;
  for (const auto& [k, v] : r.headers) {
    if (!IEquals(k, "Set-Cookie")) continue;
    const std::string pair = v.substr(0, v.find(';'));
    if (pair.find('=') == std::string::npos) continue;
    if (!cookie.empty()) cookie += "; ";
    cookie += pair;
  }
  if (cookie.empty()) {
    r.status = 0;
    r.transport_error = "login answered 200 without a session cookie";
    return r;
  }
  impl_->cookie = cookie;
  return r;
}

HttpResponse HttpSession::SendOnce(const std::string& method, const std::string& path,
                                   const HeaderList& extra, const RequestBody* body) {
  httplib::Headers headers;
  for (const auto& [k, v] : extra) headers.emplace(k, v);
  if (!impl_->options.token.empty())
    headers.emplace("Authorization", "Bearer " + impl_->options.token);
  if (!impl_->cookie.empty()) headers.emplace("Cookie", impl_->cookie);
  httplib::Client& c = *impl_->client;
  try {
    httplib::Request req;
    req.method = method;
    req.path = path;
    req.headers = std::move(headers);
    if (method == "GET" || method == "HEAD") {
      SetTimeout(c, &httplib::Client::set_read_timeout,
                 std::min(impl_->options.io_timeout_s, kControlReadTimeoutS));
      HttpResponse r = SendBounded(c, std::move(req));
      SetTimeout(c, &httplib::Client::set_read_timeout, impl_->options.io_timeout_s);
      return r;
    }
    if (method != "PATCH" && method != "POST") {
      HttpResponse r;
      r.transport_error = "unsupported method " + method;
      return r;
    }
    if (!body) return SendBounded(c, std::move(req));  // Content-Length: 0
    BodyWriter writer(*body);
    req.headers.emplace("Content-Type", body->content_type);
    req.content_length_ = static_cast<size_t>(body->Size());
    req.content_provider_ = [&writer](size_t offset, size_t /*length*/, httplib::DataSink& sink) {
      return writer.Write(offset, sink);
    };
    return SendBounded(c, std::move(req));
  } catch (const std::exception& e) {
    HttpResponse r;
    r.transport_error = std::string("exception: ") + e.what();
    return r;
  }
}

HttpResponse HttpSession::Send(const std::string& method, const std::string& path,
                               const HeaderList& headers, const RequestBody* body) {
  HttpResponse r = SendWithLogin(method, path, headers, body);
  // "Could not establish connection" alone does not say where: name the server.
  if (r.status == 0 && !r.transport_error.empty()) r.transport_error = server_ + ": " + r.transport_error;
  return r;
}

HttpResponse HttpSession::SendWithLogin(const std::string& method, const std::string& path,
                                        const HeaderList& headers, const RequestBody* body) {
  SigpipeGuard sigpipe;
  const bool login = !impl_->options.username.empty();
  if (login && impl_->cookie.empty()) {
    HttpResponse r = Login();
    if (r.status != 200) {
      r.login_failed = "POST /api/v1/auth/login";
      return r;
    }
  }
  HttpResponse r = SendOnce(method, path, headers, body);
  if (r.status == 401 && login) {
    // The session expired (or the server restarted, even since the login just made):
    // log in again, once per request, so a server that never accepts us cannot loop.
    impl_->cookie.clear();
    HttpResponse again = Login();
    if (again.status != 200) {
      again.login_failed = "POST /api/v1/auth/login";
      return again;
    }
    r = SendOnce(method, path, headers, body);
  }
  return r;
}

}  // namespace reel::upload
