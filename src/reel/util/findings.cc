#include "reel/findings.h"

namespace reel {

const char* SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kInfo: return "info";
    case Severity::kWarning: return "warning";
    case Severity::kError: return "error";
  }
  return "error";
}

int64_t TaskReport::Count(Severity severity) const {
  int64_t n = 0;
  for (const Finding& f : findings) n += f.severity == severity;
  return n;
}

}  // namespace reel
