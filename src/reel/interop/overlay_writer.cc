// WriteOverlay (reel/interop.h): one episode's overlay file of a bundle dataset, checked
// against the rules the reader keeps (foreign/overlays.cc) and renamed into place.
#include <arrow/api.h>

#include <algorithm>

#include "foreign/internal.h"
#include "io/parquet_io.h"
#include "io/temp_name.h"
#include "layout/confined.h"
#include "reel/dataset.h"
#include "reel/interop.h"

namespace reel {
namespace {

// The source's rows, bounded in size, checked against the episode; `kind` receives their kind.
Result<std::shared_ptr<arrow::Table>> ReadSource(const OverlayWriteOptions& options, int64_t length,
                                                 OverlayKind* kind) {
  FileSystem* local = DefaultFileSystem();
  REEL_ASSIGN_OR_RETURN(FileInfo info, local->Stat(options.from));
  if (info.type != FileType::kFile) return Status::NotFound(options.from + ": no such file (the overlay's rows)");
  if (static_cast<int64_t>(info.size) > options.max_source_bytes)
    return Status::Invalid(options.from + ": " + std::to_string(info.size) + " bytes, over the overlay limit of " +
                           std::to_string(options.max_source_bytes));
  REEL_ASSIGN_OR_RETURN(auto table, internal::ReadParquetTable(local, options.from, {}, false));
  REEL_ASSIGN_OR_RETURN(*kind, foreign::CheckOverlayTable(*table, length, options.from));
  return table;
}

// The source holds what the overlay's files already written hold (its kind, value columns):
// one other file's footer, found by listing the overlay's own directory.
Status SameAsWritten(FileSystem* fs, const std::string& root, const std::string& name, const std::string& bundle_id,
                     const arrow::Schema& schema, const std::string& from) {
  REEL_ASSIGN_OR_RETURN(std::vector<std::string> ids, foreign::OverlayEpisodes(fs, root, name, nullptr));
  auto other_id = std::find_if(ids.begin(), ids.end(), [&](const std::string& id) { return id != bundle_id; });
  if (other_id == ids.end()) return Status::OK();
  const std::string other = JoinPath(root, foreign::OverlayRelPath(name, *other_id));
  REEL_ASSIGN_OR_RETURN(auto other_schema, foreign::FooterSchema(fs, other));
  REEL_ASSIGN_OR_RETURN(auto want, foreign::OverlaySignature(*other_schema, other));
  REEL_ASSIGN_OR_RETURN(auto have, foreign::OverlaySignature(schema, from));
  if (want == have) return Status::OK();
  auto joined = [](const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  return Status::Invalid(from + ": overlay \"" + name + "\" holds " + joined(want) + " (" + other + "); this "
                         "file holds " + joined(have) + ". All files of one overlay hold the same columns");
}

}  // namespace

Result<OverlayWriteReport> WriteOverlay(const std::string& dataset_root, const std::string& name,
                                        const std::string& episode, const OverlayWriteOptions& options) {
  FileSystem* fs = options.fs ? options.fs : DefaultFileSystem();
  if (!foreign::IsOverlayName(name))
    return Status::Invalid("overlay name \"" + name.substr(0, 120) +
                           "\": 1-100 of [A-Za-z0-9_.-], not starting with '.' (it names a directory)");
  REEL_ASSIGN_OR_RETURN(auto dataset, ForeignDataset::Open(dataset_root, {.fs = fs}));
  if (dataset->info().format != DatasetFormat::kBundle)
    return Status::NotSupported(dataset_root + ": overlays belong to bundle datasets (seed 004), this is " +
                                DatasetFormatName(dataset->info().format));
  REEL_ASSIGN_OR_RETURN(std::vector<ForeignEpisode> episodes, dataset->ReadEpisodes());
  REEL_ASSIGN_OR_RETURN(const ForeignEpisode* e, FindBundleEpisode(episodes, episode, dataset_root));
  OverlayKind kind = OverlayKind::kDense;
  REEL_ASSIGN_OR_RETURN(auto table, ReadSource(options, e->length, &kind));
  OverlayWriteReport report;
  report.path = foreign::OverlayRelPath(name, e->bundle_id);
  const std::string target = JoinPath(dataset_root, report.path);
  // No link on the way before anything under overlays/ is read or written.
  REEL_RETURN_IF_ERROR(internal::CheckBeneath(fs, dataset_root, report.path, target));
  REEL_RETURN_IF_ERROR(SameAsWritten(fs, dataset_root, name, e->bundle_id, *table->schema(), options.from));

  report.name = name;
  report.bundle_id = e->bundle_id;
  report.episode_index = e->episode_index;
  report.kind = OverlayKindName(kind);
  report.rows = table->num_rows();
  report.columns = foreign::OverlayValueColumns(*table->schema());
  report.dry_run = options.dry_run;
  REEL_ASSIGN_OR_RETURN(FileInfo existing, fs->Stat(target));
  report.replaced = existing.type != FileType::kNotFound;
  if (report.replaced && !options.replace)
    return Status::AlreadyExists(target + ": episode " + e->bundle_id + " already has overlay \"" + name +
                                 "\" (replace it with --replace / replace=True)");
  if (options.dry_run) return report;

  const std::string dir = JoinPath(dataset_root, "overlays/" + name);
  REEL_RETURN_IF_ERROR(fs->CreateDirs(dir));
  const std::string tmp = JoinPath(dir, "." + e->bundle_id + ".parquet." + internal::UniqueWriterTag() + ".tmp");
  Status st = internal::WriteParquet(fs, tmp, *table);
  if (st.ok()) st = fs->Rename(tmp, target);
  if (!st.ok()) {
    (void)fs->RemoveFile(tmp);
    return st;
  }
  REEL_RETURN_IF_ERROR(fs->SyncDir(dir));
  return report;
}

}  // namespace reel
