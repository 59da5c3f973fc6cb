// reel migrate --restore (reel/maintenance.h MigrateOptions::restore, docs/maintenance.md
// "migrate"): a task reel migrate converted in place with a backup goes back to the v1.0 task
// it was, from meta/.migrate_manifest.json and the _migrate_backup_* folder it names.
//
// As the reference's restore (v1.0-layout.md step 12: created files and episodes rows
// deleted, keypoints and backups moved back, emptied pooled folders removed, info/stats/tasks
// deleted when no episode is left), but crash-safe like the migration:
//   1. commit  ONE task-change commit (write/transaction.h): every backed-up session file
//              renamed back, the manifest renamed to .reel-restore/manifest.json (the record
//              of steps 2-3), then the removals, meta/info.json first: until it goes the
//              task reads as pooled (with session folders, layout.legacy_leftover), from
//              then on as v1.0. A kill after the journal is durable is rolled forward by the
//              next TaskLock::Acquire; before it, nothing has changed.
//   2. mirror  the keypoints folders moved back (migrate_mirror.cc), idempotently.
//   3. clean   emptied data/, videos/, backup and meta/ folders, the record and the lock
//              file removed. A run that finds the record does steps 2-3 only.
#include <set>

#include "layout/journal.h"
#include "maint/migrate_internal.h"
#include "reel/layout.h"
#include "write/task_files.h"
#include "write/transaction.h"

