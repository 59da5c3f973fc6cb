#include "serve/http_edge.h"

#include <httplib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <regex>
#include <thread>

#include "util/json_util.h"
#include "reel/layout.h"
#include "reel/task.h"
#include "serve/auth.h"
#include "serve/deadline_server.h"
#include "serve/episode_digest.h"
#include "serve/request_parse.h"
#include "serve/serve_internal.h"
#include "serve/spool.h"

namespace reel::serve {

namespace {

using internal::Json;
using httplib::ContentReader;
using httplib::Request;
using httplib::Response;

// Per-request state. cpp-httplib runs pre-routing, the handler and the logger of one
// request on the same worker thread, so a thread_local carries it between them; the
// DeadlineServer resets it as each request begins.
struct RequestContext {
  std::chrono::steady_clock::time_point start;
  std::string id;
  std::optional<Principal> principal;
  uint64_t bytes_in = 0;
  int gate_status = -1;  // -1 = the gate has not run for this request (it is asked twice with 100-continue)
};
thread_local RequestContext ctx;

// Bodies of the routes that are not streamed (login, tus create and import, unknown
// routes): httplib reads them into memory whole, so they get a small limit of their own.
constexpr uint64_t kSmallBodyBytes = 64 << 10;
constexpr size_t kLoginBodyBytes = 4096;

// The request streams its body through a ContentReader (counted by the handler).
bool IsStreamingRoute(const Request& req) {
  static const std::regex kPatch(R"(/api/v1/uploads/[0-9a-f]{32})");
  return (req.method == "POST" && req.path == "/api/v1/session/upload") ||
         (req.method == "PATCH" && std::regex_match(req.path, kPatch));
}

bool IEquals(const std::string& a, const char* b) {
  const size_t n = std::strlen(b);
  if (a.size() != n) return false;
  for (size_t i = 0; i < n; ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

// Keeps the imports_in_flight gauge right on every path out of an import, exceptions
// included.
class InFlight {
 public:
  explicit InFlight(std::atomic<int64_t>& gauge) : gauge_(gauge) { ++gauge_; }
  ~InFlight() { --gauge_; }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

 private:
  std::atomic<int64_t>& gauge_;
};

std::string IsoNow() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const int ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", std::gmtime(&t));
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, ms);
  return out;
}

void Answer(Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(internal::Dump(body, -1), "application/json");
}


class HttplibEdge final : public HttpEdge {
 public:
  explicit HttplibEdge(const ServeConfig& config)
      : config_(config),
        auth_(config.tokens, config.users, config.session_ttl_s),
        spool_(JoinPath(config.root, ".uploads")),
        svr_(ConnLimits{static_cast<double>(config.head_timeout_s), static_cast<double>(config.read_timeout_s),
                        static_cast<double>(config.write_timeout_s), 64 << 10,
                        static_cast<size_t>(config.max_connections_per_address)},
             config.workers),
        login_limiter_(kLoginBurst, kLoginRefillS, 4096) {}

