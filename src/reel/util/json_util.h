// Internal: typed access to nlohmann::ordered_json with contract-style errors.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reel/json_limits.h"
#include "reel/status.h"

namespace reel::internal {

using Json = nlohmann::ordered_json;

// The one way reel parses JSON: `text` is first held to `limits` (CheckJsonBounds),
// then parsed. Invalid "<path>: malformed JSON (<where>)" on a syntax error,
// "<path>: json.number: ..." on a number outside the range of a double (1e999),
// "<path>: json.depth: ..." / "json.size: ..." past the limits. Never throws.
// `filter`, when given, is nlohmann's parser callback: a value it returns false for is
// dropped as it is read, never built (e.g. a top-level key nobody reads).
Result<Json> ParseJson(std::string_view text, const std::string& path,
                       const JsonLimits& limits = {}, const Json::parser_callback_t& filter = nullptr);

// "a JSON array", "a string", ... for messages.
std::string JsonTypeName(const Json& j);
// The value in short form for messages (truncated to ~60 chars).
std::string Brief(const Json& j);

// Typed field readers: absent key -> `out` untouched and OK; wrong type ->
// Invalid "<path>: key \"<key>\" must be <type>, found <brief>".
Status GetString(const Json& obj, const char* key, const std::string& path, std::string& out);
Status GetInt(const Json& obj, const char* key, const std::string& path, int64_t& out);
Status GetDouble(const Json& obj, const char* key, const std::string& path, double& out);
Status GetBool(const Json& obj, const char* key, const std::string& path, bool& out);
Status GetStringList(const Json& obj, const char* key, const std::string& path,
                     std::vector<std::string>& out);

// A scale as the collector writes it: an integer when it is one (`100`, not `100.0`;
// contract-decisions "scale"), else the double. A strictly typed reader rejects 100.0.
Json ScaleJson(double scale);

// Dumps with indent 2 (or compact with indent < 0), UTF-8 kept as is.
std::string Dump(const Json& j, int indent);

}  // namespace reel::internal
