// time.* rules: the stamps of every stream of an episode, read by the same code that
// aligns them (reel/align.h FindEpisodeTimeEvents), so what `reel check` reports is what
// the alignment handles.
#include <arrow/api.h>

#include <cstdio>
#include <map>

#include "check/context.h"
#include "reel/align.h"

namespace reel::internal {

namespace {

const char* RuleOf(TimeEventKind kind) {
  switch (kind) {
    case TimeEventKind::kReset: return "time.clock_reset";
    case TimeEventKind::kRepeated: return "time.repeated_stamp";
    case TimeEventKind::kSilence: break;
  }
  return "time.stream_gap";
}

std::string Seconds(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f s", static_cast<double>(ns) / 1e9);
  return buf;
}

std::string Describe(const TimeEvent& e, size_t count) {
  const std::string times = count > 1 ? " (" + std::to_string(count) + " in this episode)" : "";
  const std::string row = std::to_string(e.row);
  switch (e.kind) {
    case TimeEventKind::kReset:
      return e.column + " steps back at row " + row + ", from " + std::to_string(e.from_ns) + " to " +
             std::to_string(e.to_ns) + times +
             ": a wrap or a device reset; reel pairs samples with frames within each stretch, never across it";
    case TimeEventKind::kRepeated:
      return e.column + " repeats the stamp " + std::to_string(e.to_ns) + " at row " + row + times +
             ": the same frame or sample written twice; reel pairs it once";
    case TimeEventKind::kSilence: break;
  }
  return e.column + " has no sample from row " + row + " to row " + std::to_string(e.to_row) + " (" +
         Seconds(e.to_ns - e.from_ns) + ")" + times +
         ": the stream stopped or was disconnected (an external frame source has no status column, "
         "multi-device §5.5); frames there have no sample of it";
}

}  // namespace

void CheckStreamTimes(const arrow::Table& t, const EpisodeEntry& e, FindingSink& sink) {
  auto events = FindEpisodeTimeEvents(t);
  if (!events.ok()) return;  // a stamp column of the wrong type is data.column_type's finding
  // The first event of each (column, kind), with how many there are.
  std::map<std::pair<std::string, int>, std::pair<const TimeEvent*, size_t>> first;
  std::vector<std::pair<std::string, int>> order;
  for (const TimeEvent& ev : *events) {
    auto key = std::make_pair(ev.column, static_cast<int>(ev.kind));
    auto [it, added] = first.try_emplace(key, &ev, 0);
    if (added) order.push_back(key);
    ++it->second.second;
  }
  for (const auto& key : order) {
    const auto& [ev, count] = first[key];
    sink.Add(RuleOf(ev->kind), e.data_path, Describe(*ev, count));
  }
}

}  // namespace reel::internal
