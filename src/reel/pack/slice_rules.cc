// Name rules of an untrusted upload slice, SliceRules() and RuleOf().
#include "pack/slice_rules.h"

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reel/layout.h"
#include "reel/pack.h"

namespace reel {

const std::vector<SliceRule>& SliceRules() {
  static const std::vector<SliceRule> rules = {
      {"zip.unreadable", "not a zip, a corrupt or inconsistent one, or an entry failing its CRC"},
      {"zip.entry_count", "more entries than SliceLimits::max_entries"},
      {"zip.name", "an empty name, NUL, backslash, non-UTF-8 bytes, an empty or \".\" component, "
                   "or a directory entry (name ending in '/'; slices hold files only)"},
      {"zip.absolute", "an absolute name ('/x' or a drive letter 'C:x')"},
      {"zip.traversal", "a \"..\" component (Zip Slip)"},
      {"zip.symlink", "a symlink or other non-regular entry (Unix mode in the external attributes)"},
      {"zip.duplicate", "two entries with the same name after ASCII case folding"},
      {"zip.encrypted", "an encrypted entry"},
      {"zip.method", "a compression method other than stored or deflate (NotSupported)"},
      {"zip.entry_size", "an entry larger than max_entry_bytes (max_meta_bytes for the meta files), "
                         "declared or actually extracted, or one yielding more than its header says"},
      {"zip.total_size", "entries larger than max_total_bytes together, declared or extracted"},
      {"zip.ratio", "an entry whose uncompressed/compressed size exceeds max_ratio"},
      {"zip.overlap", "entries whose compressed data cannot all fit in the archive "
                      "(overlapping-entry zip bomb)"},
      {"zip.not_allowed", "a name that is not a slice path: meta/info.json, meta/stats.json, "
                          "meta/tasks.jsonl, data/chunk-CCC/episode-FFF.parquet, "
                          "meta/episodes/chunk-CCC/episode-FFF.parquet, "
                          "videos/chunk-CCC/<image_key>/episode-FFF.<mp4|mkv> (image_key: "
                          "[A-Za-z0-9_][A-Za-z0-9_.-]* plus visible non-ASCII letters); no dotfiles"},
      {"zip.mixed_episode", "episode entries naming different (chunk, file)"},
      {"zip.missing", "no data parquet, no episodes file or no meta/info.json"},
      {"zip.format", "meta/info.json is not a JSON object with format \"pooled_episodes_v1\" "
                     "(NotSupported for another format)"},
  };
  return rules;
}

std::string RuleOf(const Status& status) { return status.rule(); }

namespace internal {

Status SliceError(const char* rule, const std::string& message) {
  return Status::Invalid(std::string(rule) + ": " + message).WithRule(rule);
}

Status SliceNotSupported(const char* rule, const std::string& message) {
  return Status::NotSupported(std::string(rule) + ": " + message).WithRule(rule);
}

std::string QuoteName(const std::string& name) {
  std::string out = "'";
  for (unsigned char c : name) {
    if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
    }
  }
  return out + "'";
}

namespace {

// Strict UTF-8 (no overlong forms, no surrogates, at most U+10FFFF).
bool IsUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    int extra = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      extra = 1, cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      extra = 2, cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      extra = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + extra >= s.size()) return false;
    for (int k = 1; k <= extra; ++k) {
      const unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[extra] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += extra + 1;
  }
  return true;
}

std::vector<std::string_view> SplitPath(std::string_view s) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t slash = s.find('/', start);
    parts.push_back(s.substr(start, slash == std::string_view::npos ? s.npos : slash - start));
    if (slash == std::string_view::npos) return parts;
    start = slash + 1;
  }
}

// "chunk-007" with prefix "chunk-": the number, written as {:03d} writes it
// (at least three digits, no extra leading zeros), at most nine digits.
bool ParseNumbered(std::string_view s, std::string_view prefix, std::string_view suffix,
                   int64_t* value) {
  if (!s.starts_with(prefix) || !s.ends_with(suffix) || s.size() < prefix.size() + suffix.size())
    return false;
  const std::string_view digits = s.substr(prefix.size(), s.size() - prefix.size() - suffix.size());
  if (digits.size() < 3 || digits.size() > 9) return false;
  if (digits.size() > 3 && digits[0] == '0') return false;
  int64_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *value = v;
  return true;
}

