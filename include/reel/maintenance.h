// The contract's maintenance tools (docs/maintenance.md): each reads a task, decides what
// to change, and changes it only through the episode transaction (write/transaction.h:
// Begin(lock, N) for one episode's files, BeginTaskChange(lock) for the task as a whole),
// so a tool killed at any moment leaves the old task or the new one and a re-run finishes
// the job. Every tool that writes has a dry run that reports the same plan without writing.
//
// One section per tool below; options are documented structs shared by the CLI
// (tools/reel/) and Python (python/src/).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "reel/fs.h"
#include "reel/progress.h"
#include "reel/status.h"

namespace reel {

// ---- split-episodes (legacy multi-row shards -> one file per episode) -------------------

// ---- stats --rebuild / --verify -----------------------------------------------------------

// ---- repair-scale (int16 force-matrix scale, contract §7.2.1) -----------------------------

// ---- migrate (v1.0 session folders -> pooled_episodes_v1) ---------------------------------

}  // namespace reel
