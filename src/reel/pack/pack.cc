// PackEpisode: the upload zip slice of one episode (contract §9).
#include "reel/pack.h"

#include <arrow/buffer.h>
#include <arrow/io/interfaces.h>
#include <arrow/result.h>
#include <zip.h>

#include <cstdio>
#include <utility>

#include "pack/episode_slice.h"
#include "pack/precompress.h"
#include "pack/slice_rules.h"
#include "pack/zip_handle.h"
#include "pack/zip_source_fs.h"
#include "io/scratch_dir.h"
#include "layout/confined.h"
#include "reel/layout.h"
#include "reel/task.h"
#include "layout/journal.h"

namespace reel {

int64_t UploadEpisodeIndex(int64_t episode_index) {
  // The reference's fixed 1000 (reference-behaviour.md "Numbering"), not the task's
  // chunks_size: the form field is a display number that must equal the file stem.
  return EpisodeFileSuffix(episode_index, 1000);
}

std::string DefaultSliceName(const std::string& task_name, int64_t episode_index) {
  char suffix[32];
  std::snprintf(suffix, sizeof(suffix), "_ep%06lld.zip",
                static_cast<long long>(UploadEpisodeIndex(episode_index)));
  return task_name + suffix;
}

namespace {

// One zip entry: where its bytes come from (a task file on the task's file system, or a
// scratch file on the output's) and its name in the zip.
struct Source {
  std::string arcname;
  FileSystem* fs = nullptr;
  std::string path;
  bool recompressed = false;
};

std::string EpisodeName(const std::string& root, int64_t n) {
  return root + ": episode " + std::to_string(n);
}

// Re-encodes the RGB .mp4 videos among the first entries of `out` (e.videos, in order)
// into `scratch` on `scratch_fs` and points their entries there (pack.h, precompress).
Status PrecompressVideos(const Task& task, const EpisodeEntry& e, const PackOptions& options,
                         FileSystem* scratch_fs, const std::string& scratch, std::vector<Source>* out) {
  const internal::PrecompressOptions po{options.precompress_crf, options.precompress_preset,
                                        options.precompress_threads, task.fs(), scratch_fs};
  size_t i = 0;
  for (const auto& [image_key, rel] : e.videos) {  // (*out)[i] is this video
    Source& s = (*out)[i];
    const std::string copy = JoinPath(scratch, "video-" + std::to_string(i++) + ".mp4");
    // RGB slots are those in info.json cameras (depth never is); the decoder
    // double-checks the stream itself. .mkv is always depth (FFV1).
    if (Lookup(task.info().cameras, image_key) != nullptr && rel.ends_with(".mp4")) {
      auto outcome = internal::PrecompressRgbVideo(s.path, copy, po);
      if (!outcome.ok()) return outcome.status().WithContext("precompress " + rel);
      if (*outcome == internal::PrecompressOutcome::kRecompressed) {
        s.fs = scratch_fs;
        s.path = copy;
        s.recompressed = true;
      }
    }
    if (options.progress)
      options.progress({"videos precompressed", static_cast<int64_t>(i), static_cast<int64_t>(e.videos.size()), rel});
  }
  return Status::OK();
}

// The entries of the slice, in the order of pack.h, generating the single-row
// episodes slice and the re-encoded videos into `scratch` on `scratch_fs`.
Result<std::vector<Source>> CollectSources(const Task& task, int64_t n, const PackOptions& options,
                                           FileSystem* scratch_fs, const std::string& scratch) {
  FileSystem* fs = task.fs();
  REEL_ASSIGN_OR_RETURN(EpisodeEntry e, task.FindEpisode(n));
  REEL_ASSIGN_OR_RETURN(const std::string data_path, task.DataPathOf(n));
  REEL_ASSIGN_OR_RETURN(const std::string episodes_path, task.EpisodesPathOf(n));
  if (e.data_path.empty())
    return Status::NotFound(EpisodeName(task.root(), n) + " has no data parquet (" + data_path +
                            " is missing; deleted after upload?)");
  if (e.row_source == RowSource::kMissing)
    return Status::NotFound(EpisodeName(task.root(), n) + " has no episodes row (neither " +
                            episodes_path + " nor a legacy shard holds it)");

  // Task files first, as they are on disk; a legacy row's source is its shard for now.
  std::vector<Source> out;
  for (const auto& [image_key, rel] : e.videos) out.push_back({rel, fs, task.Path(rel), false});
  out.push_back({e.data_path, fs, task.Path(e.data_path), false});
  const size_t row_entry = out.size();
  out.push_back({e.row_source == RowSource::kEpisodeFile ? e.row_path : episodes_path, fs,
                 task.Path(e.row_path), false});
  for (const char* meta : {"meta/info.json", "meta/stats.json", "meta/tasks.jsonl"})
    out.push_back({meta, fs, task.Path(meta), false});

  // Every file must exist now, before any re-encoding: libzip reads sources only at
  // zip_close, and a missing task file must be an error that names it.
  // A meta file over the bound an import server takes (SliceLimits::max_meta_bytes) would
  // make a slice every server refuses (zip.entry_size): refused here, naming it.
  const uint64_t max_meta = SliceLimits{}.max_meta_bytes;
  // A link inside the task would put bytes from outside it into the slice, and so onto a
  // server (issue 27: a task's files are its own): refused, naming it.
  internal::Beneath beneath(fs, task.root());
  for (const Source& s : out) {
    REEL_RETURN_IF_ERROR(beneath.Check(s.arcname, EpisodeName(task.root(), n) + " (pack)"));
    REEL_ASSIGN_OR_RETURN(FileInfo info, fs->Stat(s.path));
    if (info.type != FileType::kFile)
      return Status::NotFound(EpisodeName(task.root(), n) + ": " + s.path +
                              (info.type == FileType::kNotFound ? " is missing" : " is not a file"));
    auto kind = internal::ClassifySlicePath(s.arcname);
    if (kind.ok() && internal::IsMetaJson(*kind) && info.size > max_meta)
      return Status::Invalid(s.path + ": zip.entry_size: " + std::to_string(info.size) + " bytes, over the " +
                             std::to_string(max_meta) + " an import server takes for a task file (max_meta_bytes)");
  }

  if (e.row_source == RowSource::kLegacyShard) {
    const std::string slice = JoinPath(scratch, "episodes-row.parquet");
    REEL_RETURN_IF_ERROR(internal::WriteSingleRowSlice(fs, out[row_entry].path, n, scratch_fs, slice));
    out[row_entry].fs = scratch_fs;
    out[row_entry].path = slice;
  }
  if (options.precompress) REEL_RETURN_IF_ERROR(PrecompressVideos(task, e, options, scratch_fs, scratch, &out));
  return out;
}

// Writes `sources` as ZIP_STORED entries to `path` (created; must not exist) through `fs`
// and syncs it; each entry's bytes are read through its own file system.
Status WriteZip(FileSystem* fs, const std::string& path, const std::vector<Source>& sources) {
  REEL_ASSIGN_OR_RETURN(internal::ZipArchive za, internal::CreateZipForWrite(fs, path));
  for (const Source& s : sources) {
    auto read = internal::NewZipReadSource(s.fs, s.path);
    if (!read.ok()) return read.status().WithContext("cannot read for zip");
    zip_source_t* src = *read;
    const zip_int64_t idx = zip_file_add(za.get(), s.arcname.c_str(), src, ZIP_FL_ENC_UTF_8);
    if (idx < 0) {
      zip_source_free(src);  // not taken over by the archive on failure
      return Status::IOError(path + ": cannot add " + s.arcname + ": " +
                             internal::ZipErrorText(za.get()));
    }
    // Stored, never deflated (reference-behaviour.md "Likely mistakes" 8): the
    // server streams entries out unchanged and video/parquet do not shrink anyway.
    if (zip_set_file_compression(za.get(), static_cast<zip_uint64_t>(idx), ZIP_CM_STORE, 0) != 0)
      return Status::IOError(path + ": cannot store " + s.arcname + ": " +
                             internal::ZipErrorText(za.get()));
  }
  if (zip_close(za.get()) != 0)
    return Status::IOError(path + ": cannot write zip: " + internal::ZipErrorText(za.get()));
  za.release();  // zip_close freed it
  return Status::OK();
}

// The zip is renamed over its path: only a regular file may be replaced that way. A
// symbolic link, FIFO or device node there (`-o /dev/stdout`) would silently become a
// regular file.
// An existing file is replaced only when asked (replace_existing, the CLI's --force), and
// only when it is a zip (its first bytes are a local file header): `-o meta/info.json --force`
// must not turn a task's metadata into a zip.
Status CheckReplaceable(FileSystem* fs, const std::string& zip_path, bool replace_existing) {
  REEL_ASSIGN_OR_RETURN(FileInfo target, fs->Stat(zip_path));
  if (target.type == FileType::kNotFound) {
    // A dangling symbolic link stats as absent; the listing tells.
  } else if (target.type != FileType::kFile) {
    return Status::AlreadyExists(zip_path + ": exists and is not a regular file; pack replaces only a zip it wrote");
  } else if (!replace_existing) {
    return Status::AlreadyExists(zip_path + ": already exists (--force, PackOptions::replace_existing, replaces it)");
  } else {
    REEL_ASSIGN_OR_RETURN(auto file, fs->OpenRandomAccess(zip_path));
    auto head = file->ReadAt(0, 4);
    if (!head.ok() || (*head)->size() != 4 || (*head)->ToString() != std::string("PK\x03\x04", 4))
      return Status::AlreadyExists(zip_path + ": is not a zip; pack replaces only a zip it wrote");
  }
  REEL_ASSIGN_OR_RETURN(auto entries, fs->ListDir(DirName(zip_path)));
  const std::string name = zip_path.substr(zip_path.find_last_of('/') + 1);
  for (const DirEntry& e : entries)
    if (e.name == name && e.symlink)
      return Status::AlreadyExists(zip_path + ": is a symbolic link; pack does not replace links");
  return Status::OK();
}

Result<PackResult> PackInto(const Task& task, int64_t n, FileSystem* fs, const std::string& zip_path,
                            const std::string& temp, const PackOptions& options) {
  REEL_ASSIGN_OR_RETURN(auto scratch, internal::ScratchDir::Create("reel-pack", "", fs));
  REEL_ASSIGN_OR_RETURN(auto sources, CollectSources(task, n, options, fs, scratch->path()));
  REEL_RETURN_IF_ERROR(WriteZip(fs, temp, sources));  // synced by zip_close's commit

  PackResult result;
  result.zip_path = zip_path;
  result.episode_index = n;
  result.upload_episode_index = UploadEpisodeIndex(n);
  for (const Source& s : sources) {
    REEL_ASSIGN_OR_RETURN(FileInfo info, s.fs->Stat(s.path));
    result.entries.push_back({s.arcname, info.size, s.recompressed});
  }
  REEL_ASSIGN_OR_RETURN(FileInfo zip_info, fs->Stat(temp));
  result.zip_bytes = zip_info.size;
  REEL_RETURN_IF_ERROR(fs->Rename(temp, zip_path));
  return result;
}

}  // namespace

Result<PackResult> PackEpisode(const std::string& task_root, int64_t episode_index,
                               const std::string& zip_path, const PackOptions& options) {
  FileSystem* task_fs = options.task_fs ? options.task_fs : DefaultFileSystem();
  FileSystem* fs = options.output_fs ? options.output_fs : DefaultFileSystem();
  if (options.precompress && (options.precompress_crf < 0 || options.precompress_crf > 51))
    return Status::Invalid("precompress CRF must be 0..51, got " +
                           std::to_string(options.precompress_crf));
  REEL_ASSIGN_OR_RETURN(auto task, Task::Open(task_root, {task_fs, 0}));
  // Checked up front: libzip would only fail at zip_close, naming its own temp file.
  REEL_ASSIGN_OR_RETURN(FileInfo out_dir, fs->Stat(DirName(zip_path)));
  if (out_dir.type != FileType::kDirectory)
    return Status::NotFound(zip_path + ": output directory " + DirName(zip_path) + " does not exist");
  REEL_RETURN_IF_ERROR(CheckReplaceable(fs, zip_path, options.replace_existing));
  const std::string temp = internal::TempPathFor(zip_path, "pack");
  internal::HoldScratchPath(temp, fs);  // an interrupted pack removes it too
  auto result = PackInto(*task, episode_index, fs, zip_path, temp, options);
  internal::ReleaseScratchPath(temp);
  if (!result.ok()) {
    // The temp (written through the FileSystem by zip_close; a failed write removes it)
    // must not outlive a failure; nothing in the task was touched.
    (void)fs->RemoveFile(temp);
    return result.status();
  }
  REEL_RETURN_IF_ERROR(fs->SyncDir(DirName(zip_path)));
  return result;
}

}  // namespace reel
