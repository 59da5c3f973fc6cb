// Internal: who wrote a temp file, a reservation or a scratch directory, and when its writer
// is gone (so that a later writer may remove it).
//
// Names carry the writer's host id beside its pid: "reel-<host>-<pid>-<k>" in a temp's or a
// reservation's name (".<name>.<tag>.reel-<host>-<pid>-<k>.tmp", layout/journal.h) and
// "<prefix>-<host>-<pid>-XXXXXX" for a scratch directory (io/scratch_dir.h). A pid proves a
// writer gone only where it was issued: on this host, in this pid namespace. A task shared
// by two hosts (NFS) or two containers (a bind mount) holds names of writers whose pids mean
// nothing here; those are judged by their age alone (docs/architecture.md "A task on NFS").
//
// The host id is 8 hex digits of a hash of the host name and the pid namespace
// (/proc/self/ns/pid's inode), not of the boot id: a boot id changes at every boot, so a
// rig's own leftovers from before a power cut (a reservation holding N) would look like
// another host's for a day; the host name stays, and hosts sharing an NFS server already
// have distinct ones (NFSv4 names its client by it). The pid namespace separates containers
// that share a host and its name (--uts=host) but not their pids; the host's own namespace
// has the same inode at every boot, so a host's id is stable.
//
// Thread safety: every function may be called from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace reel::internal {

// This process's host id: 8 lowercase hex digits, computed once.
const std::string& HostId();

// "<host>-<pid>-<k>" with k from a process-wide counter: a name part unique among the
// writers that share a task.
std::string UniqueWriterTag();

// Another host's temp (or one whose writer cannot be read from its name) is stale once
// untouched for this long: 24 hours by its modification time.
inline constexpr int64_t kForeignTempAgeNs = int64_t{24} * 3600 * 1000000000;
// A name of an earlier version ("<pid>-<k>", no host) is stale once its pid is gone here
// and it was untouched for this long (10 minutes), or after kForeignTempAgeNs: it may be
// another host's (an NFS task), so the pid alone does not decide, but upgrades clean up.
inline constexpr int64_t kOldFormatGraceNs = int64_t{10} * 60 * 1000000000;

// The writer a name names, from the fields that follow "reel-" (a temp) or "<prefix>-"
// (a scratch directory), up to the name's suffix: "<host>-<pid>-<k>" (this version),
// "<pid>-<k>" (earlier versions), anything else unknown.
struct TempWriter {
  enum class Kind { kUnknown, kThisHost, kOtherHost, kOldFormat };
  Kind kind = Kind::kUnknown;
  int64_t pid = 0;
};
TempWriter ReadTempWriter(std::string_view fields);

// True when `pid` names no process here (kill(pid, 0) fails with ESRCH); never for this
// process.
bool PidGone(int64_t pid);

// Whether the writer of a temp is gone: this host's by its pid alone; another host's or
// an unknown one's when untouched for kForeignTempAgeNs; an earlier version's as
// kOldFormatGraceNs says. `mtime_ns` is the temp's modification time (0 when the store
// keeps none: then only this host's pid decides), `now_ns` the current time.
bool TempWriterGone(const TempWriter& writer, int64_t mtime_ns, int64_t now_ns);

// Whether TempWriterGone needs the temp's modification time (it does not for this host's).
inline bool NeedsModificationTime(const TempWriter& writer) {
  return writer.kind != TempWriter::Kind::kThisHost;
}

// Nanoseconds since the Unix epoch (the clock file modification times are stamped with).
int64_t UnixNowNs();

// Unique dotfile temp name beside `final_path` ("<dir>/.<base>.<tag>.reel-<host>-<pid>-<k>.tmp").
// Readers, check, pack and push ignore it as every dotfile (contract §7.4); a later writer
// removes it once its writer is gone (IsStaleTemp, layout/journal.h). Every temp of reel is
// named here: the episode transaction's, WriteFileAtomic's ("atomic"), ReplaceFileAcross's
// ("replace").
std::string TempPathFor(const std::string& final_path, const std::string& tag);

}  // namespace reel::internal
