// reel info | ls | show | frames on LeRobot v2.x/v3.x and bundle datasets
// (reel/dataset.h). The pooled commands dispatch here when DetectFormat names a
// foreign format; output keys follow the formats' own words.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "reel/object_store.h"
#include "reel/status.h"

namespace reel::cli {

// True when `loc` is a dataset ForeignDataset reads. False for anything else,
// including unreadable paths (the pooled path then reports those).
bool IsForeignRoot(const OpenedLocation& loc);

// `loc`: the input as OpenInput resolved it (outputs are named by loc.display).
int RunForeignLs(const OpenedLocation& loc, bool json);
// `info`'s text of a foreign dataset from its document (reel/jobs.h InfoJob).
void PrintForeignInfo(const nlohmann::ordered_json& info);
int RunForeignFrames(const OpenedLocation& loc, int64_t episode, const std::string& key,
                     const std::vector<int64_t>& rows, const std::string& out_dir, bool json);

}  // namespace reel::cli
