// Internal: the push itself, for a caller that holds the push lock already (a staged
// change holds it from before its staging directory is made until its push ends).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "push/push_lock.h"
#include "reel/push.h"

namespace reel::internal {

// PushTask's steps 2 and 3 (reel/push.h) for the task at `task_root` on `local`. `lock`
// is renewed as the push goes on; null only for a dry run. `staged`, when given: the
// episodes of a staged change (ChangeStoredTask), all new at the store; only they are
// pushed (none when empty), and their journals say "staged": true.
Result<PushReport> PushWithLock(const std::string& task_root, FileSystem* local, FileSystem* dest,
                                const std::string& dest_root, const PushOptions& options, PushLock* lock,
                                std::optional<std::vector<int64_t>> staged);

// Finishes what a killed staged change left at the store, with the push lock held. After
// its commit point (meta/.push-change.json exists) it is rolled forward: the task files
// written from the change journal, its episodes' journals deleted. Before it, it is rolled
// back: each journal marked "staged" lists the files of a new episode that exist nowhere
// else (the staging directory went with the process), so they are removed, the row first
// and the journal last, and a re-run of the change makes the episode again. Journals of
// plain pushes are left for those pushes to resume; their numbers are returned. A killed
// writer's task-file temps on a disk destination are removed too.
Result<std::vector<int64_t>> RecoverStagedPushes(FileSystem* dest, const std::string& root);

}  // namespace reel::internal
