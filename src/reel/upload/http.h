// Internal HTTP session of the upload client: one server, its authentication and its
// timeouts, over cpp-httplib (which never appears outside http.cc).
//
// Authentication: a bearer token is sent on every request when set. With a username,
// the session logs in first (POST /api/v1/auth/login, JSON {"username","password"}),
// keeps the cookies the answer sets and sends them on every later request; a 401 to a
// request logs in again and resends it, once per request.
//
// No call throws: transport failures (refused connection, timeout, dropped socket, TLS)
// come back as an HttpResponse with status 0 and `transport_error` set.
//
// Thread safety: an HttpSession is used from one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "reel/status.h"

namespace arrow::io {
class RandomAccessFile;
}

namespace reel::upload {

struct HttpOptions {
  std::string server;  // "http(s)://host[:port]", optionally one trailing '/'
  std::string token;
  std::string username;
  std::string password;
  std::string ca_cert_path;
  double connect_timeout_s = 10.0;
  double io_timeout_s = 1800.0;
};

// At most this much of an answer's body is read; the rest is left unread and the
// connection dropped (a server, or anything posing as one, must not make the client
// buffer gigabytes: a 500 announcing Content-Length: 2e9 took it to 4 GB).
inline constexpr size_t kMaxAnswerBytes = 1 << 20;

struct HttpResponse {
  int status = 0;               // 0 = no answer: see transport_error
  std::string transport_error;  // "Connection", "Read", "Write", "ConnectionTimeout", ...
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;             // at most kMaxAnswerBytes
  bool body_cut = false;        // the answer's body was longer; `body` holds its start
  // Set when this is the answer to the login the session made first (the request itself
  // was not sent): "POST /api/v1/auth/login".
  std::string login_failed;

  // The first header named `name` (case-insensitive), or "".
  std::string Header(const std::string& name) const;
};

// One piece of a streamed request body: literal bytes, or `length` bytes of `file`
// starting at `file_offset` (read in blocks while sending, so memory stays flat).
struct BodySegment {
  std::string literal;
  std::shared_ptr<arrow::io::RandomAccessFile> file;  // null = literal
  uint64_t file_offset = 0;
  uint64_t length = 0;  // of the file range
};

struct RequestBody {
  std::string content_type;
  std::vector<BodySegment> segments;
  // Called after each block of file bytes is handed to the socket, with the running
  // count of file bytes sent in this request (literal bytes are not counted).
  std::function<void(uint64_t file_bytes_sent)> progress;

  uint64_t Size() const;
};

using HeaderList = std::vector<std::pair<std::string, std::string>>;

class HttpSession {
 public:
  // Errors: Invalid when `server` is not "http(s)://host[:port]".
  static Result<std::unique_ptr<HttpSession>> Open(const HttpOptions& options);
  ~HttpSession();
  HttpSession(const HttpSession&) = delete;
  HttpSession& operator=(const HttpSession&) = delete;

  // `path` is absolute ("/api/v1/..."), query string included and already escaped.
  // `body` null = no body (Content-Length: 0 for POST and PATCH).
  HttpResponse Send(const std::string& method, const std::string& path, const HeaderList& headers,
                    const RequestBody* body = nullptr);

  const std::string& server() const { return server_; }

 private:
  struct Impl;
  HttpSession(std::unique_ptr<Impl> impl, std::string server);
  HttpResponse SendOnce(const std::string& method, const std::string& path,
                        const HeaderList& headers, const RequestBody* body);
  HttpResponse Login();
  HttpResponse SendWithLogin(const std::string& method, const std::string& path, const HeaderList& headers,
                             const RequestBody* body);

  std::unique_ptr<Impl> impl_;
  std::string server_;
};

// Percent-encodes everything but RFC 3986 unreserved characters (for a query value).
std::string UrlEncode(const std::string& value);

}  // namespace reel::upload