// A slot name: [A-Za-z0-9_][A-Za-z0-9_.-]*, widened to non-ASCII letters because
// slot names may be Chinese (contract §1, tests/e2e/test_unicode.py). Code points that
// are invisible or reorder text (C1 controls, U+2000-U+206F spaces and bidi marks,
// specials) are refused so a name cannot disguise itself. `key` is valid UTF-8.
bool IsImageKey(std::string_view key) {
  if (key.empty()) return false;
  for (size_t i = 0; i < key.size();) {
    const unsigned char c = static_cast<unsigned char>(key[i]);
    if (c < 0x80) {
      const bool word = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                        c == '_';
      if (!word && (i == 0 || (c != '.' && c != '-'))) return false;
      ++i;
      continue;
    }
    const int len = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : 4;
    if (i + static_cast<size_t>(len) > key.size()) return false;
    uint32_t cp = c & (len == 2 ? 0x1f : len == 3 ? 0x0f : 0x07);
    for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(key[i + k]) & 0x3f);
    const bool hidden = cp < 0xa0 || (cp >= 0x2000 && cp <= 0x206f) || cp == 0x3000 ||
                        (cp >= 0xfe00 && cp <= 0xfe0f) || cp == 0xfeff || (cp >= 0xfff0 && cp <= 0xffff) ||
                        cp >= 0xe0000;
    if (hidden) return false;
    i += static_cast<size_t>(len);
  }
  return true;
}

}  // namespace

Status CheckEntryName(const std::string& name) {
  const std::string q = QuoteName(name);
  if (name.empty()) return SliceError("zip.name", "an entry has an empty name");
  if (name.find('\0') != std::string::npos)
    return SliceError("zip.name", "entry " + q + " has a NUL byte in its name");
  if (name.find('\\') != std::string::npos)
    return SliceError("zip.name", "entry " + q + " has a backslash in its name");
  if (!IsUtf8(name)) return SliceError("zip.name", "entry " + q + " is not valid UTF-8");
  const bool drive = name.size() >= 2 && name[1] == ':' &&
                     ((name[0] >= 'A' && name[0] <= 'Z') || (name[0] >= 'a' && name[0] <= 'z'));
  if (name[0] == '/' || drive)
    return SliceError("zip.absolute", "entry " + q + " is an absolute path");
  const auto parts = SplitPath(name);
  for (std::string_view part : parts)
    if (part == "..") return SliceError("zip.traversal", "entry " + q + " leaves the task directory");
  if (name.back() == '/')
    return SliceError("zip.name", "entry " + q + " is a directory entry; a slice holds files only");
  for (std::string_view part : parts)
    if (part.empty() || part == ".")
      return SliceError("zip.name", "entry " + q + " has an empty or \".\" path component");
  return Status::OK();
}

Result<SlicePath> ClassifySlicePath(const std::string& name) {
  const std::string q = QuoteName(name);
  const auto parts = SplitPath(name);
  for (std::string_view part : parts)
    if (!part.empty() && part[0] == '.')
      return SliceError("zip.not_allowed", "entry " + q + " is a dotfile; dotfiles never go in a slice");
  SlicePath p;
  if (name == "meta/info.json" || name == "meta/stats.json" || name == "meta/tasks.jsonl") {
    p.kind = name == "meta/info.json"    ? SlicePath::Kind::kInfo
             : name == "meta/stats.json" ? SlicePath::Kind::kStats
                                         : SlicePath::Kind::kTasks;
    return p;
  }
  p.episode_file = true;
  if (parts.size() == 3 && parts[0] == "data" && ParseNumbered(parts[1], "chunk-", "", &p.chunk) &&
      ParseNumbered(parts[2], "episode-", ".parquet", &p.file)) {
    p.kind = SlicePath::Kind::kData;
    return p;
  }
  if (parts.size() == 4 && parts[0] == "meta" && parts[1] == "episodes" &&
      ParseNumbered(parts[2], "chunk-", "", &p.chunk) &&
      ParseNumbered(parts[3], "episode-", ".parquet", &p.file)) {
    p.kind = SlicePath::Kind::kEpisodes;
    return p;
  }
  if (parts.size() == 4 && parts[0] == "videos" && ParseNumbered(parts[1], "chunk-", "", &p.chunk) &&
      IsImageKey(parts[2]) &&
      (ParseNumbered(parts[3], "episode-", ".mp4", &p.file) ||
       ParseNumbered(parts[3], "episode-", ".mkv", &p.file))) {
    p.kind = SlicePath::Kind::kVideo;
    p.image_key = std::string(parts[2]);
    return p;
  }
  if (parts.size() == 4 && parts[0] == "videos" && ParseNumbered(parts[1], "chunk-", "", &p.chunk) &&
      IsImageKey(parts[2])) {
    if (std::optional<std::string> stem = AuxStreamMainStem(parts[3]);
        stem && ParseNumbered(*stem + ".mp4", "episode-", ".mp4", &p.file)) {
      p.kind = SlicePath::Kind::kAux;
      p.image_key = std::string(parts[2]);
      return p;
    }
  }
  return SliceError("zip.not_allowed", "entry " + q + " is not a slice path (meta/info.json, "
                    "meta/stats.json, meta/tasks.jsonl, data/chunk-CCC/episode-FFF.parquet, "
                    "meta/episodes/chunk-CCC/episode-FFF.parquet or "
                    "videos/chunk-CCC/<image_key>/episode-FFF.<mp4|mkv>, or an auxiliary stream "
                    "episode-FFF_aux[_<name>].<mp4|mkv> beside it)");
}

std::string FoldCase(const std::string& name) {
  std::string out = name;
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

}  // namespace internal
}  // namespace reel
