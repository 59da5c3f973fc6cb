#include "serve/request_parse.h"

#include <algorithm>
#include <limits>

namespace reel::serve {

namespace {

struct CodeRange {
  uint32_t lo, hi;
  int value;
};

#include "serve/name_tables.inc"

// The range holding `cp` in a sorted table, or null.
template <size_t N>
const CodeRange* Find(const CodeRange (&table)[N], uint32_t cp) {
  const CodeRange* end = table + N;
  const CodeRange* it =
      std::upper_bound(table, end, cp, [](uint32_t v, const CodeRange& r) { return v < r.lo; });
  if (it == table) return nullptr;
  --it;
  return cp <= it->hi ? it : nullptr;
}

// Decodes strict UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
bool DecodeUtf8(std::string_view s, std::vector<uint32_t>* out) {
  for (size_t i = 0; i < s.size();) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    int len = 0;
    uint32_t cp = 0, min = 0;
    if (b0 < 0x80) len = 1, cp = b0;
    else if ((b0 & 0xE0) == 0xC0) len = 2, cp = b0 & 0x1F, min = 0x80;
    else if ((b0 & 0xF0) == 0xE0) len = 3, cp = b0 & 0x0F, min = 0x800;
    else if ((b0 & 0xF8) == 0xF0) len = 4, cp = b0 & 0x07, min = 0x10000;
    else return false;
    if (i + static_cast<size_t>(len) > s.size()) return false;
    for (int k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      if ((b & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    out->push_back(cp);
    i += static_cast<size_t>(len);
  }
  return true;
}

std::string Hex(uint32_t cp) {
  static const char* kDigits = "0123456789ABCDEF";
  std::string out = "U+";
  bool started = false;
  for (int shift = 20; shift >= 0; shift -= 4) {
    const unsigned d = (cp >> shift) & 15;
    if (d || started || shift < 16) {
      out += kDigits[d];
      started = true;
    }
  }
  return out;
}

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (Lower(a[i]) != Lower(b[i])) return false;
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

bool ParseUint(std::string_view text, uint64_t* out) {
  if (text.empty() || text.size() > 19) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

bool Base64Decode(std::string_view in, std::string* out) {
  if (in.size() % 4) return false;
  size_t pad = 0;
  while (pad < 2 && pad < in.size() && in[in.size() - 1 - pad] == '=') ++pad;
  std::string decoded;
  decoded.reserve(in.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < in.size() - pad; ++i) {
    const int v = Base64Value(in[i]);
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      decoded.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  // Leftover bits must be the zero padding of the last group, and the padding must
  // match what the data length needs.
  if ((acc & ((1u << bits) - 1)) != 0) return false;
  if ((in.size() - pad) % 4 == 1) return false;
  *out = std::move(decoded);
  return true;
}

std::optional<FieldError> ParseTusMetadata(std::string_view header, size_t max_field_bytes,
                                           std::map<std::string, std::string>* out) {
  std::map<std::string, std::string> fields;
  if (Trim(header).empty()) {
    *out = std::move(fields);
    return std::nullopt;
  }
  size_t pos = 0;
  while (pos <= header.size()) {
    size_t end = header.find(',', pos);
    if (end == std::string_view::npos) end = header.size();
    const std::string_view pair = Trim(header.substr(pos, end - pos));
    const size_t space = pair.find(' ');
    const std::string_view key = pair.substr(0, space);
    const std::string_view encoded = space == std::string_view::npos ? std::string_view() : pair.substr(space + 1);
    if (key.empty() || key.size() > 64 ||
        std::any_of(key.begin(), key.end(), [](char c) { return c <= 0x20 || c >= 0x7f || c == ','; }))
      return FieldError{"tus.metadata", "Upload-Metadata holds a pair without a valid key"};
    if (fields.size() >= 16) return FieldError{"form.parts", "Upload-Metadata holds more than 16 pairs"};
    if (fields.count(std::string(key)))
      return FieldError{"tus.metadata", "Upload-Metadata names `" + std::string(key) + "` twice"};
    if (encoded.size() > (max_field_bytes + 2) / 3 * 4 + 4)
      return FieldError{"form.field_size", "metadata `" + std::string(key) + "` is longer than " +
                                               std::to_string(max_field_bytes) + " bytes"};
    std::string value;
    if (!Base64Decode(encoded, &value))
      return FieldError{"tus.metadata", "Upload-Metadata value of `" + std::string(key) + "` is not base64"};
    if (value.size() > max_field_bytes)
      return FieldError{"form.field_size", "metadata `" + std::string(key) + "` is longer than " +
                                               std::to_string(max_field_bytes) + " bytes"};
    fields.emplace(std::string(key), std::move(value));
    if (end == header.size()) break;
    pos = end + 1;
  }
  *out = std::move(fields);
  return std::nullopt;
}

std::string ProjectOf(const std::map<std::string, std::string>& fields) {
  auto it = fields.find("project_id");
  if (it != fields.end() && !it->second.empty()) return it->second;
  it = fields.find("name");
  return it == fields.end() ? std::string() : it->second;
}

std::optional<FieldError> CheckUploadFields(const std::map<std::string, std::string>& fields,
                                            UploadFields* out) {
  auto get = [&](const char* key) {
    auto it = fields.find(key);
    return it == fields.end() ? std::string() : it->second;
  };
  out->name = get("name");
  out->project = ProjectOf(fields);
  if (out->name.empty()) return FieldError{"form.name", "the form field `name` (the task name) is missing"};
  if (std::string problem = ProjectNameProblem(out->name); !problem.empty())
    return FieldError{"form.name", "the task name is refused: " + problem};
  if (out->project != out->name)
    if (std::string problem = ProjectNameProblem(out->project); !problem.empty())
      return FieldError{"form.name", "the project_id is refused: " + problem};
  const std::string idx = get("episode_index");
  if (idx.empty())
    return FieldError{"form.episode_index",
                      "the form field `episode_index` ((N-1) % 1000, contract §9) is missing"};
  uint64_t v = 0;
  if (!ParseUint(idx, &v) || v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return FieldError{"form.episode_index", "episode_index is not a non-negative integer"};
  out->form_episode_index = static_cast<int64_t>(v);
  return std::nullopt;
}

std::string ProjectNameProblem(std::string_view name) {
  if (name.empty()) return "it is empty";
  if (name.size() > 255) return "it is longer than 255 bytes";
  if (name[0] == '.') return "it starts with '.'";
  std::vector<uint32_t> cps;
  if (!DecodeUtf8(name, &cps)) return "it is not valid UTF-8";
  if (Find(kSpace, cps.front()) || Find(kSpace, cps.back())) return "it starts or ends with white space";
  int last_class = 0;
  for (uint32_t cp : cps) {
    if (cp == '/' || cp == '\\') return "it holds '/' or '\\'";
    if (Find(kRefused, cp))
      return "it holds " + Hex(cp) + " (a control, format, bidi, invisible, private-use or unassigned code point)";
    if (Find(kNotNfc, cp)) return "it is not in Unicode NFC (" + Hex(cp) + "); send the NFC form";
    const CodeRange* cc = Find(kCombiningClass, cp);
    const int klass = cc ? cc->value : 0;
    if (klass != 0 && last_class > klass) return "its combining marks are not in canonical order (" + Hex(cp) + ")";
    last_class = klass;
  }
  return "";
}

std::string CookieValue(std::string_view header, std::string_view name) {
  size_t pos = 0;
  while (pos < header.size()) {
    size_t end = header.find(';', pos);
    if (end == std::string_view::npos) end = header.size();
    const std::string_view part = Trim(header.substr(pos, end - pos));
    if (part.size() > name.size() && part.substr(0, name.size()) == name && part[name.size()] == '=')
      return std::string(part.substr(name.size() + 1));
    pos = end + 1;
  }
  return "";
}

std::optional<std::string> BearerToken(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size() || !IEquals(authorization.substr(0, kScheme.size()), kScheme))
    return std::nullopt;
  const std::string_view token = authorization.substr(kScheme.size());
  if (token.size() > 4096) return std::nullopt;
  for (char c : token)
    if (static_cast<unsigned char>(c) < 0x21 || static_cast<unsigned char>(c) > 0x7e) return std::nullopt;
  return std::string(token);
}

std::vector<std::string> RawHeaderValues(std::string_view head, std::string_view name) {
  std::vector<std::string> out;
  size_t pos = head.find("\r\n");  // skip the request line
  while (pos != std::string_view::npos && pos + 2 < head.size()) {
    const size_t start = pos + 2;
    const size_t end = head.find("\r\n", start);
    const std::string_view line = head.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (line.empty()) break;  // the blank line ends the head
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos && IEquals(line.substr(0, colon), name))
      out.emplace_back(Trim(line.substr(colon + 1)));
    pos = end;
  }
  return out;
}

bool IsIdentityEncoding(std::string_view value) {
  value = Trim(value);
  return value.empty() || IEquals(value, "identity");
}

}  // namespace reel::serve

namespace reel {

bool IsValidProjectName(const std::string& name) { return serve::ProjectNameProblem(name).empty(); }

}  // namespace reel
