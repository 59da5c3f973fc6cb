// reel migrate's reading of a v1.0 task (src/reel/maint/migrate_session.cc, migrate_depth.cc,
// migrate.cc): each <task>_NNNNNN/ session's metadata.json (cameras, devices, sensor_dim,
// created_at, ...), timestamps.json, calibration/*.json, sensor parquets and depth frame
// sequences, all files from another program.
// Input: a packed tree (fuzz/make_seeds.py "tree" format) of the v1.0 task, written to disk
// in the harness's temp directory as <tmp>/a/b/src/task. Per input: FindSessions, then for each
// session ReadLegacyFrames and ReadLegacySensors; then the whole migration with --to
// <tmp>/dest (MigrateTask: staging, encoding depth sequences, the publish commit) and, when
// it succeeded, once more (a re-run: already pooled). A task holding a top-level file named
// "in-place" is migrated in place instead, then restored (--restore reads the manifest,
// meta/.migrate_manifest.json, which a seed may also hold from the start).
// Checked: --to leaves the source as it was; a migration that succeeded gives a task that
// opens and lists one episode per migrated session; a restore that succeeded gives back
// every file of the v1.0 task, byte for byte; <tmp>/outside/victim/, a folder beside the
// task's tree that a forged manifest may name as its keypoints mirror (issue 27, finding
// 3), is never changed.
#include <cstdio>
#include <cstdlib>

#include "harness_util.h"
#include "maint/migrate_internal.h"
#include "reel/maintenance.h"
#include "reel/task.h"

namespace {

using namespace reel;

void Fail(const std::string& what) {
  fprintf(stderr, "migrate: %s\n", what.c_str());
  std::abort();
}

// The parsers alone, so that a session the migration stops before is still read.
void ReadSessions(const std::string& source) {
  FileSystem* disk = DefaultFileSystem();
  internal::MigratePlan plan;
  plan.source = source;
  plan.dest = source;
  Status found = internal::FindSessions(disk, &plan);
  if (fuzz::Debug()) fprintf(stderr, "migrate: sessions: %s (%zu)\n", found.ToString().c_str(), plan.sessions.size());
  for (const internal::Session& s : plan.sessions) {
    const std::string dir = JoinPath(source, s.name);
    auto frames = internal::ReadLegacyFrames(disk, dir);
    auto sensors = internal::ReadLegacySensors(disk, dir, s);
    if (fuzz::Debug())
      fprintf(stderr, "migrate: %s: frames %s, sensors %s\n", s.name.c_str(), frames.status().ToString().c_str(),
              sensors.status().ToString().c_str());
  }
}

// The files of a snapshot, dotfiles (locks, temps) and directories left out.
std::map<std::string, std::string> Files(const std::map<std::string, std::string>& all) {
  std::map<std::string, std::string> out;
  for (const auto& [path, bytes] : all)
    if (bytes != "/" && path[0] != '.' && path.find("/.") == std::string::npos) out.emplace(path, bytes);
  return out;
}

void CheckOpens(const std::string& root, size_t sessions) {
  TaskOptions to;
  to.io_threads = 1;
  auto task = Task::Open(root, to);
  if (!task.ok()) Fail("the migrated task does not open: " + task.status().ToString());
  auto episodes = (*task)->ListEpisodes();
  if (!episodes.ok() || episodes->size() != sessions)
    Fail("the migrated task does not list its " + std::to_string(sessions) + " sessions: " + episodes.status().ToString());
}

void InPlace(const std::string& source, const std::map<std::string, std::string>& before) {
  auto report = MigrateTask(source, MigrateOptions{});
  if (fuzz::Debug()) fprintf(stderr, "migrate in place: %s\n", report.status().ToString().c_str());
  if (report.ok() && !report->already_pooled) CheckOpens(source, report->sessions.size());
  MigrateOptions restore;
  restore.restore = true;
  auto restored = MigrateTask(source, restore);
  if (fuzz::Debug()) fprintf(stderr, "migrate --restore: %s\n", restored.status().ToString().c_str());
  if (report.ok() && !report->already_pooled && restored.ok() && Files(fuzz::Snapshot(source)) != Files(before))
    Fail("--restore did not give back the v1.0 task");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto& tmp = fuzz::TempDir::Get();
  tmp.Clean();
  // Three levels down: FindKeypointsMirror looks for keypoints_output/<task> in the
  // task's parent, grandparent and great-grandparent, which must all be the harness's.
  const std::string source = tmp.path() + "/a/b/src/task", dest = tmp.path() + "/dest";
  const std::string outside = tmp.path() + "/outside";
  fuzz::UnpackTreeToDisk(data, size, source);
  (void)DefaultFileSystem()->CreateDirs(outside + "/victim");
  (void)WriteFileAtomic(DefaultFileSystem(), outside + "/victim/canary", "canary");
  const auto outside_before = fuzz::Snapshot(outside);
  const auto check_outside = [&] {
    if (fuzz::Snapshot(outside) != outside_before) Fail("migrate changed a folder outside the task: " + outside);
  };
  const auto before = fuzz::Snapshot(source);
  ReadSessions(source);
  if (before.count("in-place")) {
    InPlace(source, before);
    check_outside();
    tmp.Clean();
    return 0;
  }

  MigrateOptions options;
  options.to = dest;
  auto report = MigrateTask(source, options);
  if (fuzz::Debug()) fprintf(stderr, "migrate: %s\n", report.status().ToString().c_str());
  if (fuzz::Snapshot(source) != before) Fail("migrate --to changed its source");
  if (report.ok()) {
    CheckOpens(dest, report->sessions.size());
    auto again = MigrateTask(source, options);
    if (!again.ok() || !again->already_pooled) Fail("a re-run is not a no-op: " + again.status().ToString());
  }
  check_outside();
  tmp.Clean();
  return 0;
}
