// reel info | ls | show | frames on LeRobot v2.x/v3.x and bundle datasets
// (reel/dataset.h). The pooled commands dispatch here when DetectFormat names a
// foreign format; output keys follow the formats' own words.
#pragma once

#include <arrow/api.h>

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
int RunForeignInfo(const OpenedLocation& loc, bool json);
int RunForeignLs(const OpenedLocation& loc, bool json);
// `episode`: episode_index (LeRobot) or manifest position (bundle), 0-based.
int RunForeignShow(const OpenedLocation& loc, int64_t episode, bool json);
int RunForeignFrames(const OpenedLocation& loc, int64_t episode, const std::string& key,
                     const std::vector<int64_t>& rows, const std::string& out_dir, bool json);

// info_cmds.cc: the first `n` values of a column, formatted for people.
std::vector<std::string> SampleColumn(const arrow::ChunkedArray& column, int64_t n);

}  // namespace reel::cli
