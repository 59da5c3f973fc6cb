#include "util/json_util.h"

#include <cmath>
#include <cstdint>
#include <limits>

namespace reel {

Status CheckJsonBounds(std::string_view text, const std::string& path, const JsonLimits& limits) {
  if (static_cast<int64_t>(text.size()) > limits.max_bytes)
    return Status::Invalid(path + ": json.size: " + std::to_string(text.size()) +
                           " bytes of JSON, more than the limit of " +
                           std::to_string(limits.max_bytes))
        .WithRule("json.size");
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character cannot end the string
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limits.max_depth)
        return Status::Invalid(path + ": json.depth: arrays and objects nested more than " +
                               std::to_string(limits.max_depth) + " levels deep (at byte " +
                               std::to_string(i) + ")")
            .WithRule("json.depth");
    } else if (c == ']' || c == '}') {
      if (depth > 0) --depth;  // unbalanced closers are the parser's to report
    }
  }
  return Status::OK();
}

namespace internal {

Result<Json> ParseJson(std::string_view text, const std::string& path, const JsonLimits& limits,
                       const Json::parser_callback_t& filter) {
  REEL_RETURN_IF_ERROR(CheckJsonBounds(text, path, limits));
  try {
    return Json::parse(text.begin(), text.end(), filter);
  } catch (const Json::parse_error& e) {
    return Status::Invalid(path + ": malformed JSON (" + std::string(e.what()) + ")");
  } catch (const Json::out_of_range& e) {
    // nlohmann reports a number that overflows a double (1e999) as out_of_range.406.
    return Status::Invalid(path + ": json.number: a number outside the range of a double (" +
                           std::string(e.what()) + ")")
        .WithRule("json.number");
  } catch (const Json::exception& e) {
    return Status::Invalid(path + ": malformed JSON (" + std::string(e.what()) + ")");
  }
}

std::string JsonTypeName(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::object: return "a JSON object";
    case Json::value_t::array: return "a JSON array";
    case Json::value_t::string: return "a string";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::number_float: return "a number";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "an integer";
    default: return "an unsupported JSON value";
  }
}

std::string Brief(const Json& j) {
  std::string s = Dump(j, -1);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

namespace {
Status WrongType(const char* key, const std::string& path, const char* want, const Json& v) {
  return Status::Invalid(path + ": key \"" + key + "\" must be " + want + ", found " +
                         JsonTypeName(v) + " " + Brief(v));
}
}  // namespace

Status GetString(const Json& obj, const char* key, const std::string& path, std::string& out) {
  auto it = obj.find(key);
  if (it == obj.end()) return Status::OK();
  if (!it->is_string()) return WrongType(key, path, "a string", *it);
  out = it->get<std::string>();
  return Status::OK();
}

Status GetInt(const Json& obj, const char* key, const std::string& path, int64_t& out) {
  auto it = obj.find(key);
  if (it == obj.end()) return Status::OK();
  if (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t{std::numeric_limits<int64_t>::max()})
    return WrongType(key, path, "an integer within int64", *it);
  if (it->is_number_integer()) {
    out = it->get<int64_t>();
    return Status::OK();
  }
  // 1000.0 is accepted as an integer; 1000.5 is not. The range is checked before the
  // cast: casting a double an int64 cannot hold (1e22) is undefined.
  if (it->is_number_float()) {
    const double d = it->get<double>();
    if (d >= -0x1p63 && d < 0x1p63 && d == static_cast<double>(static_cast<int64_t>(d))) {
      out = static_cast<int64_t>(d);
      return Status::OK();
    }
  }
  return WrongType(key, path, "an integer", *it);
}

Status GetDouble(const Json& obj, const char* key, const std::string& path, double& out) {
  auto it = obj.find(key);
  if (it == obj.end()) return Status::OK();
  if (!it->is_number()) return WrongType(key, path, "a number", *it);
  out = it->get<double>();
  return Status::OK();
}

Status GetBool(const Json& obj, const char* key, const std::string& path, bool& out) {
  auto it = obj.find(key);
  if (it == obj.end()) return Status::OK();
  if (!it->is_boolean()) return WrongType(key, path, "true or false", *it);
  out = it->get<bool>();
  return Status::OK();
}

Status GetStringList(const Json& obj, const char* key, const std::string& path,
                     std::vector<std::string>& out) {
  auto it = obj.find(key);
  if (it == obj.end()) return Status::OK();
  if (!it->is_array()) return WrongType(key, path, "a list of strings", *it);
  out.clear();
  for (const Json& v : *it) {
    if (!v.is_string()) return WrongType(key, path, "a list of strings", *it);
    out.push_back(v.get<std::string>());
  }
  return Status::OK();
}

Json ScaleJson(double scale) {
  constexpr double kExactInt = 9007199254740992.0;  // 2^53: every integer below is exact
  if (std::isfinite(scale) && std::floor(scale) == scale && std::fabs(scale) < kExactInt)
    return Json(static_cast<int64_t>(scale));
  return Json(scale);
}

std::string Dump(const Json& j, int indent) {
  return j.dump(indent, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
}

}  // namespace internal
}  // namespace reel
