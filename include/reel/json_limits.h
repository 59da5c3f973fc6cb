// JSON bounds: the limits every JSON document from outside is held to before parsing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "reel/status.h"

namespace reel {

// Bounds on every JSON document reel reads: info.json, stats.json, tasks.jsonl lines,
// the JSON-string columns of the episodes rows, bundle and LeRobot metadata, the serve
// config and HTTP bodies. A document of the contract nests a handful of levels and
// weighs kilobytes; the bounds keep a hostile one from exhausting the stack (parsing,
// copying and printing JSON recurse once per level) or memory.
struct JsonLimits {
  int64_t max_bytes = int64_t{64} << 20;  // 64 MiB
  int max_depth = 64;                     // nested arrays and objects
};

// OK when `text` is within `limits`, else Invalid "<path>: json.size: ..." or
// "<path>: json.depth: ...", naming the value and the limit. A linear scan without
// recursion that does not validate the rest of the syntax; every reader of outside
// JSON calls it (through its parser) before parsing.
Status CheckJsonBounds(std::string_view text, const std::string& path,
                       const JsonLimits& limits = {});

}  // namespace reel
