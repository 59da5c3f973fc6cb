// Internal: the name rules of an untrusted upload slice (pack.h, docs/serve.md),
// independent of libzip so they can be tested on plain strings.
#pragma once

#include <cstdint>
#include <string>

#include "reel/status.h"

namespace reel::internal {

// Status::Invalid whose message is "<rule>: <message>" and whose rule() is `rule`.
Status SliceError(const char* rule, const std::string& message);
// The same with StatusCode kNotSupported (an unknown compression method or format).
Status SliceNotSupported(const char* rule, const std::string& message);

// `name` for messages: quoted, with bytes outside printable ASCII as \xNN, so a
// hostile name cannot forge log lines or terminal escapes.
std::string QuoteName(const std::string& name);

// The shape of an entry name, before it is compared with the allowed paths:
// zip.name (empty, NUL, backslash, not UTF-8, a directory entry ending in '/',
// an empty or "." component), zip.absolute ('/...', 'C:...'), zip.traversal ('..').
Status CheckEntryName(const std::string& name);

// What an allowed slice path is.
struct SlicePath {
  // kAux: an auxiliary stream beside an episode's video (contract 000 §8, AuxStreamMainStem);
  // accepted in a slice and not imported ("非主键可忽略": may be ignored).
  enum class Kind { kInfo, kStats, kTasks, kData, kEpisodes, kVideo, kAux };
  Kind kind = Kind::kInfo;
  bool episode_file = false;  // kData, kEpisodes, kVideo, kAux: carries (chunk, file)
  int64_t chunk = 0;
  int64_t file = 0;
  std::string image_key;  // kVideo, kAux
};

// Classifies a name that passed CheckEntryName; zip.not_allowed for anything that
// is not one of the slice paths of contract §9 (dotfiles included).
Result<SlicePath> ClassifySlicePath(const std::string& name);

// The three meta files, whose size is bounded by SliceLimits::max_meta_bytes.
inline bool IsMetaJson(const SlicePath& p) {
  return p.kind == SlicePath::Kind::kInfo || p.kind == SlicePath::Kind::kStats ||
         p.kind == SlicePath::Kind::kTasks;
}

// ASCII case folding, for the duplicate rule (case-insensitive file systems).
std::string FoldCase(const std::string& name);

}  // namespace reel::internal
