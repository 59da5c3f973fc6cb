#include "serve/http_edge.h"

#include <httplib.h>
#include <openssl/evp.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "meta/json_util.h"
#include "reel/layout.h"
#include "reel/task.h"
#include "serve/auth.h"
#include "serve/serve_internal.h"
#include "serve/spool.h"

namespace reel::serve {

namespace {

using internal::Json;
using httplib::ContentReader;
using httplib::Request;
using httplib::Response;

// Per-request state. cpp-httplib runs pre-routing, the handler and the logger of one
// request on the same worker thread, so a thread_local carries it between them.
struct RequestContext {
  std::chrono::steady_clock::time_point start;
  std::string id;
  std::optional<Principal> principal;
  uint64_t bytes_in = 0;
};
thread_local RequestContext ctx;

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

void Error(Response& res, int status, const std::string& rule, const std::string& detail) {
  res.set_header("X-Reel-Rule", rule);
  Answer(res, status, {{"detail", detail}, {"rule", rule}, {"request_id", ctx.id}});
}

bool ParseUint(const std::string& text, uint64_t* out) {
  if (text.empty() || text.size() > 19) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

// Standard base64 (tus Upload-Metadata values).
bool Base64Decode(const std::string& in, std::string* out) {
  if (in.size() % 4) return false;
  out->assign(in.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out->data()),
                                reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  if (n < 0) return false;
  size_t pad = 0;
  if (!in.empty() && in.back() == '=') ++pad;
  if (in.size() > 1 && in[in.size() - 2] == '=') ++pad;
  out->resize(static_cast<size_t>(n) - pad);
  return true;
}

// The form/metadata fields of an upload, validated.
struct UploadFields {
  std::string name;
  std::string project;  // project_id when given, else name
  int64_t form_episode_index = -1;
};

std::string FieldOf(const std::map<std::string, std::string>& fields, const char* key) {
  auto it = fields.find(key);
  return it == fields.end() ? std::string() : it->second;
}

// The task directory an upload goes to: project_id when given, else name.
std::string ProjectOf(const std::map<std::string, std::string>& fields) {
  const std::string project_id = FieldOf(fields, "project_id");
  return project_id.empty() ? FieldOf(fields, "name") : project_id;
}

// Empty string when fine, else the rule and the detail (rule in `rule`).
std::string CheckFields(const std::map<std::string, std::string>& fields, UploadFields* out, std::string* rule) {
  auto get = [&](const char* key) { return FieldOf(fields, key); };
  out->name = get("name");
  out->project = ProjectOf(fields);
  if (out->name.empty()) {
    *rule = "form.name";
    return "the form field `name` (the task name) is missing";
  }
  if (!IsValidProjectName(out->project)) {
    *rule = "form.name";
    return "\"" + out->project + "\" is not a valid task name";
  }
  const std::string idx = get("episode_index");
  if (!idx.empty()) {
    uint64_t v = 0;
    if (!ParseUint(idx, &v)) {
      *rule = "form.episode_index";
      return "episode_index \"" + idx + "\" is not a non-negative integer";
    }
    out->form_episode_index = static_cast<int64_t>(v);
  }
  return "";
}

class HttplibEdge final : public HttpEdge {
 public:
  explicit HttplibEdge(const ServeConfig& config)
      : config_(config),
        auth_(config.tokens, config.users, config.session_ttl_s),
        spool_(JoinPath(config.root, ".uploads")) {}

  Status Init() {
    REEL_RETURN_IF_ERROR(spool_.Init(7 * 24 * 3600));
    if (!config_.log_path.empty()) {
      log_ = std::fopen(config_.log_path.c_str(), "a");
      if (!log_) return Status::IOError(config_.log_path + ": cannot open the log file");
    }
    std::snprintf(prefix_, sizeof prefix_, "%06x", static_cast<unsigned>(::getpid() & 0xffffff));
    Routes();
    return Status::OK();
  }

  ~HttplibEdge() override {
    Stop();
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

  static bool IsPublic(const Request& req) {
    return (req.method == "GET" && (req.path == "/health" || req.path == "/metrics")) ||
           (req.method == "POST" && req.path == "/api/v1/auth/login") ||
           (req.method == "OPTIONS" && req.path == "/api/v1/uploads");
  }

  // Authentication and size limits, from the headers alone: runs before any body byte
  // is read (pre-routing, and the 100-continue answer for clients that wait for it).
  // Returns 0 to go on, else the status already written into `res`.
  int Gate(const Request& req, Response& res) {
    ctx = RequestContext{};
    ctx.start = std::chrono::steady_clock::now();
    ctx.id = std::string(prefix_) + "-" + std::to_string(++request_counter_);
    res.set_header("X-Request-Id", ctx.id);
    uint64_t length = 0;
    if (req.has_header("Content-Length") && ParseUint(req.get_header_value("Content-Length"), &length) &&
        length > config_.max_request_bytes) {
      res.set_header("Connection", "close");
      Error(res, 413, "limit.request_size",
            "request body of " + std::to_string(length) + " bytes exceeds the limit of " +
                std::to_string(config_.max_request_bytes));
      return 413;
    }
    if (IsPublic(req)) return 0;
    const std::string authorization = req.get_header_value("Authorization");
    const std::string cookie = req.get_header_value("Cookie");
    ctx.principal = auth_.Authenticate(authorization, cookie);
    if (!ctx.principal) {
      res.set_header("WWW-Authenticate", "Bearer");
      res.set_header("Connection", "close");
      const bool sent = !authorization.empty() || !CookieValue(cookie, "reel_session").empty();
      Error(res, 401, sent ? "auth.invalid" : "auth.missing",
            sent ? "the credential is not valid (unknown token or expired session)"
                 : "authentication required: Authorization: Bearer <token>, or log in at /api/v1/auth/login");
      return 401;
    }
    return 0;
  }

  void Routes() {
    svr_.new_task_queue = [n = config_.workers] { return new httplib::ThreadPool(static_cast<size_t>(n)); };
    svr_.set_payload_max_length(config_.max_request_bytes);
    svr_.set_read_timeout(config_.read_timeout_s, 0);
    svr_.set_write_timeout(config_.write_timeout_s, 0);
    svr_.set_keep_alive_timeout(5);
    svr_.set_pre_routing_handler([this](const Request& req, Response& res) {
      return Gate(req, res) ? httplib::Server::HandlerResponse::Handled
                            : httplib::Server::HandlerResponse::Unhandled;
    });
    svr_.set_expect_100_continue_handler([this](const Request& req, Response& res) {
      const int status = Gate(req, res);
      return status ? status : 100;
    });
    svr_.set_logger([this](const Request& req, const Response& res) {
      ++requests_[res.status / 100 < 6 ? res.status / 100 : 5];
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
  std::string DeadlineDetail() const {
    return "the request body did not arrive within " + std::to_string(config_.request_timeout_s) + " s";
  }

  // Imports a received zip and answers; shared by the multipart and resumable paths.
  // Returns the answer's status and body, so the resumable path can store it.
  std::pair<int, Json> Import(const UploadFields& f, const std::string& zip_path) {
    ImportRequest request;
    request.project = f.project;
    request.form_episode_index = f.form_episode_index;
    request.zip_path = zip_path;
    ImportOptions options;
    options.limits = config_.slice_limits;
    options.check = config_.check;
    ++imports_in_flight_;
    const auto t0 = std::chrono::steady_clock::now();
    ImportOutcome o = ImportSlice(config_.root, request, options);
    import_us_ += std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
    --imports_in_flight_;
    if (o.http_status == 201) ++imports_created_;
    else if (o.http_status == 200) ++imports_present_;
    else if (o.http_status >= 500) ++imports_failed_;
    else ++imports_refused_;
    Log({{"event", "import"}, {"request_id", ctx.id}, {"project", f.project}, {"episode_index", o.episode_index},
         {"status", o.http_status}, {"rule", o.rule}, {"message", o.message}});
    if (o.http_status == 200 || o.http_status == 201)
      return {o.http_status,
              {{"session_id", o.session_id}, {"episode_index", o.episode_index}, {"name", f.name},
               {"project_id", f.project}, {"already_present", o.already_present}, {"message", o.message},
               {"request_id", ctx.id}}};
    return {o.http_status, {{"detail", o.message}, {"rule", o.rule}, {"request_id", ctx.id}}};
  }

  void AnswerImport(Response& res, const std::pair<int, Json>& answer) {
    if (answer.second.contains("rule")) res.set_header("X-Reel-Rule", answer.second["rule"].get<std::string>());
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
      ~Cleanup() {
        std::error_code ec;
        std::filesystem::remove(path, ec);
      }
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
            return fail(403, "auth.project", ctx.principal->name + " may not upload to \"" + project + "\"");
          Status st = fs->CreateDirs(staging);
          auto opened = st.ok() ? fs->NewWritableFile(zip_path) : Result<std::unique_ptr<WritableFile>>(st);
          if (!opened.ok()) return fail(500, "import.io", opened.status().message());
          file = std::move(*opened);
          return true;
        },
        [&](const char* data, size_t n) {
          ctx.bytes_in += n;
          if (PastDeadline()) return fail(408, "limit.request_time", DeadlineDetail());
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
    std::string rule;
    if (std::string detail = CheckFields(fields, &f, &rule); !detail.empty()) return Error(res, 400, rule, detail);
    if (!ctx.principal->Allows(f.project))
      return Error(res, 403, "auth.project", ctx.principal->name + " may not upload to \"" + f.project + "\"");
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
    const std::string meta = req.get_header_value("Upload-Metadata");
    size_t pos = 0;
    while (pos < meta.size()) {
      size_t end = meta.find(',', pos);
      if (end == std::string::npos) end = meta.size();
      const std::string pair = meta.substr(pos, end - pos);
      const size_t space = pair.find(' ');
      std::string value;
      if (space != std::string::npos && !Base64Decode(pair.substr(space + 1), &value))
        return Error(res, 400, "tus.metadata", "Upload-Metadata value of `" + pair.substr(0, space) + "` is not base64");
      if (value.size() > config_.max_field_bytes)
        return Error(res, 400, "form.field_size", "metadata `" + pair.substr(0, space) + "` is too long");
      fields[pair.substr(0, space)] = value;
      pos = end + 1;
    }
    UploadFields f;
    std::string rule;
    if (std::string detail = CheckFields(fields, &f, &rule); !detail.empty()) return Error(res, 400, rule, detail);
    if (!ctx.principal->Allows(f.project))
      return Error(res, 403, "auth.project", ctx.principal->name + " may not upload to \"" + f.project + "\"");
    SpoolUpload what;
    what.length = length;
    what.name = f.name;
    what.project = f.project;
    what.form_episode_index = f.form_episode_index;
    what.principal = ctx.principal->name;
    auto up = spool_.Create(what);
    if (!up.ok()) return Error(res, 500, "import.io", up.status().message());
    res.status = 201;
    res.set_header("Location", "/api/v1/uploads/" + up->id);
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
    const bool ok = reader([&](const char* data, size_t n) {
      ctx.bytes_in += n;
      bytes_received_ += n;
      if (PastDeadline()) {
        fail_status = 408;
        fail_rule = "limit.request_time";
        fail_detail = DeadlineDetail();
        return false;
      }
      if (cur.offset + buffer.size() + n > cur.length) {
        fail_status = 413;
        fail_rule = "tus.length";
        fail_detail = "the PATCH goes past Upload-Length " + std::to_string(cur.length);
        return false;
      }
      buffer.append(data, n);
      return buffer.size() < (4u << 20) || flush();
    });
    // Keep what arrived, even from a cut-short body: the client resumes from HEAD.
    if (fail_status != 413 && !flush() && fail_status == 0) fail_status = 500;
    res.set_header("Upload-Offset", std::to_string(cur.offset));
    if (fail_status) return Error(res, fail_status, fail_rule, fail_detail);
    if (!ok) return Error(res, 400, "form.body", "the PATCH body was cut short or timed out");
    res.status = 204;
  }

  void HandleTusImport(const Request& req, Response& res) {
    auto up = OwnUpload(req, res);
    if (!up) return;
    std::lock_guard<std::mutex> lock(spool_.LockFor(up->id));
    if (auto stored = spool_.LoadResult(up->id)) {
      auto doc = Json::parse(*stored, nullptr, false);
      if (doc.is_object() && doc.contains("status") && doc.contains("body"))
        return AnswerImport(res, {doc["status"].get<int>(), doc["body"]});
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
    if (req.body.size() > 4096) return Error(res, 413, "limit.request_size", "login body larger than 4096 bytes");
    auto doc = Json::parse(req.body, nullptr, false);
    if (!doc.is_object() || !doc.contains("username") || !doc.contains("password") || !doc["username"].is_string() ||
        !doc["password"].is_string())
      return Error(res, 400, "auth.login", "expected JSON {\"username\": ..., \"password\": ...}");
    auto session = auth_.Login(doc["username"].get<std::string>(), doc["password"].get<std::string>());
    if (!session) return Error(res, 401, "auth.login", "wrong user name or password");
    res.set_header("Set-Cookie", "reel_session=" + *session + "; Path=/; HttpOnly; SameSite=Strict; Max-Age=" +
                                     std::to_string(config_.session_ttl_s));
    Answer(res, 200, {{"ok", true}, {"user", doc["username"]}});
  }

  void HandleSessions(const Request& req, Response& res) {
    std::string project = req.get_param_value("project_id");
    if (project.empty()) project = req.get_param_value("name");
    uint64_t limit = 100000;
    if (req.has_param("limit") && !ParseUint(req.get_param_value("limit"), &limit))
      return Error(res, 400, "form.limit", "limit must be a non-negative integer");
    std::vector<std::string> projects;
    if (!project.empty()) {
      if (!IsValidProjectName(project)) return Error(res, 400, "form.name", "\"" + project + "\" is not a valid task name");
      if (!ctx.principal->Allows(project))
        return Error(res, 403, "auth.project", ctx.principal->name + " may not read \"" + project + "\"");
      projects.push_back(project);
    } else if (auto entries = DefaultFileSystem()->ListDir(config_.root); entries.ok()) {
      for (const DirEntry& e : *entries)
        if (e.type == FileType::kDirectory && IsValidProjectName(e.name) && ctx.principal->Allows(e.name))
          projects.push_back(e.name);
    }
    Json sessions = Json::array();
    for (const std::string& p : projects) {
      const std::string root = JoinPath(config_.root, p);
      auto st = DefaultFileSystem()->Stat(JoinPath(root, "meta/info.json"));
      if (!st.ok() || st->type != FileType::kFile) continue;
      auto task = Task::Open(root, {nullptr, 1});
      if (!task.ok()) return Error(res, 500, "import.task", task.status().message());
      auto episodes = (*task)->ListEpisodes();
      if (!episodes.ok()) return Error(res, 500, "import.task", episodes.status().message());
      const int64_t chunks = (*task)->info().chunks_size;
      for (const EpisodeEntry& e : *episodes) {
        if (sessions.size() >= limit) break;
        sessions.push_back({{"session_id", SessionId(p, e.episode_index)}, {"name", p}, {"project_id", p},
                            {"episode_index", e.episode_index},
                            {"upload_episode_index", EpisodeFileSuffix(e.episode_index, chunks)}});
      }
    }
    Answer(res, 200, {{"sessions", sessions}});
  }

  ServeConfig config_;
  Authenticator auth_;
  Spool spool_;
  httplib::Server svr_;
  std::atomic<int> port_{0};
  char prefix_[8] = {0};
  std::atomic<uint64_t> request_counter_{0};
  std::mutex log_mu_;
  FILE* log_ = nullptr;
  std::atomic<uint64_t> requests_[6] = {};
  std::atomic<uint64_t> imports_created_{0}, imports_present_{0}, imports_refused_{0}, imports_failed_{0};
  std::atomic<uint64_t> bytes_received_{0}, import_us_{0};
  std::atomic<int64_t> imports_in_flight_{0};
};

}  // namespace

Result<std::unique_ptr<HttpEdge>> HttpEdge::Make(const ServeConfig& config) {
  auto edge = std::make_unique<HttplibEdge>(config);
  REEL_RETURN_IF_ERROR(edge->Init());
  return std::unique_ptr<HttpEdge>(std::move(edge));
}

}  // namespace reel::serve
