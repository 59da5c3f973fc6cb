#include "reel/status.h"

#include <cstdio>
#include <cstdlib>

namespace reel {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalid: return "Invalid";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kCorruption: return "Corruption";
    case StatusCode::kIOError: return "IOError";
    case StatusCode::kPermissionDenied: return "PermissionDenied";
    case StatusCode::kNotSupported: return "NotSupported";
    case StatusCode::kAlreadyExists: return "AlreadyExists";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  Status out(code_, context + ": " + message_);
  out.rule_ = rule_;
  return out;
}

Status Status::WithRule(std::string rule) const {
  Status out = *this;
  if (!ok()) out.rule_ = std::move(rule);
  return out;
}

namespace internal {

void DieWithMessage(const std::string& message) {
  std::fprintf(stderr, "reel: fatal: %s\n", message.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace internal

}  // namespace reel
