// The upload client's reading of server answers (src/reel/upload/protocol.h): the JSON
// body of an import answer or an error, with its status code and Retry-After header.
// Input: byte 0 picks the status code, then <Retry-After value> SEP <body>.
#include "harness_util.h"
#include "upload/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reel;
  static const int kStatus[] = {0, 200, 201, 400, 401, 403, 404, 408, 409, 413, 422, 429, 500, 503, 302, 204};
  if (size < 1) return 0;
  auto parts = fuzz::SplitParts(data + 1, size - 1, 2);
  upload::HttpResponse r;
  r.status = kStatus[data[0] % 16];
  if (r.status == 0) r.transport_error = "Read";
  if (!parts[0].empty()) r.headers.emplace_back("Retry-After", std::string(parts[0]));
  r.headers.emplace_back("Content-Type", "application/json");
  r.body = std::string(parts[1]);
  (void)upload::JudgeAnswer(r, "POST /api/v1/session/upload");
  (void)upload::ParseImportAnswer(r, "POST /api/v1/session/upload");
  return 0;
}
