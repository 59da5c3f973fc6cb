// Progress of long jobs (export, import, check, pack --precompress), reported through
// a callback field of their options struct. The library only reports; the CLI renders
// (a bar on a terminal, or one JSON line per update), Python may forward it.
//
// Thread safety: the library calls a ProgressFn from one thread at a time (not always
// the caller's thread). It must not throw; it may be empty (no reports).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace reel {

struct Progress {
  std::string stage;   // what is counted: "episodes checked", "episodes exported", "videos re-encoded"
  int64_t done = 0;    // units finished so far
  int64_t total = 0;   // units in all; 0 = not known
  std::string item;    // the unit just finished, for people (e.g. "episode 7"); may be empty
};

using ProgressFn = std::function<void(const Progress&)>;

}  // namespace reel
