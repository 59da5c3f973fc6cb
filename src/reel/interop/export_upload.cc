// ExportPublish::kUpload (reel/interop.h, docs/storage.md "Export to a URI"): a finished
// export copied from its local staging directory to a store without rename, the file
// that makes it a dataset last.
#include <algorithm>
#include <string>
#include <vector>

#include "interop/export_internal.h"
#include "io/copy_file.h"

namespace reel::internal {

namespace {

constexpr const char* kMarkers[] = {"meta/info.json", "manifest.json", "flat.json"};

// The regular files under `dir` (relative to `root`), depth first in name order.
Status ListFiles(FileSystem* fs, const std::string& root, const std::string& rel, std::vector<std::string>* out) {
  REEL_ASSIGN_OR_RETURN(auto entries, fs->ListDir(JoinPath(root, rel)));
  for (const DirEntry& e : entries) {
    const std::string child = rel.empty() ? e.name : rel + "/" + e.name;
    if (e.type == FileType::kDirectory && !e.symlink) {
      REEL_RETURN_IF_ERROR(ListFiles(fs, root, child, out));
    } else if (e.type == FileType::kFile && !e.symlink) {
      out->push_back(child);
    } else {
      return Status::Invalid(JoinPath(root, child) + ": not a regular file; an export holds only files");
    }
  }
  return Status::OK();
}

}  // namespace

const char* DatasetMarker(ExportFormat format) {
  if (format == ExportFormat::kFlat) return "flat.json";
  return format == ExportFormat::kBundle ? "manifest.json" : "meta/info.json";
}

Status RemoveExportForReplace(FileSystem* fs, const std::string& out_dir) {
  // Markers first: from here on no reader takes what is left for a dataset.
  for (const char* marker : kMarkers) {
    Status st = fs->RemoveFile(JoinPath(out_dir, marker));
    if (!st.ok() && st.code() != StatusCode::kNotFound) return st.WithContext("remove the old export");
  }
  Status st = RemoveAll(fs, out_dir);
  return st.ok() ? st : st.WithContext("remove the old export");
}

Status UploadExport(FileSystem* staged_fs, const std::string& staged, FileSystem* out_fs, const std::string& out_dir,
                    const std::string& marker, const ProgressFn& progress) {
  std::vector<std::string> files;
  REEL_RETURN_IF_ERROR(ListFiles(staged_fs, staged, "", &files));
  const auto at = std::find(files.begin(), files.end(), marker);
  if (at == files.end()) return Status::Invalid(staged + ": the export has no " + marker);
  files.erase(at);
  files.push_back(marker);  // last: the output is a dataset from this upload on, and only then
  std::vector<std::string> sent;
  for (const std::string& rel : files) {
    auto copied = CopyFileAcross(staged_fs, JoinPath(staged, rel), out_fs, JoinPath(out_dir, rel));
    if (!copied.ok()) {
      // Best effort: what was sent is no dataset without its marker, but it is clutter, and
      // an output left behind would refuse the next export (it is not a dataset to replace).
      for (const std::string& done : sent) (void)out_fs->RemoveFile(JoinPath(out_dir, done));
      return copied.status().WithContext("upload the export to " + out_dir);
    }
    sent.push_back(rel);
    if (progress)
      progress({"files uploaded", static_cast<int64_t>(sent.size()), static_cast<int64_t>(files.size()), rel});
  }
  return Status::OK();
}

}  // namespace reel::internal
