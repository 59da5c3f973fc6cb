// The job entries of include/reel/jobs.h: each resolves its locations, runs its area's
// call and names object-store files by the URIs the caller gave.
#include "reel/jobs.h"

#include <utility>

#include "jobs/locations.h"
#include "reel/fs.h"
#include "reel/task.h"

namespace reel {
namespace {

using internal::Locations;

Result<ExportReport> RunExport(Locations& at, const std::string& task, const std::string& out,
                               ExportOptions options) {
  REEL_ASSIGN_OR_RETURN(OpenedLocation src, at.Open(task));
  REEL_ASSIGN_OR_RETURN(OpenedLocation dst, at.Open(out));
  TaskOptions task_options;
  task_options.fs = src.fs.get();
  REEL_ASSIGN_OR_RETURN(auto opened, Task::Open(src.root, task_options));
  options.output_fs = dst.fs.get();
  options.publish = dst.object_store ? ExportPublish::kUpload : ExportPublish::kRename;
  REEL_ASSIGN_OR_RETURN(ExportReport report, ExportTask(*opened, dst.root, options));
  if (dst.object_store) report.out_dir = dst.display;
  return report;
}

Result<ImportJobReport> RunImport(Locations& at, const std::string& source, const std::string& task,
                                  ImportOptions options) {
  ImportJobReport out;
  out.task = task;
  std::string from = source;
  if (IsUri(source)) {
    REEL_ASSIGN_OR_RETURN(OpenedLocation loc, at.Open(source));
    options.source_fs = loc.fs.get();
    from = loc.root;
  }
  if (!IsUri(task)) {
    REEL_ASSIGN_OR_RETURN(out.report, ImportDataset(from, task, options));
    return out;
  }
  REEL_ASSIGN_OR_RETURN(OpenedLocation to, at.Open(task));
  out.pushed.emplace();
  REEL_ASSIGN_OR_RETURN(out.report, ImportDatasetToStore(from, to.fs.get(), to.root, options, &*out.pushed));
  return out;
}

Result<FolderReport> RunCheck(Locations& at, const std::string& path, CheckOptions options) {
  REEL_ASSIGN_OR_RETURN(OpenedLocation loc, at.Open(path));
  options.fs = loc.fs.get();
  REEL_ASSIGN_OR_RETURN(FolderReport report, CheckFolder(loc.root, options));
  for (TaskReport& r : report.tasks) {
    r.path = Locations::Display(loc, r.path);
    for (Finding& f : r.findings) f.message = at.Name(std::move(f.message));
  }
  for (SkippedFolder& f : report.skipped) f.path = Locations::Display(loc, f.path);
  return report;
}

}  // namespace

Result<ExportReport> ExportJob(const std::string& task, const std::string& out, ExportOptions options,
                               const ObjectStoreOptions& store) {
  Locations at(store);
  auto report = at.Name(RunExport(at, task, out, std::move(options)));
  if (report.ok()) at.Name(report->warnings);
  return report;
}

Result<ImportJobReport> ImportJob(const std::string& source, const std::string& task, ImportOptions options,
                                  const ObjectStoreOptions& store) {
  Locations at(store);
  auto report = at.Name(RunImport(at, source, task, std::move(options)));
  if (report.ok()) at.Name(report->report.warnings);
  return report;
}

Result<PackResult> PackJob(const std::string& task, int64_t episode_index, const std::string& zip_path,
                           PackOptions options, const ObjectStoreOptions& store) {
  Locations at(store);
  auto loc = at.Open(task);
  if (!loc.ok()) return loc.status();
  // The task read through its location's file system; the zip and its scratch written locally.
  options.task_fs = loc->fs.get();
  options.output_fs = DefaultFileSystem();
  const std::string out = zip_path.empty() ? DefaultSliceName(TaskDirName(task), episode_index) : zip_path;
  return at.Name(PackEpisode(loc->root, episode_index, out, options));
}

Result<PushReport> PushJob(const std::string& task, const std::string& destination, const PushOptions& options,
                           const ObjectStoreOptions& store) {
  Locations at(store);
  auto dest = at.Open(destination);
  if (!dest.ok()) return dest.status();
  return at.Name(PushTask(task, dest->fs.get(), dest->root, options));
}

Result<FolderReport> CheckJob(const std::string& path, CheckOptions options, const ObjectStoreOptions& store) {
  Locations at(store);
  return at.Name(RunCheck(at, path, std::move(options)));
}

Result<RebuildStatsReport> RebuildStatsJob(const std::string& task, const RebuildStatsOptions& options,
                                           const ObjectStoreOptions& store) {
  Locations at(store);
  auto loc = at.Open(task);
  if (!loc.ok()) return loc.status();
  return at.Name(RebuildStats(loc->root, options, loc->fs.get()));
}

Result<OverlayWriteReport> WriteOverlayJob(const std::string& dataset, const std::string& name,
                                           const std::string& episode, OverlayWriteOptions options,
                                           const ObjectStoreOptions& store) {
  Locations at(store);
  auto loc = at.Open(dataset);
  if (!loc.ok()) return loc.status();
  options.fs = loc->fs.get();
  return at.Name(WriteOverlay(loc->root, name, episode, options));
}

}  // namespace reel
