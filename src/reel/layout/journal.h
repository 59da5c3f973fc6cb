// Internal: the commit journal that makes an episode appear all at once.
//
// A commit renames several fsynced dotfile temps into place (episode files
// first, then the task files). Before the first rename, the list of renames is
// written to meta/.commit-<N>.json and fsynced; after the last, each touched
// directory is fsynced and the journal removed. A crash in between is rolled
// forward by RecoverCommits (TaskLock::Acquire, write/transaction.h); readers hide an
// episode whose journal is present (PendingCommits), so they see all of N or none of it.
// It lives in layout/ because readers honour it as much as writers write it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "io/temp_name.h"
#include "layout/confined.h"
#include "reel/fs.h"
#include "reel/status.h"

namespace reel::internal {

struct Rename {
  std::string from;  // relative to the task root
  std::string to;
};

// What one journaled commit does: every rename in order (a rename over an existing file
// replaces it), then every removal (paths relative to the task root; a missing file is
// already removed). Paths in a journal read back are refused unless relative, without
// "." or ".." components: a journal is a file like any other and may come from elsewhere.
struct CommitPlan {
  std::vector<Rename> renames;
  std::vector<std::string> removes;
};

// The journal of a change to the task as a whole (a maintenance tool's: rebuilt stats,
// split shards, a migration) rather than to one episode: meta/.commit-task.json. Readers
// hide no episode while it is present; its renames are the change's commit.
inline constexpr int64_t kTaskChange = -1;

// `decided` becomes true once the journal is durable: from then on the change will
// appear (now, or when the next writer rolls the journal forward), whatever the returned
// Status says. `episode_index` is N (meta/.commit-<N>.json, N hidden meanwhile) or
// kTaskChange. A plan with a path through a symbolic link inside the task is refused before
// the journal is written (not decided).
Status CommitWithJournal(FileSystem* fs, const std::string& root, int64_t episode_index, const CommitPlan& plan,
                         bool* decided);

// Whether `rel` is where the task's path templates put a file of episode `n`: what an
// episode's journal may name (a task is data from elsewhere, and so are its journals).
// The writer builds it from info.json (TaskLock::Acquire); an error (info.json unreadable)
// stops recovery. Null: journals are held to confinement and their own shape only.
using EpisodeFiles = std::function<Result<bool>(int64_t n, const std::string& rel)>;

// Rolls forward every interrupted commit of the task (the .commit-<N> journals and
// .commit-task.json; a push journal is the pusher's to finish). A journal stops recovery
// with an error, and is left for a person, when it is over 256 MiB, names a path outside
// the task or through a symbolic link inside it (layout/confined.h), or, for episode N,
// is not N's: its "episode_index" is not N, a rename is not a reel temp into its target
// beside it, or a target or removal is not N's file by `episode_files` (task files may
// be targets). Every path is checked before the first is touched.
Status RecoverCommits(FileSystem* fs, const std::string& root, const EpisodeFiles& episode_files = nullptr);

// Episode numbers with a commit journal still present. A task without meta/ has none; any
// other error listing meta/ is returned, never read as "no journal" (these lists decide
// what readers hide and what recovery rolls forward).
Result<std::vector<int64_t>> CommitJournals(FileSystem* fs, const std::string& root);

// A push (reel/push.h) to storage without rename publishes N's files one by one between
// creating meta/.push-<N>.json and deleting it; readers hide N meanwhile.
inline constexpr const char* kPushJournalPrefix = ".push-";
std::string PushJournalPath(const std::string& root, int64_t episode_index);
// Episode numbers with a push journal present (pushes interrupted before they finished N).
// Errors as CommitJournals.
Result<std::vector<int64_t>> PushJournals(FileSystem* fs, const std::string& root);
// A staged change (reel/push.h ChangeStoredTask) commits at meta/.push-change.json: the
// new task files and the episodes they count, written once every episode was sent.
std::string ChangeJournalPath(const std::string& root);

// Episode numbers readers must hide: a commit or a push journal is present. Errors as
// CommitJournals, and an error reading a present change journal (one that is torn or
// foreign names no episode: the change never committed).
Result<std::vector<int64_t>> PendingCommits(FileSystem* fs, const std::string& root);

// The writer a reel temp's name names (".<...>.reel-<fields>.tmp"), or nullopt for a name
// that is not a reel temp. Reads this version's names and the earlier "reel-<pid>-<k>".
std::optional<TempWriter> ReelTempWriter(const std::string& name);
// True for a reel temp `name` in `dir` whose writer is gone (io/temp_name.h TempWriterGone:
// this host's by its pid, another host's only by its age). The file is stat'ed for its age
// unless its name is this host's; a stat error is returned, a file gone meanwhile is not
// stale. False for a name that is not a reel temp.
Result<bool> IsStaleTemp(FileSystem* fs, const std::string& dir, const std::string& name);

// Removes every reel temp in `dir` (not below it) whose writer is gone (IsStaleTemp). A
// missing `dir` holds none; any other listing error is returned, never read as empty.
Status RemoveStaleTempsIn(FileSystem* fs, const std::string& dir);

}  // namespace reel::internal
