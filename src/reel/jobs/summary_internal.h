// Internal to the jobs area: what the summary jobs (info, show) share.
#pragma once

#include <memory>
#include <string>

#include "jobs/locations.h"
#include "reel/dataset.h"
#include "reel/object_store.h"
#include "reel/task.h"
#include "util/json_util.h"

namespace reel::internal {

// A summarized input: a pooled task or a foreign dataset (exactly one is set).
struct Opened {
  OpenedLocation location;
  std::unique_ptr<Task> task;
  std::unique_ptr<ForeignDataset> dataset;
};

// `path` opened as a LeRobot or bundle dataset when DetectFormat names one, else as a
// pooled task (whose errors then say what is wrong).
Result<Opened> OpenSummarized(Locations& at, const std::string& path);

// Episode N's mirror files with row counts, as `show` prints them.
Json KeypointsShowJson(const Task& task, const std::string& mirror, int64_t episode_index);

}  // namespace reel::internal
