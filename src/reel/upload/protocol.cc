#include "upload/protocol.h"

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>

#include "util/json_util.h"
#include "reel/pack.h"

namespace reel::upload {
namespace {

using Json = internal::Json;

// A JSON value as text: strings as they are, numbers and others dumped.
std::string Text(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// Text from the server for a message, at most 200 bytes (an answer may be up to
// kMaxAnswerBytes, which no error message should carry whole).
std::string Brief(const std::string& s) { return s.size() <= 200 ? s : s.substr(0, 200) + "..."; }
std::string Brief(const Json& v) { return Brief(Text(v)); }

// The answer's JSON body, or a discarded value when it is not JSON (or too deep, or
// holds a number out of range: internal::ParseJson's bounds).
Json ParseBody(const HttpResponse& r) {
  auto parsed = internal::ParseJson(r.body, "answer");
  return parsed.ok() ? std::move(*parsed) : Json(Json::value_t::discarded);
}

StatusCode CodeOf(int status) {
  if (status == 401 || status == 403) return StatusCode::kPermissionDenied;
  if (status == 404) return StatusCode::kNotFound;
  if (status == 0 || status == 408 || status == 429 || status >= 500) return StatusCode::kIOError;
  return StatusCode::kInvalid;
}

// Seconds from a Retry-After header given in delta-seconds; -1 when absent or an
// HTTP date (which the import server does not send).
double RetryAfter(const HttpResponse& r) {
  const std::string v = r.Header("Retry-After");
  if (v.empty()) return -1;
  char* end = nullptr;
  const double s = std::strtod(v.c_str(), &end);
  if (end == v.c_str() || *end != '\0' || !(s >= 0)) return -1;
  return s;
}

std::string RandomBoundary() {
  std::random_device rd;
  std::mt19937_64 rng((static_cast<uint64_t>(rd()) << 32) ^ rd());
  static const char* hex = "0123456789abcdef";
  std::string b = "reel-boundary-";
  for (int i = 0; i < 32; ++i) b += hex[rng() & 15];
  return b;
}

std::string TextPart(const std::string& boundary, const std::string& field, const std::string& value) {
  return "--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + field + "\"\r\n\r\n" +
         value + "\r\n";
}

// A filename for the Content-Disposition header: quotes, backslashes and control
// characters would break the header, so they become '_'.
std::string HeaderSafe(std::string s) {
  for (char& c : s)
    if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) c = '_';
  return s;
}

}  // namespace

Failure JudgeAnswer(const HttpResponse& r, const std::string& request) {
  const std::string what = r.login_failed.empty() ? request : request + ": " + r.login_failed;
  Failure f;
  if (r.status == 0) {
    f.retryable = true;
    f.status = Status::IOError(what + ": no answer from the server (" + r.transport_error + ")");
    return f;
  }
  f.http_status = r.status;
  f.retryable = r.status == 408 || r.status == 429 || r.status >= 500;
  if (r.status == 429 || r.status == 503) f.retry_after_s = RetryAfter(r);
  std::string msg = what + ": server answered " + std::to_string(r.status);
  const Json j = ParseBody(r);
  // The rule from the JSON body, else from the X-Reel-Rule header (a body cut at
  // kMaxAnswerBytes is no JSON).
  const std::string rule = j.is_object() && j.contains("rule") ? Brief(j["rule"]) : Brief(r.Header("X-Reel-Rule"));
  if (!rule.empty()) msg += " (rule " + rule + ")";
  if (j.is_object()) {
    if (j.contains("detail")) msg += ": " + Brief(j["detail"]);
    if (j.contains("request_id")) msg += " [request_id " + Brief(j["request_id"]) + "]";
  } else if (!r.body.empty()) {
    msg += ": " + Brief(r.body);
  }
  if (r.body_cut) msg += " (answer body longer than " + std::to_string(kMaxAnswerBytes) + " bytes; not read)";
  f.status = Status(CodeOf(r.status), msg).WithRule(rule);
  return f;
}

AttemptResult ParseImportAnswer(const HttpResponse& r, const std::string& what) {
  if (r.status != 200 && r.status != 201) return AttemptResult::Fail(JudgeAnswer(r, what));
  const Json j = ParseBody(r);
  if (!j.is_object() || !j.contains("session_id")) {
    // The import may well have happened: retrying lets the landed check find out.
    Failure f;
    f.retryable = true;
    f.status = Status::IOError(what + ": server answered " + std::to_string(r.status) +
                               " without a JSON session_id: " + Brief(r.body));
    return AttemptResult::Fail(f);
  }
  Imported imported;
  imported.session_id = Text(j["session_id"]);
  imported.already_present =
      j.contains("already_present") && j["already_present"].is_boolean() && j["already_present"].get<bool>();
  return AttemptResult::Ok(imported);
}

AttemptResult PostMultipart(HttpSession& http, const Slice& slice, const SentCallback& sent) {
  const std::string boundary = RandomBoundary();
  RequestBody body;
  body.content_type = "multipart/form-data; boundary=" + boundary;
  // Text fields first, then the file: a server can judge the fields before the bytes.
  BodySegment head;
  head.literal = TextPart(boundary, "name", slice.name) +
                 TextPart(boundary, "episode_index",
                          std::to_string(UploadEpisodeIndex(slice.episode_index))) +
                 TextPart(boundary, "project_id", slice.project_id) + "--" + boundary +
                 "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" +
                 HeaderSafe(slice.filename) + "\"\r\nContent-Type: application/zip\r\n\r\n";
  BodySegment file;
  file.file = slice.file;
  file.length = slice.size;
  BodySegment tail;
  tail.literal = "\r\n--" + boundary + "--\r\n";
  body.segments = {head, file, tail};
  body.progress = sent;
  const HttpResponse r = http.Send("POST", "/api/v1/session/upload", {}, &body);
  return ParseImportAnswer(r, "POST /api/v1/session/upload");
}

LandedAnswer CheckLanded(HttpSession& http, const std::string& name, int64_t episode_index) {
  LandedAnswer out;
  const std::string what = "GET /api/v1/sessions (landed check)";
  const HttpResponse r = http.Send("GET", "/api/v1/sessions?name=" + UrlEncode(name), {});
  if (r.status != 200) {
    out.failure = JudgeAnswer(r, what);
    return out;
  }
  const Json j = ParseBody(r);
  if (!j.is_object() || !j.contains("sessions") || !j["sessions"].is_array()) {
    out.failure.retryable = true;
    out.failure.status = Status::IOError(what + ": answer is not {\"sessions\": [...]}");
    return out;
  }
  out.ok = true;
  for (const Json& s : j["sessions"]) {
    if (!s.is_object() || !s.contains("name") || !s.contains("episode_index")) continue;
    if (!s["name"].is_string() || s["name"].get<std::string>() != name) continue;
    if (!s["episode_index"].is_number_integer() || s["episode_index"].get<int64_t>() != episode_index)
      continue;
    out.session_id = s.contains("session_id") ? Text(s["session_id"]) : "";
    break;
  }
  return out;
}

HeldAnswer FetchHeldFiles(HttpSession& http, const std::string& project, int64_t episode_index) {
  HeldAnswer out;
  const std::string path = "/api/v1/projects/" + UrlEncode(project) + "/episodes/" + std::to_string(episode_index);
  const std::string what = "GET " + path + " (proof before deletion)";
  const HttpResponse r = http.Send("GET", path, {});
  if (r.status != 200) {
    out.failure = JudgeAnswer(r, what);
    return out;
  }
  const Json j = ParseBody(r);
  if (!j.is_object() || !j.contains("files") || !j["files"].is_array()) {
    out.failure.retryable = true;
    out.failure.status = Status::IOError(what + ": answer is not {\"files\": [...]}");
    return out;
  }
  for (const Json& f : j["files"]) {
    if (!f.is_object() || !f.contains("role") || !f.contains("size") || !f.contains("sha256") ||
        !f["size"].is_number_unsigned())
      continue;
    out.files.push_back({Text(f["role"]), f.contains("path") ? Text(f["path"]) : "", f["size"].get<uint64_t>(),
                         Text(f["sha256"])});
  }
  out.ok = true;
  return out;
}

}  // namespace reel::upload
