// Internal: wall-clock time for the JSON records reel writes (recycled markers, push
// locks and journals, bundle manifests).
#pragma once

#include <string>

namespace reel::internal {

// Seconds since the Unix epoch, with sub-second precision (system clock).
double UnixNow();

// "2026-12-02T00:24:24Z": `unix_seconds` in UTC, whole seconds (truncated).
std::string IsoUtc(double unix_seconds);

}  // namespace reel::internal