namespace reel::internal {
namespace {

struct RestorePlan {
  std::vector<Rename> moves;         // <backup>/<session>/<f> -> <session>/<f>
  std::vector<std::string> removes;  // the migration's files, meta/info.json first, the manifest not
};

void ReportSessions(const Json& manifest, MigrateReport* report) {
  for (const Json& s : manifest["sessions"])
    if (s.is_object())
      report->sessions.push_back({s.value("session", std::string()), s.value("episode_index", int64_t{0}), 0, {}});
  report->backup = manifest.value("backup", std::string());
}

// The migration's files (the manifest's "files"), checked to be task paths.
Result<std::set<std::string>> CreatedFiles(const Json& manifest, const std::string& where) {
  const Json files = manifest.value("files", Json());
  if (!files.is_array())
    return Status::Invalid(where + ": no \"files\" list (written by an older reel migrate); restore by hand from the backup");
  std::set<std::string> out;
  for (const Json& f : files) {
    if (!f.is_string() || !IsInsideTaskPath(f.get<std::string>()))
      return Status::Invalid(where + ": files: " + Brief(f) + " is not a path inside the task");
    out.insert(f.get<std::string>());
  }
  return out;
}

// Refused when an episode file is there that the migration did not create (an episode
// recorded after it, which the restore would lose).
Status CheckNothingAdded(FileSystem* fs, const std::string& root, const std::set<std::string>& created) {
  for (const char* dir : {"data", "videos", "meta/episodes"}) {
    REEL_ASSIGN_OR_RETURN(FileInfo st, fs->Stat(JoinPath(root, dir)));
    if (st.type != FileType::kDirectory) continue;
    std::vector<std::string> files;
    REEL_RETURN_IF_ERROR(ListTree(fs, JoinPath(root, dir), dir, &files));
    for (const std::string& f : files)
      if (BaseName(f)[0] != '.' && f.find("/.") == std::string::npos && !created.count(f))
        return Status::Invalid(JoinPath(root, f) + ": not created by the migration (an episode recorded after it?); "
                               "--restore would lose it: move it out of the task first");
  }
  return Status::OK();
}

// Everything the commit does, checked before anything is written.
Result<RestorePlan> PlanRestore(FileSystem* fs, const std::string& root, const Json& manifest) {
  const std::string where = JoinPath(root, kMigrateManifestPath);
  if (!manifest.value("in_place", true))
    return Status::Invalid(where + ": the migration wrote this task with --to from " +
                           manifest.value("source", std::string("its source")) +
                           ", which it left untouched: remove this task instead of restoring it");
  const std::string backup = manifest.value("backup", std::string());
  if (backup.empty())
    return Status::NotSupported(where + ": the migration ran with --no-backup: the session files other than the "
                                "videos were removed, so there is nothing to restore the v1.0 task from");
  if (!PlainComponent(backup) || backup.rfind("_migrate_backup_", 0) != 0)
    return Status::Invalid(where + ": backup " + Brief(Json(backup)) + " is not a _migrate_backup_* folder name");
  REEL_ASSIGN_OR_RETURN(std::set<std::string> created, CreatedFiles(manifest, where));
  REEL_ASSIGN_OR_RETURN(FileInfo bst, fs->Stat(JoinPath(root, backup)));
  if (bst.type != FileType::kDirectory)
    return Status::NotFound(JoinPath(root, backup) + ": missing; " + where + " names it as the migration's backup, "
                            "which --restore moves back");
  RestorePlan plan;
  for (const Json& s : manifest["sessions"]) {
    const std::string name = s.is_object() ? s.value("session", std::string()) : std::string();
    if (!PlainComponent(name)) return Status::Invalid(where + ": sessions: " + Brief(s) + " has no folder name");
    const std::string from = JoinPath(JoinPath(root, backup), name);
    REEL_ASSIGN_OR_RETURN(FileInfo st, fs->Stat(from));
    if (st.type != FileType::kDirectory) return Status::NotFound(from + ": missing from the migration's backup");
    std::vector<std::string> files;
    REEL_RETURN_IF_ERROR(ListTree(fs, from, "", &files));
    for (const std::string& f : files) {
      const std::string to = name + "/" + f;
      REEL_ASSIGN_OR_RETURN(FileInfo there, fs->Stat(JoinPath(root, to)));
      if (there.type != FileType::kNotFound)
        return Status::AlreadyExists(JoinPath(root, to) + ": exists; --restore would replace it with " +
                                     JoinPath(from, f) + ": move one of them away first");
      plan.moves.push_back({backup + "/" + to, to});
    }
  }
  REEL_RETURN_IF_ERROR(CheckNothingAdded(fs, root, created));
  if (created.count(kInfoPath)) plan.removes.push_back(kInfoPath);  // first: the task reads as v1.0 from here
  for (const std::string& f : created)
    if (f != kInfoPath && f != kMigrateManifestPath) plan.removes.push_back(f);
  return plan;
}

// Steps 2 and 3 (see the file comment), under the lock; the record goes last.
Status FinishRestore(FileSystem* fs, const std::string& root, const std::string& explicit_dir,
                     MigrateReport* report) {
  REEL_ASSIGN_OR_RETURN(Json record, ReadManifest(fs, JoinPath(root, kRestoreRecordPath)));
  if (report->sessions.empty()) ReportSessions(record, report);
  REEL_ASSIGN_OR_RETURN(report->keypoints_moved,
                        MoveKeypoints(fs, root, explicit_dir, record, true, &report->keypoints, &report->warnings));
  std::vector<std::string> dirs = {"data", "videos"};
  if (PlainComponent(report->backup)) dirs.push_back(report->backup);
  for (const std::string& d : dirs) {
    REEL_ASSIGN_OR_RETURN(FileInfo st, fs->Stat(JoinPath(root, d)));
    if (st.type != FileType::kDirectory) continue;
    if (Status inside = CheckBeneath(fs, root, d, "reel migrate --restore"); !inside.ok()) {
      if (inside.code() != StatusCode::kInvalid) return inside;  // a listing error, not a link
      report->warnings.push_back(inside.message() + " (left as it is)");
      continue;
    }
    REEL_ASSIGN_OR_RETURN(bool gone, RemoveEmptyTree(fs, JoinPath(root, d)));
    if (!gone) report->warnings.push_back(JoinPath(root, d) + ": still holds files after the restore; left as it is");
  }
  REEL_RETURN_IF_ERROR(fs->RemoveFile(JoinPath(root, kRestoreRecordPath)));
  return fs->RemoveDir(JoinPath(root, kRestoreRecordDir));
}

// A v1.0 task has no meta/ of its own: the lock file and the folders the lock (or the
// migration) made go once the lock is released, unless something else is in them.
Status RemoveLockFolders(FileSystem* fs, const std::string& root) {
  REEL_ASSIGN_OR_RETURN(FileInfo info, fs->Stat(JoinPath(root, kInfoPath)));
  if (info.type != FileType::kNotFound) return Status::OK();
  REEL_ASSIGN_OR_RETURN(FileInfo lock, fs->Stat(JoinPath(root, kLockPath)));
  if (lock.type == FileType::kFile) REEL_RETURN_IF_ERROR(fs->RemoveFile(JoinPath(root, kLockPath)));
  // meta/, and the record's folder when a killed run removed the record but not the folder.
  for (const char* dir : {"meta", kRestoreRecordDir}) {
    REEL_ASSIGN_OR_RETURN(FileInfo st, fs->Stat(JoinPath(root, dir)));
    if (st.type == FileType::kDirectory) REEL_RETURN_IF_ERROR(RemoveEmptyTree(fs, JoinPath(root, dir)).status());
  }
  return Status::OK();
}

// No manifest and no record: a v1.0 task is restored already (or was never migrated).
Status NothingToRestore(FileSystem* fs, const std::string& root, MigrateReport* report) {
  auto format = DetectFormat(fs, root);
  if (format.ok() && format->format == DatasetFormat::kLegacyV1_0) {
    report->nothing_to_restore = true;
    return Status::OK();
  }
  return Status::NotFound(JoinPath(root, kMigrateManifestPath) +
                          ": missing; --restore undoes a migration reel migrate recorded there, and this task " +
                          (format.ok() ? std::string("is a ") + DatasetFormatName(format->format) + " dataset without one"
                                       : "is not a dataset: " + format.status().message()));
}

// A staging (<root>/.reel-migrate/) an interrupted reel migrate left: nothing of it was
// published, and a later migrate would check it against the sources; the restored (or
// never migrated) task is the v1.0 tree without it (issue 27 finding 7). Removed, and said.
Status RemoveStaging(FileSystem* fs, const std::string& root, bool dry_run, MigrateReport* report) {
  const std::string staging = JoinPath(root, kMigrateStagingDir);
  REEL_ASSIGN_OR_RETURN(FileInfo st, fs->Stat(staging));
  if (st.type == FileType::kNotFound) return Status::OK();
  if (!dry_run) REEL_RETURN_IF_ERROR(RemoveAll(fs, staging));
  report->warnings.push_back(staging + ": a staging an interrupted reel migrate left (not part of the task); " +
                             (dry_run ? "--restore removes it" : "removed"));
  return Status::OK();
}

Status DryRunRestore(FileSystem* fs, const std::string& root, MigrateReport* report) {
  for (const char* path : {kRestoreRecordPath, kMigrateManifestPath}) {
    REEL_ASSIGN_OR_RETURN(FileInfo st, fs->Stat(JoinPath(root, path)));
    if (st.type != FileType::kFile) continue;
    REEL_ASSIGN_OR_RETURN(Json manifest, ReadManifest(fs, JoinPath(root, path)));
    if (path == kMigrateManifestPath) REEL_RETURN_IF_ERROR(PlanRestore(fs, root, manifest).status());
    ReportSessions(manifest, report);
    return Status::OK();
  }
  REEL_RETURN_IF_ERROR(NothingToRestore(fs, root, report));
  return RemoveStaging(fs, root, true, report);
}

// Step 1 (see the file comment) from meta/.migrate_manifest.json, under `lock`.
Status CommitRestore(TaskLock* lock, MigrateReport* report) {
  FileSystem* fs = lock->fs();
  const std::string& root = lock->root();
  REEL_ASSIGN_OR_RETURN(Json manifest, ReadManifest(fs, JoinPath(root, kMigrateManifestPath)));
  REEL_ASSIGN_OR_RETURN(RestorePlan plan, PlanRestore(fs, root, manifest));
  ReportSessions(manifest, report);
  auto txn = EpisodeTransaction::BeginTaskChange(lock);
  for (const Rename& m : plan.moves) txn->Move(m.from, m.to);
  txn->Move(kMigrateManifestPath, kRestoreRecordPath);
  for (const std::string& f : plan.removes) txn->Remove(f);
  Status committed = txn->CommitFiles();
  if (!txn->decided()) return committed.WithContext(root + ": restoring the v1.0 task");
  return Status::OK();
}

}  // namespace

Status RestoreTask(FileSystem* fs, const std::string& root, const MigrateOptions& options, MigrateReport* report) {
  report->restore = true;
  REEL_ASSIGN_OR_RETURN(FileInfo st, fs->Stat(root));
  if (st.type != FileType::kDirectory) return Status::NotFound(root + ": no such task directory");
  if (options.dry_run) return DryRunRestore(fs, root, report);
  {
    // Acquire rolls an interrupted restore's (or migration's) commit forward.
    REEL_ASSIGN_OR_RETURN(TaskLock lock, TaskLock::Acquire(fs, root));
    REEL_RETURN_IF_ERROR(lock.RemoveStaleTemps());  // e.g. a journal's temp of a run killed before it was durable
    REEL_ASSIGN_OR_RETURN(FileInfo record, fs->Stat(JoinPath(root, kRestoreRecordPath)));
    if (record.type != FileType::kFile) {
      REEL_ASSIGN_OR_RETURN(FileInfo mst, fs->Stat(JoinPath(root, kMigrateManifestPath)));
      // No manifest: restored already (a killed run may have left only the lock folders).
      if (mst.type == FileType::kFile) {
        REEL_RETURN_IF_ERROR(CommitRestore(&lock, report));
      } else {
        REEL_RETURN_IF_ERROR(NothingToRestore(fs, root, report));
      }
    }
    if (!report->nothing_to_restore) REEL_RETURN_IF_ERROR(FinishRestore(fs, root, options.keypoints, report));
    REEL_RETURN_IF_ERROR(RemoveStaging(fs, root, false, report));
  }  // the lock released: its file can go
  return RemoveLockFolders(fs, root);
}

}  // namespace reel::internal
