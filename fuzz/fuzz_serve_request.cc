// libFuzzer harness for the import server's request parsing (src/reel/serve/request_parse.h):
// the pieces of a request an unauthenticated client controls. No network, no disk.
//
// Input: fields separated by 0xFF bytes (a byte valid UTF-8 never holds, so names and
// values keep every other byte):
//   0 raw request head ("POST / HTTP/1.1\r\nName: value\r\n...")   -> RawHeaderValues,
//                                                                     BearerToken, CookieValue
//   1 tus Upload-Metadata value                                     -> ParseTusMetadata,
//                                                                     CheckUploadFields
//   2 a number (Content-Length, Upload-Offset, Upload-Length)       -> ParseUint
//   3 base64                                                        -> Base64Decode
//   4 a project name                                                -> ProjectNameProblem
//   5 a Content-Encoding value                                      -> IsIdentityEncoding
// Missing fields are empty. Properties checked: no crash, no sanitizer report, and
// the invariants asserted below.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "serve/request_parse.h"

namespace {

std::vector<std::string_view> Split(std::string_view in, size_t n) {
  std::vector<std::string_view> out;
  while (out.size() + 1 < n) {
    const size_t cut = in.find('\xff');
    if (cut == std::string_view::npos) break;
    out.push_back(in.substr(0, cut));
    in.remove_prefix(cut + 1);
  }
  out.push_back(in);
  out.resize(n);
  return out;
}

void Require(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reel::serve;
  const auto f = Split(std::string_view(reinterpret_cast<const char*>(data), size), 6);

  for (const char* name : {"Authorization", "Cookie", "Content-Encoding", "Transfer-Encoding"}) {
    for (const std::string& value : RawHeaderValues(f[0], name)) {
      if (auto token = BearerToken(value)) {
        Require(!token->empty() && token->size() <= 4096);
        for (char c : *token) Require(c > 0x20 && c < 0x7f);
      }
      (void)CookieValue(value, "reel_session");
      (void)IsIdentityEncoding(value);
    }
  }

  std::map<std::string, std::string> fields;
  if (!ParseTusMetadata(f[1], 4096, &fields)) {
    Require(fields.size() <= 16);
    for (const auto& [key, value] : fields) Require(!key.empty() && value.size() <= 4096);
    UploadFields upload;
    if (!CheckUploadFields(fields, &upload)) {
      Require(ProjectNameProblem(upload.project).empty());
      Require(upload.form_episode_index >= 0);
    }
  }

  uint64_t number = 0;
  if (ParseUint(f[2], &number)) Require(!f[2].empty() && f[2].size() <= 19);

  std::string decoded;
  if (Base64Decode(f[3], &decoded)) Require(decoded.size() <= f[3].size() / 4 * 3);

  if (ProjectNameProblem(f[4]).empty()) {
    Require(!f[4].empty() && f[4].size() <= 255 && f[4][0] != '.');
    Require(f[4].find('/') == std::string_view::npos && f[4].find('\0') == std::string_view::npos);
  }
  (void)IsIdentityEncoding(f[5]);
  return 0;
}
