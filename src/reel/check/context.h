// Internal: state shared by the checker's rule groups.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "reel/check.h"
#include "reel/metadata.h"
#include "reel/task.h"

namespace arrow {
class Table;
}

namespace reel::internal {

// Findings of one unit of work (the task, or one episode), later merged in order.
class FindingSink {
 public:
  // Adds a finding with the rule's catalog severity.
  void Add(const char* rule, std::string path, std::string message);
  void Add(const char* rule, Severity severity, std::string path, std::string message);
  std::vector<Finding>& findings() { return findings_; }

 private:
  std::vector<Finding> findings_;
};

// Per-episode rules: the episodes row, the data parquet, the video files. `deep`:
// CheckOptions::deep (force-matrix columns read through Arrow, values and all). Returns the
// data parquet's column names (none when it has no readable data file), for the task-wide
// rules that look across episodes (CheckColumnSpans).
std::vector<std::string> CheckEpisode(const Task& task, const EpisodeEntry& episode, FindingSink& sink, bool deep);

// The first and last episode (N) in which each data column appears.
class ColumnSpans {
 public:
  void Add(const std::string& column, int64_t n);
  const std::map<std::string, std::pair<int64_t, int64_t>>& spans() const { return spans_; }

 private:
  std::map<std::string, std::pair<int64_t, int64_t>> spans_;
};
// Task-wide rules over the columns' spans: data.column_renamed.
void CheckColumnSpans(const InfoJson& info, const ColumnSpans& spans, FindingSink& sink);

// Video files opened with FFmpeg: video.unreadable, and video.frame_count against
// `data_rows` (the data parquet's rows; nullopt when there is no readable data file).
void CheckVideoFiles(const Task& task, const EpisodeEntry& episode, std::optional<int64_t> data_rows,
                     FindingSink& sink);

// Depth slots are named <base>_depth, <base>_depth_<N> or stereo_depth (multi-device §4.3,
// §4.4); "D435_depth_rgb" is an RGB slot.
bool IsDepthSlot(const std::string& slot);
// A double for messages: the shortest text that reads back exactly (15, 29.97), and nan / inf /
// -inf by name.
std::string FormatDouble(double v);

// data.column_name (multi-device §2.4): lower-case [a-z0-9_] segments of observation.*
// columns, retired names (observation.images.*, gripper_1_*, slam_pose). Also add-columns'
// name rule, so it refuses what the checker reports.
void CheckColumnName(const std::string& name, const std::string& where, FindingSink& sink);

// time.clock_reset, time.repeated_stamp, time.stream_gap over an episode's data table
// (check/time_rules.cc; the events are reel/align.h's).
void CheckStreamTimes(const arrow::Table& t, const EpisodeEntry& e, FindingSink& sink);

// True for the data parquet key columns of contract §7.1 / multi-device §3.
bool IsKeyColumn(const std::string& name);

}  // namespace reel::internal
