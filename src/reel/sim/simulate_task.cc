// SimulateTask: the simulated rig recorded into a task, episode by episode through the
// episode transaction (`reel simulate`, reel.simulate).
#include <sys/resource.h>

#include <chrono>

#include "reel/fs.h"
#include "reel/simulate.h"

namespace reel {
namespace {

// CPU seconds (user + system, all threads) used by this process so far.
double CpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Adds the CPU and wall seconds `run` takes to `profile` (when there is one).
template <typename Fn>
auto Timed(SimulateProfile* profile, Fn&& run) {
  const double cpu0 = CpuSeconds(), wall0 = WallSeconds();
  auto result = run();
  if (profile) {
    profile->record_cpu_s += CpuSeconds() - cpu0;
    profile->record_wall_s += WallSeconds() - wall0;
  }
  return result;
}

// Appends the episode's rows. Profiled, the rows are made first and only the recorder's
// part (append, with the video frames pushed and encoded) is timed.
Status RecordEpisode(EpisodeWriter& episode, const SimulateOptions& rig, SimulateProfile* profile) {
  if (!profile) return SimulateEpisode(episode, rig, episode.episode_index());
  std::vector<FrameRow> rows;
  REEL_RETURN_IF_ERROR(SimulateRows(rig, episode.episode_index(), [&rows](const FrameRow& row) {
    rows.push_back(row);
    return Status::OK();
  }));
  return Timed(profile, [&] { return AppendSimulatedRows(episode, rig, rows); });
}

}  // namespace

Result<SimulateReport> SimulateTask(const std::string& task, const SimulateTaskOptions& options) {
  if (options.replace && options.episode_index <= 0)
    return Status::Invalid("simulate: replace re-records a number: give it as the episode index");
  TaskWriterOptions writer_options =
      SimulatedRigOptions(options.task_name.empty() ? TaskDirName(task) : options.task_name, options.rig);
  std::vector<VideoSlotOptions> slots = std::move(writer_options.video.slots);  // the rig's
  writer_options.video = options.video;
  writer_options.video.slots = std::move(slots);
  writer_options.progress_watermark = options.progress_watermark;
  REEL_ASSIGN_OR_RETURN(auto writer, TaskWriter::Open(task, writer_options));
  SimulateReport report;
  if (options.profile) report.profile.emplace();
  SimulateProfile* profile = report.profile ? &*report.profile : nullptr;
  const int64_t count = options.episode_index > 0 ? 1 : options.count;
  for (int64_t k = 0; k < count; ++k) {
    REEL_ASSIGN_OR_RETURN(auto episode, options.episode_index > 0
                                            ? writer->BeginEpisode(options.episode_index, options.replace)
                                            : writer->BeginEpisode());
    REEL_RETURN_IF_ERROR(RecordEpisode(*episode, options.rig, profile));
    SimulatedEpisode done{episode->episode_index(), episode->rows(), !(options.abort_last && k + 1 == count)};
    if (done.committed) {
      REEL_RETURN_IF_ERROR(Timed(profile, [&] { return episode->Commit(); }).status());
    } else {
      REEL_RETURN_IF_ERROR(episode->Abort());
    }
    report.episodes.push_back(done);
    if (options.progress)
      options.progress({"episodes recorded", k + 1, count, "episode " + std::to_string(done.episode_index)});
  }
  if (profile) profile->recorded_s = options.rig.seconds * static_cast<double>(count);
  return report;
}

}  // namespace reel
