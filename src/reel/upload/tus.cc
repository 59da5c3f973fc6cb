// The resumable upload (tus 1.0.0 core + creation) as the import server speaks it; see
// protocol.h for the contract of TusUpload.
#include <algorithm>
#include <cstdlib>

#include "reel/pack.h"
#include "upload/protocol.h"

namespace reel::upload {
namespace {

constexpr const char* kTusVersion = "1.0.0";
constexpr const char* kUploads = "/api/v1/uploads";
// A PATCH answered 409 (offset mismatch) is followed by HEAD and a new PATCH; a server
// that keeps disagreeing with its own HEAD ends the attempt after this many.
constexpr int kMaxConflicts = 3;

std::string Base64(const std::string& in) {
  static const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += {abc[v >> 18], abc[(v >> 12) & 63], abc[(v >> 6) & 63], abc[v & 63]};
  }
  if (i + 1 == in.size()) {
    const uint32_t v = uint8_t(in[i]) << 16;
    out += {abc[v >> 18], abc[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += {abc[v >> 18], abc[(v >> 12) & 63], abc[(v >> 6) & 63], '='};
  }
  return out;
}

// Upload-Offset as a number in [0, limit]; nullopt when missing or malformed.
std::optional<uint64_t> OffsetHeader(const HttpResponse& r, uint64_t limit) {
  const std::string v = r.Header("Upload-Offset");
  if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 19)
    return std::nullopt;
  const uint64_t o = std::strtoull(v.c_str(), nullptr, 10);
  if (o > limit) return std::nullopt;
  return o;
}

Failure Protocol(const std::string& what, const std::string& detail) {
  Failure f;
  f.retryable = true;  // a confused answer may be a proxy's; the landed check decides
  f.status = Status::IOError(what + ": " + detail);
  return f;
}

// The path of a Location header: "/api/v1/uploads/<id>" or an absolute URL on any host.
std::string LocationPath(const std::string& location) {
  const size_t scheme = location.find("://");
  if (scheme == std::string::npos) return location;
  const size_t path = location.find('/', scheme + 3);
  return path == std::string::npos ? "" : location.substr(path);
}

struct Where {
  std::optional<uint64_t> offset;  // set when known
  bool expired = false;           // the server forgot the upload: create a new one
  Failure failure;
};

// HEAD <location>: where the server stands.
Where Head(HttpSession& http, const std::string& location, uint64_t size) {
  Where w;
  const std::string what = "HEAD " + location;
  const HttpResponse r = http.Send("HEAD", location, {{"Tus-Resumable", kTusVersion}});
  if (r.status == 404 || r.status == 410) {
    w.expired = true;
    return w;
  }
  if (r.status != 200) {
    w.failure = JudgeAnswer(r, what);
    return w;
  }
  w.offset = OffsetHeader(r, size);
  if (!w.offset) w.failure = Protocol(what, "missing or bad Upload-Offset '" + r.Header("Upload-Offset") + "'");
  return w;
}

// POST /api/v1/uploads: a new upload of `slice.size` bytes; sets state.location.
std::optional<Failure> Create(HttpSession& http, TusState& state, const Slice& slice) {
  std::string metadata = "name " + Base64(slice.name) + ",episode_index " +
                         Base64(std::to_string(UploadEpisodeIndex(slice.episode_index)));
  if (!slice.project_id.empty()) metadata += ",project_id " + Base64(slice.project_id);
  const std::string what = std::string("POST ") + kUploads;
  const HttpResponse r = http.Send("POST", kUploads,
                                   {{"Tus-Resumable", kTusVersion},
                                    {"Upload-Length", std::to_string(slice.size)},
                                    {"Upload-Metadata", metadata}});
  if (r.status != 201) return JudgeAnswer(r, what);
  const std::string path = LocationPath(r.Header("Location"));
  if (path.empty() || path[0] != '/')
    return Protocol(what, "201 without a usable Location '" + r.Header("Location") + "'");
  state.location = path;
  if (state.saved) state.saved(path, 0);
  return std::nullopt;
}

}  // namespace

AttemptResult TusUpload(HttpSession& http, TusState& state, const Slice& slice,
                        uint64_t chunk_bytes, const SentCallback& sent) {
  chunk_bytes = std::max<uint64_t>(chunk_bytes, 1);
  uint64_t offset = 0;
  bool restarted = false;  // an expired upload is recreated once per attempt
  if (!state.location.empty()) {
    Where w = Head(http, state.location, slice.size);
    if (w.expired) {
      state.location.clear();
    } else if (!w.offset) {
      return AttemptResult::Fail(w.failure);
    } else {
      offset = *w.offset;
    }
  }
  if (state.location.empty()) {
    if (auto f = Create(http, state, slice)) return AttemptResult::Fail(*f);
    offset = 0;
  }
  if (sent) sent(offset);

  int conflicts = 0;
  while (offset < slice.size) {
    const std::string what = "PATCH " + state.location;
    RequestBody body;
    body.content_type = "application/offset+octet-stream";
    BodySegment chunk;
    chunk.file = slice.file;
    chunk.file_offset = offset;
    chunk.length = std::min(chunk_bytes, slice.size - offset);
    body.segments = {chunk};
    const uint64_t base = offset;
    if (sent) body.progress = [&sent, base](uint64_t n) { sent(base + n); };
    const HttpResponse r = http.Send(
        "PATCH", state.location,
        {{"Tus-Resumable", kTusVersion}, {"Upload-Offset", std::to_string(offset)}}, &body);
    if (r.status == 204) {
      const auto next = OffsetHeader(r, slice.size);
      if (!next || *next <= offset)
        return AttemptResult::Fail(Protocol(what, "204 with Upload-Offset '" + r.Header("Upload-Offset") +
                                                      "' not past " + std::to_string(offset)));
      offset = *next;
      conflicts = 0;
      if (state.saved) state.saved(state.location, offset);
      if (sent) sent(offset);
      continue;
    }
    if (r.status == 409 || ((r.status == 404 || r.status == 410) && !restarted)) {
      // 409: our offset is not the server's (a PATCH whose answer was lost); ask HEAD.
      Where w = r.status == 409 ? Head(http, state.location, slice.size) : Where{std::nullopt, true, {}};
      if (w.expired && !restarted) {
        restarted = true;
        state.location.clear();
        if (auto f = Create(http, state, slice)) return AttemptResult::Fail(*f);
        offset = 0;
        if (sent) sent(offset);
        continue;
      }
      if (!w.offset) return AttemptResult::Fail(w.expired ? Protocol(what, "upload expired again") : w.failure);
      if (++conflicts > kMaxConflicts)
        return AttemptResult::Fail(Protocol(what, "offset conflict persists after HEAD"));
      offset = *w.offset;
      continue;
    }
    return AttemptResult::Fail(JudgeAnswer(r, what));
  }
  const std::string import = state.location + "/import";
  return ParseImportAnswer(http.Send("POST", import, {{"Tus-Resumable", kTusVersion}}), "POST " + import);
}

}  // namespace reel::upload
