// DeleteJob (include/reel/jobs.h): `reel delete` and reel.delete.
#include "reel/file_group.h"
#include "reel/jobs.h"
#include "reel/task.h"

namespace reel {

Result<DeleteReport> DeleteJob(const std::string& task, const std::vector<int64_t>& episodes, bool dry_run) {
  REEL_ASSIGN_OR_RETURN(auto opened, Task::Open(task));
  DeleteReport report;
  report.dry_run = dry_run;
  for (int64_t n : episodes) {
    REEL_ASSIGN_OR_RETURN(EpisodeEntry e, opened->FindEpisode(n));
    std::vector<std::string> files = EpisodeFileGroup(*opened, e).present;
    if (files.empty())
      return Status::NotFound("episode " + std::to_string(n) + " of " + task +
                              " has no data or videos left (deleted before?)");
    report.episodes.push_back({n, std::move(files)});
  }
  if (dry_run) return report;
  for (const DeletedEpisode& e : report.episodes) REEL_RETURN_IF_ERROR(DeleteEpisode(task, e.episode_index));
  return report;
}

}  // namespace reel
