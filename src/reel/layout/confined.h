// Internal: confinement of the paths a task's own files name.
//
// A task is data from elsewhere (tar, rsync, a colleague's disk), and some of its files
// name other files: commit and push journals, the migrate manifest, a staged change. Such
// a path is used only when it stays inside the task, lexically (IsInsideTaskPath) and on
// disk: no component below the task root may be a symbolic link, so `meta/cache ->
// /elsewhere` plus a journal naming `meta/cache/victim.conf` reaches nothing outside.
// The check reads each component's entry in its parent's listing (DirEntry::symlink), so
// it holds on every FileSystem (an object store has no links). It is a check before the
// act: it defends against what a task holds, not against another process changing the
// task meanwhile (writers exclude each other with the task lock). The task root itself
// is the caller's choice and may be a link.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "reel/fs.h"
#include "reel/status.h"

namespace reel::internal {

// Whether `rel` is a path relative to the task root that stays inside it: not absolute, no
// "", "." or ".." component, no NUL, at most 4096 bytes.
bool IsInsideTaskPath(const std::string& rel);

// Checks paths under one root, remembering each directory's listing between calls (a
// journal names a few directories many times).
class Beneath {
 public:
  Beneath(FileSystem* fs, std::string root) : fs_(fs), root_(std::move(root)) {}
  // OK when `rel` is inside the task (IsInsideTaskPath) and none of its components that
  // exist is a symbolic link (the walk stops at the first missing one). Invalid otherwise,
  // never NotFound (callers that roll forward read NotFound as "already done"), naming
  // `what` (the file that named `rel`), the path and the link.
  Status Check(const std::string& rel, const std::string& what);

 private:
  Result<const std::vector<DirEntry>*> Listing(const std::string& dir_rel);

  FileSystem* fs_;
  std::string root_;
  std::map<std::string, std::vector<DirEntry>> listings_;  // by path relative to root_ ("" = root)
};

// One path: Beneath(fs, root).Check(rel, what).
Status CheckBeneath(FileSystem* fs, const std::string& root, const std::string& rel, const std::string& what);

// True when `rel` is where the path template `tmpl` puts a file of episode `n` (contract
// §12: an episode's paths come from the templates and chunks_size): the template matches
// and its {episode_index}, or its chunk and file through LocateEpisode, give `n`.
bool TemplateNamesEpisode(const std::string& tmpl, const std::string& rel, int64_t n, int64_t chunks_size);

}  // namespace reel::internal