  Status Init() {
    REEL_RETURN_IF_ERROR(spool_.Init(7 * 24 * 3600));
    import_pool_ = std::make_unique<httplib::ThreadPool>(static_cast<size_t>(std::max(config_.workers, 1)));
    if (!config_.log_path.empty()) {
      log_ = std::fopen(config_.log_path.c_str(), "a");
      if (!log_) return Status::IOError(config_.log_path + ": cannot open the log file");
    }
    std::snprintf(prefix_, sizeof prefix_, "%06x", static_cast<unsigned>(::getpid() & 0xffffff));
    // Server paths never reach a client: the root (absolute, Server::Create) as given and
    // with symlinks resolved. "/" is never hidden: it would take every name apart.
    std::error_code ec;
    for (std::string root : {config_.root, std::filesystem::weakly_canonical(config_.root, ec).string()}) {
      while (root.size() > 1 && root.back() == '/') root.pop_back();
      if (root.size() > 1 && root[0] == '/' && std::find(hidden_.begin(), hidden_.end(), root) == hidden_.end())
        hidden_.push_back(root);
    }
    std::sort(hidden_.begin(), hidden_.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
    Routes();
    return Status::OK();
  }

  ~HttplibEdge() override {
    Stop();
    std::unique_ptr<httplib::ThreadPool> pool;
    {
      std::lock_guard<std::mutex> lock(import_pool_mu_);
      pool = std::move(import_pool_);  // later imports run on their own thread
    }
    if (pool) pool->shutdown();
    if (log_) std::fclose(log_);
  }

  Status Listen() override {
    int port = config_.port;
    if (port == 0) {
      port = svr_.bind_to_any_port(config_.host);
      if (port <= 0) return Status::IOError("serve: cannot bind " + config_.host + " to any port");
    } else if (!svr_.bind_to_port(config_.host, port)) {
      return Status::IOError("serve: cannot bind " + config_.host + ":" + std::to_string(port) +
                             " (in use, or not an address of this machine)");
    }
    port_ = port;
    Log({{"event", "listening"}, {"host", config_.host}, {"port", port}, {"root", config_.root}});
    if (!svr_.listen_after_bind()) return Status::IOError("serve: the listener stopped with an error");
    return Status::OK();
  }
  int port() const override { return port_.load(); }
  bool WaitUntilListening(double timeout_s) const override {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < until) {
      if (port_.load() > 0 && svr_.is_running()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  void Stop() override { svr_.stop(); }

 private:
  // Login attempts per address: a burst of 10, then one every 6 s.
  static constexpr int kLoginBurst = 10;
  static constexpr double kLoginRefillS = 6;

  // ---- plumbing ----

  void Log(Json line) {
    Json out = {{"ts", IsoNow()}};
    for (auto& [k, v] : line.items()) out[k] = v;
    const std::string text = internal::Dump(out, -1) + "\n";
    std::lock_guard<std::mutex> lock(log_mu_);
    FILE* f = log_ ? log_ : stderr;
    std::fwrite(text.data(), 1, text.size(), f);
    std::fflush(f);
  }

  // `message` with the server's root removed: names become relative to the root
  // ("task_a/meta/info.json"), so answers never show server paths.
  std::string Scrub(std::string message) const {
    for (const std::string& root : hidden_) {
      for (size_t pos; (pos = message.find(root)) != std::string::npos;) {
        size_t end = pos + root.size();
        if (end < message.size() && message[end] == '/') ++end;
        message.erase(pos, end - pos);
      }
    }
    return message;
  }

  void Error(Response& res, int status, const std::string& rule, const std::string& detail) const {
    res.set_header("X-Reel-Rule", rule);
    Answer(res, status, {{"detail", Scrub(detail)}, {"rule", rule}, {"request_id", ctx.id}});
  }

  static bool IsPublic(const Request& req) {
    return (req.method == "GET" && (req.path == "/health" || req.path == "/metrics")) ||
           (req.method == "POST" && req.path == "/api/v1/auth/login") ||
           (req.method == "OPTIONS" && req.path == "/api/v1/uploads");
  }

  // A refusal from the gate: the connection closes, so a body the request may still
  // send is never read.
  int Refuse(Response& res, int status, const std::string& rule, const std::string& detail) {
    res.set_header("Connection", "close");
    Error(res, status, rule, detail);
    return status;
  }

  // What the request says about its body, checked before any body byte is read:
  // encodings the server will not undo, sizes above the limits, and framing httplib
  // would read without bound. Tells the connection how much body it may read and until
  // when. Returns 0 to go on, else the status already written into `res`.
  int GateBody(const Request& req, Response& res) {
    for (const char* name : {"Content-Encoding", "Transfer-Encoding", "Content-Length"})
      if (req.get_header_value_count(name) > 1)
        return Refuse(res, 400, "limit.framing", std::string(name) + " sent more than once");
    // httplib would inflate gzip/brotli bodies with no bound of its own (a 1 MB gzip
    // login grew the server by 1 GB); no reel client compresses a request.
    if (!IsIdentityEncoding(req.get_header_value("Content-Encoding")))
      return Refuse(res, 415, "limit.content_encoding",
                    "Content-Encoding \"" + req.get_header_value("Content-Encoding") +
                        "\" is not accepted: send the body uncompressed");
    const bool has_te = req.has_header("Transfer-Encoding");
    const bool chunked = has_te && IEquals(req.get_header_value("Transfer-Encoding"), "chunked");
    if (has_te && !chunked)
      return Refuse(res, 501, "limit.transfer_encoding", "only Transfer-Encoding: chunked is supported");
    const bool has_length = req.has_header("Content-Length");
    if (has_te && has_length)
      return Refuse(res, 400, "limit.framing", "both Content-Length and Transfer-Encoding were sent");
    uint64_t length = 0;
    if (has_length && !ParseUint(req.get_header_value("Content-Length"), &length))
      return Refuse(res, 400, "limit.framing", "Content-Length is not a non-negative integer");
    const bool streaming = IsStreamingRoute(req);
    const uint64_t limit = streaming ? config_.max_request_bytes : kSmallBodyBytes;
    if (length > limit)
      return Refuse(res, 413, "limit.request_size",
                    "request body of " + std::to_string(length) + " bytes exceeds the limit of " +
                        std::to_string(limit) + (streaming ? "" : " for this endpoint"));
    if (chunked && !streaming)
      return Refuse(res, 411, "limit.length_required",
                    "this endpoint needs a Content-Length (chunked bodies are taken by uploads only)");
    if (ConnStream* conn = CurrentConnection()) {
      // Streamed bodies have request_timeout_s; the others are small and get the head's time.
      const auto budget = std::chrono::seconds(streaming ? config_.request_timeout_s : config_.head_timeout_s);
      conn->BodyAllowed(chunked ? ConnStream::kUnlimited : length, conn->request_start() + budget);
    }
    return 0;
  }

  // The raw value of a header (request_parse.h RawHeaderValues): httplib %-decodes
  // header values and cuts them at NUL, which must not change what a credential is.
  // `count` says how many times it was sent.
  static std::string RawHeader(const Request& req, const char* name, size_t* count) {
    if (ConnStream* conn = CurrentConnection()) {
      const std::vector<std::string> values = RawHeaderValues(conn->head(), name);
      *count = values.size();
      return values.empty() ? std::string() : values.front();
    }
    *count = req.get_header_value_count(name);
    return req.get_header_value(name);
  }

  // Authentication, limits and the login rate, from the head alone: runs before any
  // body byte is read (pre-routing, and the 100-continue answer for clients that wait
  // for it). Returns 0 to go on, else the status already written into `res`.
  int Gate(const Request& req, Response& res) {
    if (ctx.gate_status >= 0) return ctx.gate_status;  // the 100-continue call already ran it
    ctx.gate_status = GateSteps(req, res);
    // A refused request's body is never read: the connection closes after the answer,
    // or its bytes would be parsed as further requests.
    const bool body = req.has_header("Transfer-Encoding") ||
                      (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0");
    if (ctx.gate_status && body) {
      res.set_header("Connection", "close");
      if (ConnStream* conn = CurrentConnection()) conn->CloseAfterRequest();
    }
    return ctx.gate_status;
  }

  int GateSteps(const Request& req, Response& res) {
    if (ctx.id.empty()) ctx.id = std::string(prefix_) + "-" + std::to_string(++request_counter_);
    res.set_header("X-Request-Id", ctx.id);
    ctx.gate_status = GateBody(req, res);
    if (ctx.gate_status) return ctx.gate_status;
    if (req.method == "POST" && req.path == "/api/v1/auth/login") {
      double retry_after = 0;
      if (!login_limiter_.Take(req.remote_addr, std::chrono::steady_clock::now(), &retry_after)) {
        res.set_header("Retry-After", std::to_string(static_cast<int64_t>(std::ceil(retry_after))));
        return ctx.gate_status = Refuse(res, 429, "auth.rate",
                                        "too many login attempts from this address; retry after " +
                                            std::to_string(static_cast<int64_t>(std::ceil(retry_after))) + " s");
      }
    }
    if (IsPublic(req)) return ctx.gate_status = HoldSlot(req);
    size_t auth_count = 0, cookie_count = 0;
    const std::string authorization = RawHeader(req, "Authorization", &auth_count);
    const std::string cookie = RawHeader(req, "Cookie", &cookie_count);
    if (auth_count <= 1 && cookie_count <= 1) ctx.principal = auth_.Authenticate(authorization, cookie);
    if (!ctx.principal) {
      res.set_header("WWW-Authenticate", "Bearer");
      const bool sent = auth_count > 0 || !CookieValue(cookie, "reel_session").empty();
      return ctx.gate_status =
                 Refuse(res, 401, sent ? "auth.invalid" : "auth.missing",
                        sent ? "the credential is not valid (unknown token or expired session)"
                             : "authentication required: Authorization: Bearer <token>, or log in at "
                               "/api/v1/auth/login");
    }
    return ctx.gate_status = HoldSlot(req);
  }

  // An accepted request takes one of the `workers` processing slots (waiting for one if
  // need be) until it ends; /health, /metrics and the tus discovery answer at once.
  static int HoldSlot(const Request& req) {
    const bool cheap = (req.method == "GET" && (req.path == "/health" || req.path == "/metrics")) ||
                       req.method == "OPTIONS";
    if (ConnStream* conn = CurrentConnection(); conn && !cheap) conn->HoldSlot();
    return 0;
  }

  // A new request on this worker thread: the per-request state starts empty.
  static void ResetContext() {
    ctx = RequestContext{};
    const ConnStream* conn = CurrentConnection();
    ctx.start = conn ? conn->request_start() : std::chrono::steady_clock::now();
  }

  void Routes() {
    // One thread per connection being read; DeadlineServer's slots bound the requests
    // processed at once to `workers`.
    svr_.new_task_queue = [n = config_.max_connections] { return new httplib::ThreadPool(static_cast<size_t>(n)); };
    svr_.set_payload_max_length(config_.max_request_bytes);
    svr_.set_read_timeout(config_.read_timeout_s, 0);
    svr_.set_write_timeout(config_.write_timeout_s, 0);
    svr_.set_keep_alive_timeout(5);
    svr_.set_request_begin([] { ResetContext(); });
    svr_.set_pre_routing_handler([this](const Request& req, Response& res) {
      return Gate(req, res) ? httplib::Server::HandlerResponse::Handled
                            : httplib::Server::HandlerResponse::Unhandled;
    });
    svr_.set_expect_100_continue_handler([this](const Request& req, Response& res) {
      const int status = Gate(req, res);
      return status ? status : 100;
    });
    // Answers httplib writes itself (a head cut off by its deadline, a malformed
    // request, an unknown route) get the JSON error shape too.
    svr_.set_error_handler(httplib::Server::HandlerWithResponse([this](const Request&, Response& res) {
      if (res.has_header("X-Reel-Rule")) return httplib::Server::HandlerResponse::Unhandled;
      if (ctx.id.empty()) ctx.id = std::string(prefix_) + "-" + std::to_string(++request_counter_);
      res.set_header("X-Request-Id", ctx.id);
      const ConnStream* conn = CurrentConnection();
      if (conn && conn->head_too_large()) {
        res.set_header("Connection", "close");
        Error(res, 431, "limit.header_size", "the request head is larger than 64 KiB");
      } else if (conn && conn->in_head() && conn->timed_out()) {
        res.set_header("Connection", "close");
        Error(res, 408, "limit.header_time",
              "the request head did not arrive within " + std::to_string(config_.head_timeout_s) + " s");
      } else if (res.status == 404) {
        Error(res, 404, "http.not_found", "no such endpoint");
      } else {
        Error(res, res.status, "http.malformed", "the request is not valid HTTP/1.1");
      }
      return httplib::Server::HandlerResponse::Handled;
    }));
    svr_.set_exception_handler([this](const Request&, Response& res, std::exception_ptr) {
      // Handlers return statuses; an exception is a bug. Its text stays in the log.
      Log({{"event", "exception"}, {"request_id", ctx.id}});
      Error(res, 500, "server.internal", "internal error");
    });
    svr_.set_logger([this](const Request& req, const Response& res) {
      ++requests_[res.status / 100 < 6 && res.status > 0 ? res.status / 100 : 5];
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - ctx.start).count();
      Json line = {{"request_id", ctx.id},
                   {"remote", req.remote_addr},
                   {"method", req.method},
                   {"path", req.path},
                   {"status", res.status},
                   {"bytes_in", ctx.bytes_in},
                   {"ms", std::round(ms * 10) / 10},
                   {"principal", ctx.principal ? ctx.principal->name : ""}};
      if (res.has_header("X-Reel-Rule")) line["rule"] = res.get_header_value("X-Reel-Rule");
      Log(std::move(line));
    });

    svr_.Get("/health", [](const Request&, Response& res) {
      Answer(res, 200, {{"status", "ok"}, {"version", REEL_VERSION}});
    });
    svr_.Get("/metrics", [this](const Request&, Response& res) { res.set_content(Metrics(), "text/plain; version=0.0.4"); });
    svr_.Post("/api/v1/auth/login", [this](const Request& req, Response& res) { HandleLogin(req, res); });
    svr_.Get("/api/v1/sessions", [this](const Request& req, Response& res) { HandleSessions(req, res); });
    svr_.Get(R"(/api/v1/projects/([^/]+)/episodes/([0-9]{1,15}))",
             [this](const Request& req, Response& res) { HandleEpisode(req, res); });
    svr_.Post("/api/v1/session/upload",
              [this](const Request& req, Response& res, const ContentReader& reader) { HandleUpload(req, res, reader); });
    svr_.Options("/api/v1/uploads", [this](const Request&, Response& res) {
      res.status = 204;
      TusHeaders(res);
      res.set_header("Tus-Version", "1.0.0");
      res.set_header("Tus-Extension", "creation");
      res.set_header("Tus-Max-Size", std::to_string(config_.max_request_bytes));
    });
    svr_.Post("/api/v1/uploads", [this](const Request& req, Response& res) { HandleTusCreate(req, res); });
    svr_.Get(R"(/api/v1/uploads/([0-9a-f]{32}))", [this](const Request& req, Response& res) {
      HandleTusHead(req, res);
    });
    svr_.Patch(R"(/api/v1/uploads/([0-9a-f]{32}))",
               [this](const Request& req, Response& res, const ContentReader& reader) { HandleTusPatch(req, res, reader); });
    svr_.Post(R"(/api/v1/uploads/([0-9a-f]{32})/import)",
              [this](const Request& req, Response& res) { HandleTusImport(req, res); });
  }

  std::string Metrics() const {
    std::string out;
    auto line = [&](const std::string& name, const std::string& labels, double v) {
      out += name + (labels.empty() ? "" : "{" + labels + "}") + " " + std::to_string(v) + "\n";
    };
    out += "# TYPE reel_http_requests_total counter\n";
    for (int c = 1; c <= 5; ++c) line("reel_http_requests_total", "code=\"" + std::to_string(c) + "xx\"", requests_[c]);
    out += "# TYPE reel_imports_total counter\n";
    line("reel_imports_total", "outcome=\"created\"", imports_created_);
    line("reel_imports_total", "outcome=\"already_present\"", imports_present_);
    line("reel_imports_total", "outcome=\"refused\"", imports_refused_);
    line("reel_imports_total", "outcome=\"failed\"", imports_failed_);
    out += "# TYPE reel_upload_bytes_total counter\n";
    line("reel_upload_bytes_total", "", bytes_received_);
    out += "# TYPE reel_import_seconds summary\n";
    line("reel_import_seconds_sum", "", import_us_ / 1e6);
    line("reel_import_seconds_count", "", imports_created_ + imports_present_ + imports_refused_ + imports_failed_);
    out += "# TYPE reel_episode_proofs_total counter\n";
    line("reel_episode_proofs_total", "outcome=\"held\"", proofs_held_);
    line("reel_episode_proofs_total", "outcome=\"not_found\"", proofs_absent_);
    out += "# TYPE reel_tus_resumes_total counter\n";
    line("reel_tus_resumes_total", "", tus_resumed_);
    out += "# TYPE reel_imports_in_flight gauge\n";
    line("reel_imports_in_flight", "", imports_in_flight_);
    return out;
  }

  static void TusHeaders(Response& res) { res.set_header("Tus-Resumable", "1.0.0"); }

  // A body that trickles in slower than the read timeout can notice would hold a worker
  // forever; the whole body must arrive within request_timeout_s.
  bool PastDeadline() const {
    return std::chrono::steady_clock::now() - ctx.start > std::chrono::seconds(config_.request_timeout_s);
  }
  // A streamed body that ended early because its deadline passed (the connection's
  // reads stop at it) rather than because the client hung up.
  static bool BodyTimedOut() {
    const ConnStream* conn = CurrentConnection();
    return conn && conn->timed_out();
  }
  std::string DeadlineDetail() const {
    return "the request body did not arrive within " + std::to_string(config_.request_timeout_s) + " s";
  }
  std::string SizeDetail() const {
    return "request body exceeds the limit of " + std::to_string(config_.max_request_bytes) + " bytes";
  }

  // ImportSlice, with every way out accounted: the in-flight gauge always comes down,
  // and an exception (a parser meeting a hostile slice) is a refusal with a rule, not a
  // 500 that a client would retry.
  ImportOutcome RunImport(const ImportRequest& request, const ImportSliceOptions& options) {
    InFlight in_flight(imports_in_flight_);
    // The import runs on one of `workers` import threads, not on the connection's own
    // thread: what an import leaves in per-thread caches (allocators, FFmpeg, Arrow) then
    // stays with `workers` threads. On the connection threads it grew with
    // max_connections (the soak's server held ~1 GB with 128 connection threads, ~300 MB
    // with 16).
    std::promise<ImportOutcome> done;
    std::future<ImportOutcome> outcome = done.get_future();
    bool queued = false;
    {
      std::lock_guard<std::mutex> lock(import_pool_mu_);
      if (import_pool_) {
        import_pool_->enqueue([&] { done.set_value(ImportCaught(request, options)); });
        queued = true;
      }
    }
    // A queued job runs even when the pool is shut down meanwhile (its threads finish the
    // queue before they exit).
    return queued ? outcome.get() : ImportCaught(request, options);
  }

  ImportOutcome ImportCaught(const ImportRequest& request, const ImportSliceOptions& options) {
    try {
      return ImportSlice(config_.root, request, options);
    } catch (const std::exception& e) {
      ImportOutcome o;
      o.http_status = 422;
      o.rule = "slice.unreadable";
      o.message = std::string("the slice could not be read: ") + e.what();
      return o;
    }
  }

  // Imports a received zip and answers; shared by the multipart and resumable paths.
  // Returns the answer's status and body, so the resumable path can store it.
  std::pair<int, Json> Import(const UploadFields& f, const std::string& zip_path) {
    ImportRequest request;
    request.project = f.project;
    request.form_episode_index = f.form_episode_index;
    request.zip_path = zip_path;
    ImportSliceOptions options;
    options.limits = config_.slice_limits;
    options.check = config_.check;
    const auto t0 = std::chrono::steady_clock::now();
    ImportOutcome o = RunImport(request, options);
    import_us_ += std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
    o.message = Scrub(o.message);
    if (o.http_status == 201) ++imports_created_;
    else if (o.http_status == 200) ++imports_present_;
    else if (o.http_status >= 500) ++imports_failed_;
    else ++imports_refused_;
    Log({{"event", "import"}, {"request_id", ctx.id}, {"project", f.project},
         {"episode_index", o.episode_index >= 0 ? Json(o.episode_index) : Json(nullptr)},
         {"status", o.http_status}, {"rule", o.rule}, {"message", o.message}});
    if (o.http_status == 200 || o.http_status == 201)
      return {o.http_status,
              {{"session_id", o.session_id}, {"episode_index", o.episode_index}, {"name", f.name},
               {"project_id", f.project}, {"already_present", o.already_present}, {"message", o.message},
               {"request_id", ctx.id}}};
    return {o.http_status, {{"detail", o.message}, {"rule", o.rule}, {"request_id", ctx.id}}};
  }

  void AnswerImport(Response& res, const std::pair<int, Json>& answer) {
    if (answer.second.contains("rule") && answer.second["rule"].is_string())
      res.set_header("X-Reel-Rule", answer.second["rule"].get<std::string>());
    Answer(res, answer.first, answer.second);
  }

  // ---- POST /api/v1/session/upload (multipart) ----

  void HandleUpload(const Request& req, Response& res, const ContentReader& reader) {
    if (!req.is_multipart_form_data())
      return Error(res, 400, "form.content_type", "expected multipart/form-data with a `file` part");
    const std::string staging = JoinPath(config_.root, ".staging");
    const std::string zip_path = JoinPath(staging, "upload-" + ctx.id + ".zip");
    struct Cleanup {
      std::string path;
      ~Cleanup() { (void)DefaultFileSystem()->RemoveFile(path); }
    } cleanup{zip_path};
    FileSystem* fs = DefaultFileSystem();
    std::map<std::string, std::string> fields;
    std::string current;
    std::unique_ptr<WritableFile> file;
    int parts = 0;
    int fail_status = 0;
    std::string fail_rule, fail_detail;
    auto fail = [&](int status, std::string rule, std::string detail) {
      fail_status = status;
      fail_rule = std::move(rule);
      fail_detail = std::move(detail);
      return false;
    };
    const bool ok = reader(
        [&](const httplib::MultipartFormData& part) {
          if (++parts > 16) return fail(400, "form.parts", "more than 16 form parts");
          current = part.name;
          if (part.name != "file") {
            if (fields.count(part.name)) return fail(400, "form.duplicate", "form field `" + part.name + "` sent twice");
            fields[part.name];
            return true;
          }
          if (file) return fail(400, "form.duplicate", "form field `file` sent twice");
          // Authorise as soon as the fields allow: clients that send name/project_id
          // before the file (requests, the reference client) are refused before the
          // zip is read.
          const std::string project = ProjectOf(fields);
          if (!project.empty() && !ctx.principal->Allows(project))
            return fail(403, "auth.project", ctx.principal->name + " may not upload to this project");
          Status st = fs->CreateDirs(staging);
          auto opened = st.ok() ? fs->NewWritableFile(zip_path) : Result<std::unique_ptr<WritableFile>>(st);
          if (!opened.ok()) return fail(500, "import.io", opened.status().message());
          file = std::move(*opened);
          return true;
        },
        [&](const char* data, size_t n) {
          ctx.bytes_in += n;
          if (PastDeadline()) return fail(408, "limit.request_time", DeadlineDetail());
          // A chunked body has no Content-Length for the gate to judge: count it here.
          if (ctx.bytes_in > config_.max_request_bytes) return fail(413, "limit.request_size", SizeDetail());
          if (current == "file") {
            bytes_received_ += n;
            Status st = file->Append(std::string_view(data, n));
            if (!st.ok()) return fail(500, "import.io", st.message());
            return true;
          }
          std::string& value = fields[current];
          if (value.size() + n > config_.max_field_bytes)
            return fail(400, "form.field_size", "form field `" + current + "` is longer than " +
                                                    std::to_string(config_.max_field_bytes) + " bytes");
          value.append(data, n);
          return true;
        });
    if (!ok) {
      res.set_header("Connection", "close");
      if (fail_status == 0 && BodyTimedOut()) fail(408, "limit.request_time", DeadlineDetail());
      if (fail_status == 0) {
        fail_status = 400;
        fail_rule = "form.body";
        fail_detail = "the request body was cut short, timed out or is not valid multipart";
      }
      return Error(res, fail_status, fail_rule, fail_detail);
    }
    if (!file) return Error(res, 400, "form.file", "the form has no `file` part (the zip slice)");
    Status st = file->Sync();
    if (st.ok()) st = file->Close();
    if (!st.ok()) return Error(res, 500, "import.io", st.message());
    UploadFields f;
    if (auto problem = CheckUploadFields(fields, &f)) return Error(res, 400, problem->rule, problem->detail);
    if (!ctx.principal->Allows(f.project))
      return Error(res, 403, "auth.project", ctx.principal->name + " may not upload to this project");
    AnswerImport(res, Import(f, zip_path));
  }

  // ---- resumable (tus 1.0.0 core + creation) ----

  void HandleTusCreate(const Request& req, Response& res) {
    TusHeaders(res);
    if (req.get_header_value("Tus-Resumable") != "1.0.0")
      return Error(res, 412, "tus.version", "Tus-Resumable: 1.0.0 is required");
    uint64_t length = 0;
    if (!ParseUint(req.get_header_value("Upload-Length"), &length))
      return Error(res, 400, "tus.length", "Upload-Length is missing or not a non-negative integer");
    if (length > config_.max_request_bytes)
      return Error(res, 413, "limit.request_size",
                   "Upload-Length " + std::to_string(length) + " exceeds the limit of " +
                       std::to_string(config_.max_request_bytes));
    std::map<std::string, std::string> fields;
    if (auto problem = ParseTusMetadata(req.get_header_value("Upload-Metadata"), config_.max_field_bytes, &fields))
      return Error(res, 400, problem->rule, problem->detail);
    UploadFields f;
    if (auto problem = CheckUploadFields(fields, &f)) return Error(res, 400, problem->rule, problem->detail);
    if (!ctx.principal->Allows(f.project))
      return Error(res, 403, "auth.project", ctx.principal->name + " may not upload to this project");
    SpoolUpload what;
    what.length = length;
    what.name = f.name;
    what.project = f.project;
    what.form_episode_index = f.form_episode_index;
    what.principal = ctx.principal->name;
    auto up = spool_.Create(what, {config_.max_pending_uploads, config_.max_pending_bytes});
    if (!up.ok()) return Error(res, 500, "import.io", up.status().message());
    if (!*up) {
      const auto [count, bytes] = spool_.Pending(what.principal);
      res.set_header("Retry-After", "60");
      return Error(res, 429, "limit.pending_uploads",
                   ctx.principal->name + " has " + std::to_string(count) + " uploads pending (" +
                       std::to_string(bytes) + " bytes declared); the limits are " +
                       std::to_string(config_.max_pending_uploads) + " uploads and " +
                       std::to_string(config_.max_pending_bytes) + " bytes: finish or import one first");
    }
    res.status = 201;
    res.set_header("Location", "/api/v1/uploads/" + (*up)->id);
    res.set_header("Upload-Offset", "0");
  }

  // The upload named in the path, if it exists and belongs to the caller.
  std::optional<SpoolUpload> OwnUpload(const Request& req, Response& res) {
    auto up = spool_.Get(req.matches[1]);
    if (!up.ok() || up->principal != ctx.principal->name) {
      Error(res, 404, "tus.not_found", "upload " + std::string(req.matches[1]) + " does not exist or has expired");
      return std::nullopt;
    }
    return *up;
  }

  void HandleTusHead(const Request& req, Response& res) {
    TusHeaders(res);
    auto up = OwnUpload(req, res);
    if (!up) return;
    res.set_header("Upload-Offset", std::to_string(up->offset));
    res.set_header("Upload-Length", std::to_string(up->length));
    res.set_header("Cache-Control", "no-store");
    ++tus_resumed_;  // a client asks where an upload stands only to resume it
    Answer(res, 200, {{"id", up->id}, {"offset", up->offset}, {"length", up->length}, {"project_id", up->project}});
  }

  void HandleTusPatch(const Request& req, Response& res, const ContentReader& reader) {
    TusHeaders(res);
    if (req.get_header_value("Content-Type") != "application/offset+octet-stream")
      return Error(res, 415, "tus.content_type", "PATCH needs Content-Type: application/offset+octet-stream");
    auto up = OwnUpload(req, res);
    if (!up) return;
    std::lock_guard<std::mutex> lock(spool_.LockFor(up->id));
    auto fresh = spool_.Get(up->id);  // the offset may have moved while we waited
    if (!fresh.ok()) return Error(res, 404, "tus.not_found", fresh.status().message());
    uint64_t claimed = 0;
    if (!ParseUint(req.get_header_value("Upload-Offset"), &claimed) || claimed != fresh->offset) {
      res.set_header("Upload-Offset", std::to_string(fresh->offset));
      return Error(res, 409, "tus.offset",
                   "Upload-Offset " + req.get_header_value("Upload-Offset") + " does not match the server's " +
                       std::to_string(fresh->offset));
    }
    SpoolUpload cur = *fresh;
    std::string buffer;
    int fail_status = 0;
    std::string fail_rule, fail_detail;
    auto flush = [&]() {
      if (buffer.empty()) return true;
      auto off = spool_.Append(cur, buffer);
      if (!off.ok()) {
        fail_status = 500;
        fail_rule = "import.io";
        fail_detail = off.status().message();
        return false;
      }
      cur.offset = *off;
      buffer.clear();
      return true;
    };
    auto fail = [&](int status, std::string rule, std::string detail) {
      fail_status = status;
      fail_rule = std::move(rule);
      fail_detail = std::move(detail);
      return false;
    };
    const bool ok = reader([&](const char* data, size_t n) {
      ctx.bytes_in += n;
      bytes_received_ += n;
      if (PastDeadline()) return fail(408, "limit.request_time", DeadlineDetail());
      if (ctx.bytes_in > config_.max_request_bytes) return fail(413, "limit.request_size", SizeDetail());
      if (cur.offset + buffer.size() + n > cur.length)
        return fail(413, "tus.length", "the PATCH goes past Upload-Length " + std::to_string(cur.length));
      buffer.append(data, n);
      return buffer.size() < (4u << 20) || flush();
    });
    // Keep what arrived, even from a cut-short body: the client resumes from HEAD. Bytes
    // past Upload-Length or the request limit are not kept.
    if (fail_status != 413 && !flush() && fail_status == 0) fail_status = 500;
    if (!ok && fail_status == 0 && BodyTimedOut()) fail(408, "limit.request_time", DeadlineDetail());
    res.set_header("Upload-Offset", std::to_string(cur.offset));
    if (fail_status) {
      res.set_header("Connection", "close");
      return Error(res, fail_status, fail_rule, fail_detail);
    }
    if (!ok) {
      res.set_header("Connection", "close");
      return Error(res, 400, "form.body", "the PATCH body was cut short or timed out");
    }
    res.status = 204;
  }

  void HandleTusImport(const Request& req, Response& res) {
    auto up = OwnUpload(req, res);
    if (!up) return;
    std::lock_guard<std::mutex> lock(spool_.LockFor(up->id));
    if (auto stored = spool_.LoadResult(up->id)) {
      auto doc = internal::ParseJson(*stored, "stored result");
      if (doc.ok() && doc->is_object() && doc->contains("status") && (*doc)["status"].is_number_integer() &&
          doc->contains("body") && (*doc)["body"].is_object())
        return AnswerImport(res, {(*doc)["status"].get<int>(), (*doc)["body"]});
    }
    auto fresh = spool_.Get(up->id);
    if (!fresh.ok()) return Error(res, 404, "tus.not_found", fresh.status().message());
    if (fresh->offset != fresh->length)
      return Error(res, 409, "tus.incomplete",
                   "upload has " + std::to_string(fresh->offset) + " of " + std::to_string(fresh->length) + " bytes");
    UploadFields f{fresh->name, fresh->project, fresh->form_episode_index};
    auto answer = Import(f, spool_.PartPath(up->id));
    if (answer.first < 500) {  // final: remember it, free the bytes
      if (Status st = spool_.SaveResult(up->id, internal::Dump({{"status", answer.first}, {"body", answer.second}}, -1));
          st.ok())
        spool_.RemovePart(up->id);
    }
    AnswerImport(res, answer);
  }

  // ---- login, listing ----

  void HandleLogin(const Request& req, Response& res) {
    if (req.body.size() > kLoginBodyBytes)
      return Error(res, 413, "limit.request_size", "login body larger than " + std::to_string(kLoginBodyBytes) + " bytes");
    auto doc = internal::ParseJson(req.body, "login body");
    if (!doc.ok() || !doc->is_object() || !doc->contains("username") || !doc->contains("password") ||
        !(*doc)["username"].is_string() || !(*doc)["password"].is_string())
      return Error(res, 400, "auth.login", "expected JSON {\"username\": ..., \"password\": ...}");
    const std::string user = (*doc)["username"].get<std::string>();
    auto session = auth_.Login(user, (*doc)["password"].get<std::string>());
    if (!session) return Error(res, 401, "auth.login", "wrong user name or password");
    res.set_header("Set-Cookie", "reel_session=" + *session + "; Path=/; HttpOnly; SameSite=Strict; Max-Age=" +
                                     std::to_string(config_.session_ttl_s));
    Answer(res, 200, {{"ok", true}, {"user", user}});
  }

  // The episodes of one project for the listing; a project whose task cannot be read
  // is an error naming files relative to the root.
  Status ListProject(const std::string& p, int64_t limit, Json* sessions) {
    const std::string root = JoinPath(config_.root, p);
    // Not a task (no info.json): nothing to list. An error reading it is the project's.
    REEL_ASSIGN_OR_RETURN(FileInfo info, DefaultFileSystem()->Stat(JoinPath(root, "meta/info.json")));
    if (info.type != FileType::kFile) return Status::OK();
    REEL_ASSIGN_OR_RETURN(auto task, Task::Open(root, {nullptr, 1}));
    REEL_ASSIGN_OR_RETURN(auto episodes, task->ListEpisodes());
    const int64_t chunks = task->info().chunks_size;
    for (const EpisodeEntry& e : episodes) {
      if (static_cast<int64_t>(sessions->size()) >= limit) break;
      sessions->push_back({{"session_id", SessionId(p, e.episode_index)}, {"name", p}, {"project_id", p},
                           {"episode_index", e.episode_index},
                           {"upload_episode_index", EpisodeFileSuffix(e.episode_index, chunks)}});
    }
    return Status::OK();
  }

  void HandleSessions(const Request& req, Response& res) {
    std::string project = req.get_param_value("project_id");
    if (project.empty()) project = req.get_param_value("name");
    uint64_t limit = 100000;
    if (req.has_param("limit") && !ParseUint(req.get_param_value("limit"), &limit))
      return Error(res, 400, "form.limit", "limit must be a non-negative integer");
    limit = std::min<uint64_t>(limit, 100000);
    std::vector<std::string> projects;
    if (!project.empty()) {
      if (std::string problem = ProjectNameProblem(project); !problem.empty())
        return Error(res, 400, "form.name", "the task name is refused: " + problem);
      if (!ctx.principal->Allows(project))
        return Error(res, 403, "auth.project", ctx.principal->name + " may not read this project");
      projects.push_back(project);
    } else {
      // The projects are the root's folders: a root that cannot be listed is an error, not
      // an empty answer (a client would take "no sessions" as "nothing uploaded yet").
      auto entries = DefaultFileSystem()->ListDir(config_.root);
      if (!entries.ok()) return Error(res, 500, "import.io", entries.status().message());
      for (const DirEntry& e : *entries)
        if (e.type == FileType::kDirectory && IsValidProjectName(e.name) && ctx.principal->Allows(e.name))
          projects.push_back(e.name);
    }
    Json sessions = Json::array();
    Json skipped = Json::array();
    for (const std::string& p : projects) {
      Status st;
      try {
        st = ListProject(p, static_cast<int64_t>(limit), &sessions);
      } catch (const std::exception& e) {
        st = Status::Invalid(p + ": " + e.what());
      }
      if (st.ok()) continue;
      // Asked for by name: the project's own problem. Otherwise one broken project
      // must not hide the others: it is reported and skipped.
      if (!project.empty()) return Error(res, 409, "import.task", st.message());
      skipped.push_back({{"project_id", p}, {"rule", "import.task"}, {"detail", Scrub(st.message())}});
    }
    Json body = {{"sessions", sessions}};
    if (!skipped.empty()) body["skipped"] = skipped;
    Answer(res, 200, body);
  }

  // What the server holds of one episode, with its files' digests (serve/episode_digest.h).
  void HandleEpisode(const Request& req, Response& res) {
    const std::string project = req.matches[1];
    const int64_t n = std::stoll(req.matches[2]);  // at most 15 digits
    if (std::string problem = ProjectNameProblem(project); !problem.empty())
      return Error(res, 400, "form.name", "the task name is refused: " + problem);
    if (!ctx.principal->Allows(project))
      return Error(res, 403, "auth.project", ctx.principal->name + " may not read this project");
    Result<Json> answer = [&]() -> Result<Json> {
      try {
        return EpisodeDigestAnswer(config_.root, project, n);
      } catch (const std::exception& e) {
        return Status::Invalid(project + ": " + e.what());
      }
    }();
    if (answer.ok()) {
      ++proofs_held_;
      res.set_header("Cache-Control", "no-store");
      return Answer(res, 200, *answer);
    }
    if (answer.status().code() == StatusCode::kNotFound) {
      ++proofs_absent_;
      return Error(res, 404, "episode.not_found", Scrub(answer.status().message()));
    }
    Error(res, 409, "import.task", Scrub(answer.status().message()));
  }

  ServeConfig config_;
  Authenticator auth_;
  Spool spool_;
  DeadlineServer svr_;
  LoginLimiter login_limiter_;
  std::vector<std::string> hidden_;  // server paths scrubbed from answers, longest first
  std::atomic<int> port_{0};
  char prefix_[8] = {0};
  std::atomic<uint64_t> request_counter_{0};
  std::mutex log_mu_;
  // Runs the imports (RunImport); null once the edge is being destroyed.
  std::mutex import_pool_mu_;
  std::unique_ptr<httplib::ThreadPool> import_pool_;
  FILE* log_ = nullptr;
  std::atomic<uint64_t> requests_[6] = {};
  std::atomic<uint64_t> imports_created_{0}, imports_present_{0}, imports_refused_{0}, imports_failed_{0};
  std::atomic<uint64_t> bytes_received_{0}, import_us_{0};
  // The uploader's side of the protocol (docs/upload.md): proofs asked, uploads resumed.
  std::atomic<uint64_t> proofs_held_{0}, proofs_absent_{0}, tus_resumed_{0};
  std::atomic<int64_t> imports_in_flight_{0};
};

}  // namespace

Result<std::unique_ptr<HttpEdge>> HttpEdge::Make(const ServeConfig& config) {
  auto edge = std::make_unique<HttplibEdge>(config);
  REEL_RETURN_IF_ERROR(edge->Init());
  return std::unique_ptr<HttpEdge>(std::move(edge));
}

}  // namespace reel::serve
