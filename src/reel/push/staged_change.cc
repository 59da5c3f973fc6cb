// ChangeStoredTask (reel/push.h): the episode transaction for a task on an object store,
// run against a local staging directory that reads through to the store, then pushed.
#include <set>

#include "io/durable_dirs.h"
#include "io/read_through_fs.h"
#include "io/scratch_dir.h"
#include "layout/journal.h"
#include "push/push_internal.h"
#include "reel/push.h"
#include "reel/task.h"

namespace reel {
namespace {

// The episodes whose row the change wrote into the staging directory.
Result<std::vector<int64_t>> StagedEpisodes(internal::ReadThroughFileSystem* fs, const std::string& root) {
  REEL_ASSIGN_OR_RETURN(auto task, Task::Open(root, {fs, 4}));
  REEL_ASSIGN_OR_RETURN(auto episodes, task->ListEpisodes());
  std::vector<int64_t> out;
  for (const EpisodeEntry& e : episodes) {
    if (e.row_source != RowSource::kEpisodeFile) continue;
    REEL_ASSIGN_OR_RETURN(bool staged, fs->IsStaged(JoinPath(root, e.row_path)));
    if (staged) out.push_back(e.episode_index);
  }
  return out;
}

}  // namespace

Result<PushReport> ChangeStoredTask(FileSystem* dest, const std::string& dest_root, const StagedChangeFn& change,
                                    const PushOptions& options) {
  if (!dest) return Status::Invalid("staged change: no destination file system");
  if (options.dry_run) return Status::Invalid(dest_root + ": a staged change has no dry run");
  REEL_RETURN_IF_ERROR(internal::CreateDirsDurable(dest, JoinPath(dest_root, "meta")));
  REEL_ASSIGN_OR_RETURN(auto lock, internal::PushLock::Acquire(dest, dest_root, options.lock_lease_s));
  REEL_ASSIGN_OR_RETURN(std::vector<int64_t> interrupted, internal::RecoverStagedPushes(dest, dest_root));
  if (!interrupted.empty())
    return Status::NotSupported(internal::PushJournalPath(dest_root, interrupted.front()) +
                                ": the push of episode " + std::to_string(interrupted.front()) +
                                " was interrupted; re-run that push (reel push) from the task it came from first");
  REEL_ASSIGN_OR_RETURN(auto staging, internal::ScratchDir::Create("reel-stage"));
  const std::string root = JoinPath(staging->path(), "task");
  internal::ReadThroughFileSystem fs(DefaultFileSystem(), root, dest, dest_root);
  lock->StartKeeping();
  const Status changed = change(&fs, root);
  REEL_RETURN_IF_ERROR(lock->StopKeeping());
  auto staged = StagedEpisodes(&fs, root);
  if (!staged.ok()) return changed.ok() ? staged.status() : changed;
  PushOptions push = options;
  push.fs = &fs;
  if (staged->empty() && !changed.ok()) return changed;
  auto report = internal::PushWithLock(root, &fs, dest, dest_root, push, lock.get(), *staged);
  if (!changed.ok()) return changed;
  return report;
}

}  // namespace reel
