// ImportDatasetToStore (reel/interop.h): dataset import as a staged change of a task on
// an object store.
#include "reel/interop.h"

namespace reel {
namespace {

// `text` with the staging directory's path replaced by the stored task's.
std::string Renamed(std::string text, const std::string& staging_root, const std::string& root) {
  for (size_t at = text.find(staging_root); at != std::string::npos; at = text.find(staging_root, at + root.size()))
    text.replace(at, staging_root.size(), root);
  return text;
}

}  // namespace

Result<ImportReport> ImportDatasetToStore(const std::string& source, FileSystem* store, const std::string& root,
                                          const ImportOptions& options, PushReport* pushed) {
  ImportReport report;
  std::string staging_root;
  ImportOptions o = options;
  if (o.task_name.empty()) o.task_name = BaseName(root);
  if (!o.source_fs) o.source_fs = DefaultFileSystem();  // not the staging file system
  auto change = [&](FileSystem* fs, const std::string& staged) -> Status {
    staging_root = staged;
    o.fs = fs;
    REEL_ASSIGN_OR_RETURN(report, ImportDataset(source, staged, o));
    return Status::OK();
  };
  PushOptions push;
  auto sent = ChangeStoredTask(store, root, change, push);
  if (!sent.ok()) {
    if (staging_root.empty()) return sent.status();
    return Status(sent.status().code(), Renamed(sent.status().message(), staging_root, root));
  }
  for (std::string& w : report.warnings) w = Renamed(std::move(w), staging_root, root);
  if (pushed) *pushed = std::move(*sent);
  return report;
}

}  // namespace reel
