// Internal: JSON files read through the FileSystem, held to their bound before they are
// read. A file's size is known from a stat (a HEAD on an object store) first, so a 1 GiB
// info.json is refused for the cost of that stat, not of reading it (issue 27, finding 11:
// 2.1 GB locally, 1.1 GB on S3, before the parser's 64 MiB bound applied).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "reel/fs.h"
#include "reel/json_limits.h"
#include "reel/status.h"
#include "util/json_util.h"

namespace reel::internal {

// The bound of a JSON file reel reads (JsonLimits' default).
inline constexpr int64_t kJsonFileBytes = JsonLimits{}.max_bytes;

// The bytes of `path`, when it is a file of at most `max_bytes`: Invalid "<path>: json.size:
// N bytes of JSON, more than the limit of M" (rule json.size) from its stat, before it is
// read, and again if it grew while read; NotFound naming it when it is not a file.
Result<std::string> ReadFileBounded(FileSystem* fs, const std::string& path, int64_t max_bytes);

// ReadFileBounded(limits.max_bytes), then ParseJson: the one way a JSON file is read.
Result<Json> ReadJsonFile(FileSystem* fs, const std::string& path, const JsonLimits& limits = {});
// ReadJsonFile, and Invalid "<path>: must be a JSON object, found <type>" for another value.
// With `keep`, only the top-level keys it accepts are built; the others' values are parsed
// and dropped as they are read (a 45 MB key nobody reads costs no document of it).
Result<Json> ReadJsonObjectFile(FileSystem* fs, const std::string& path, const JsonLimits& limits = {},
                                const std::function<bool(const std::string& key)>& keep = nullptr);

}  // namespace reel::internal
