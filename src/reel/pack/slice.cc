// InspectSlice / ExtractSlice: an untrusted upload slice on the server. Every
// header value is a claim; the bytes actually decompressed are counted again.
#include <sys/stat.h>
#include <zip.h>

#include <algorithm>
#include <functional>
#include <set>
#include <string_view>
#include <vector>

#include "meta/json_util.h"
#include "pack/slice_rules.h"
#include "pack/zip_handle.h"
#include "pack/zip_source_fs.h"
#include "reel/pack.h"

namespace reel {
namespace {

using internal::QuoteName;
using internal::SliceError;
using internal::SliceNotSupported;
using internal::SlicePath;

// A local file header is at least 30 bytes plus the name (zip APPNOTE 4.3.7).
constexpr uint64_t kLocalHeaderBytes = 30;

struct Inspected {
  internal::ZipArchive za;  // opened with ZIP_CHECKCONS
  SliceManifest manifest;
  std::vector<SlicePath> paths;  // parallel to manifest.entries
  std::vector<uint64_t> limits;  // per-entry byte limit, parallel to manifest.entries
};

Status Unreadable(const std::string& path, const std::string& why) {
  return SliceError("zip.unreadable", path + ": " + why);
}

// Regular file or no type recorded; anything else (symlink, device, fifo,
// directory) is refused. Only Unix-made entries carry a file type.
Status CheckEntryType(zip_t* za, zip_uint64_t idx, const std::string& name) {
  zip_uint8_t opsys = 0;
  zip_uint32_t attributes = 0;
  if (zip_file_get_external_attributes(za, idx, 0, &opsys, &attributes) != 0)
    return SliceError("zip.unreadable", "entry " + QuoteName(name) + ": no external attributes");
  if (opsys != ZIP_OPSYS_UNIX) return Status::OK();
  const uint32_t mode = attributes >> 16;
  const uint32_t type = mode & S_IFMT;
  if (type == 0 || type == S_IFREG) return Status::OK();
  const char* what = type == S_IFLNK ? "a symlink" : type == S_IFDIR ? "a directory" : "not a regular file";
  char octal[16];
  std::snprintf(octal, sizeof(octal), "%06o", mode);
  return SliceError("zip.symlink",
                    "entry " + QuoteName(name) + " is " + what + " (unix mode " + octal + ")");
}

Status CheckSizes(const SliceEntry& e, uint64_t limit, const SliceLimits& limits) {
  const std::string q = QuoteName(e.arcname);
  if (e.size > limit)
    return SliceError("zip.entry_size", "entry " + q + " declares " + std::to_string(e.size) +
                                            " bytes; the limit is " + std::to_string(limit));
  if (static_cast<double>(e.size) > limits.max_ratio * static_cast<double>(e.compressed_size))
    return SliceError("zip.ratio",
                      "entry " + q + " expands " + std::to_string(e.compressed_size) + " bytes to " +
                          std::to_string(e.size) + " (more than " +
                          std::to_string(static_cast<int64_t>(limits.max_ratio)) + "x)");
  return Status::OK();
}

// The checks of one entry, on the archive opened without ZIP_CHECKCONS (which
// refuses duplicate names before they can be named in a message).
Status InspectEntry(zip_t* za, zip_uint64_t idx, const SliceLimits& limits,
                    std::set<std::string>& folded, Inspected& out) {
  const char* raw = zip_get_name(za, idx, ZIP_FL_ENC_RAW);
  if (raw == nullptr)
    return SliceError("zip.unreadable", "entry #" + std::to_string(idx) + ": " + zip_strerror(za));
  // libzip hands names out NUL-terminated, so a name with an embedded NUL is seen
  // (and extracted) only up to the NUL; CheckEntryName refuses NUL from other sources.
  const std::string name(raw);
  REEL_RETURN_IF_ERROR(internal::CheckEntryName(name));
  if (!folded.insert(internal::FoldCase(name)).second)
    return SliceError("zip.duplicate", "entry " + QuoteName(name) +
                                           " appears twice (names compared ignoring ASCII case)");
  REEL_RETURN_IF_ERROR(CheckEntryType(za, idx, name));

  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat_index(za, idx, ZIP_FL_ENC_RAW, &st) != 0)
    return SliceError("zip.unreadable", "entry " + QuoteName(name) + ": " + zip_strerror(za));
  constexpr zip_uint64_t kNeeded =
      ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD | ZIP_STAT_ENCRYPTION_METHOD;
  if ((st.valid & kNeeded) != kNeeded)
    return SliceError("zip.unreadable", "entry " + QuoteName(name) + ": incomplete header");
  if (st.encryption_method != ZIP_EM_NONE)
    return SliceError("zip.encrypted", "entry " + QuoteName(name) + " is encrypted (method " +
                                           std::to_string(st.encryption_method) + ")");
  if (st.comp_method != ZIP_CM_STORE && st.comp_method != ZIP_CM_DEFLATE)
    return SliceNotSupported("zip.method", "entry " + QuoteName(name) + " uses compression method " +
                                               std::to_string(st.comp_method) +
                                               "; only stored (0) and deflate (8) are accepted");
  REEL_ASSIGN_OR_RETURN(SlicePath p, internal::ClassifySlicePath(name));
  SliceEntry e{name, st.size, st.comp_size};
  const uint64_t limit = internal::IsMetaJson(p)
                             ? std::min(limits.max_meta_bytes, limits.max_entry_bytes)
                             : limits.max_entry_bytes;
  REEL_RETURN_IF_ERROR(CheckSizes(e, limit, limits));
  out.manifest.entries.push_back(std::move(e));
  out.paths.push_back(std::move(p));
  out.limits.push_back(limit);
  return Status::OK();
}

// Checks across entries: totals, overlap, one episode, required files.
Status InspectWhole(const std::string& path, uint64_t archive_bytes, const SliceLimits& limits,
                    Inspected& out) {
  uint64_t total = 0, footprint = 0;
  for (const SliceEntry& e : out.manifest.entries) {
    total += e.size;
    footprint += e.compressed_size + kLocalHeaderBytes + e.arcname.size();
    if (total > limits.max_total_bytes)
      return SliceError("zip.total_size", path + ": entries declare more than " +
                                              std::to_string(limits.max_total_bytes) +
                                              " bytes together (at " + QuoteName(e.arcname) + ")");
  }
  // Each entry's local header and data occupy their own bytes of the archive; more
  // than the archive holds means entries share data (the overlapping-entry bomb).
  if (footprint > archive_bytes)
    return SliceError("zip.overlap", path + ": entries need " + std::to_string(footprint) +
                                         " bytes of local headers and data, the archive has " +
                                         std::to_string(archive_bytes));
  bool first = true, data = false, episodes = false, info = false;
  for (size_t i = 0; i < out.paths.size(); ++i) {
    const SlicePath& p = out.paths[i];
    data |= p.kind == SlicePath::Kind::kData;
    episodes |= p.kind == SlicePath::Kind::kEpisodes;
    info |= p.kind == SlicePath::Kind::kInfo;
    if (!p.episode_file) continue;
    if (first) {
      out.manifest.chunk = p.chunk, out.manifest.file = p.file, first = false;
    } else if (p.chunk != out.manifest.chunk || p.file != out.manifest.file) {
      return SliceError("zip.mixed_episode",
                        "entry " + QuoteName(out.manifest.entries[i].arcname) + " is chunk " +
                            std::to_string(p.chunk) + " file " + std::to_string(p.file) +
                            ", other entries chunk " + std::to_string(out.manifest.chunk) + " file " +
                            std::to_string(out.manifest.file));
    }
  }
  const char* missing = !data ? "data parquet (data/chunk-CCC/episode-FFF.parquet)"
                        : !episodes ? "episodes file (meta/episodes/chunk-CCC/episode-FFF.parquet)"
                        : !info     ? "meta/info.json"
                                    : nullptr;
  if (missing) return SliceError("zip.missing", path + ": the slice has no " + missing);
  return Status::OK();
}

// Streams entry `i` to `sink` in pieces, refusing the moment it yields more than its
// header declares or its limit allows, or more than `total_left` (decremented).
Status StreamEntry(zip_t* za, const Inspected& in, size_t i, uint64_t* total_left,
                   const SliceLimits& limits, const std::function<Status(std::string_view)>& sink) {
  const SliceEntry& e = in.manifest.entries[i];
  const std::string q = QuoteName(e.arcname);
  internal::ZipFile zf(zip_fopen_index(za, static_cast<zip_uint64_t>(i), 0));
  if (!zf) {
    const int code = zip_error_code_zip(zip_get_error(za));
    if (code == ZIP_ER_COMPNOTSUPP) return SliceNotSupported("zip.method", "entry " + q + ": " + zip_strerror(za));
    if (code == ZIP_ER_ENCRNOTSUPP || code == ZIP_ER_NOPASSWD)
      return SliceError("zip.encrypted", "entry " + q + ": " + zip_strerror(za));
    return SliceError("zip.unreadable", "entry " + q + ": " + zip_strerror(za));
  }
  std::vector<char> buf(1 << 20);
  uint64_t produced = 0;
  while (true) {
    const zip_int64_t n = zip_fread(zf.get(), buf.data(), buf.size());
    if (n < 0) {
      const zip_error_t* err = zip_file_get_error(zf.get());
      const bool crc = zip_error_code_zip(err) == ZIP_ER_CRC;
      return SliceError("zip.unreadable", "entry " + q + (crc ? " fails its CRC check" : ": ") +
                                              (crc ? "" : zip_file_strerror(zf.get())));
    }
    if (n == 0) break;
    produced += static_cast<uint64_t>(n);
    if (produced > e.size)
      return SliceError("zip.entry_size", "entry " + q + " yields more than the " +
                                              std::to_string(e.size) + " bytes its header declares");
    if (produced > in.limits[i])
      return SliceError("zip.entry_size", "entry " + q + " yields more than " +
                                              std::to_string(in.limits[i]) + " bytes");
    if (static_cast<uint64_t>(n) > *total_left)
      return SliceError("zip.total_size", "entries yield more than " +
                                              std::to_string(limits.max_total_bytes) +
                                              " bytes together (at " + q + ")");
    *total_left -= static_cast<uint64_t>(n);
    REEL_RETURN_IF_ERROR(sink(std::string_view(buf.data(), static_cast<size_t>(n))));
  }
  if (produced != e.size)
    return SliceError("zip.unreadable", "entry " + q + " yields " + std::to_string(produced) +
                                            " bytes; its header declares " + std::to_string(e.size));
  return Status::OK();
}

// meta/info.json must say pooled_episodes_v1 (the importer's format test, §9).
Status CheckFormat(const std::string& path, const Inspected& in, const SliceLimits& limits) {
  size_t idx = 0;
  while (in.paths[idx].kind != SlicePath::Kind::kInfo) ++idx;  // InspectWhole found it
  std::string text;
  uint64_t total_left = limits.max_total_bytes;
  REEL_RETURN_IF_ERROR(StreamEntry(in.za.get(), in, idx, &total_left, limits, [&](std::string_view s) {
    text.append(s);
    return Status::OK();
  }));
  auto json = internal::ParseJson(text, "meta/info.json");
  if (!json.ok() || !json->is_object())
    return SliceError("zip.format", path + ": meta/info.json is not a JSON object");
  const auto it = json->find("format");
  const std::string format = it != json->end() && it->is_string() ? it->get<std::string>() : "";
  if (format != "pooled_episodes_v1")
    return SliceNotSupported("zip.format", path + ": meta/info.json format is " +
                                               (format.empty() ? std::string("absent") : "\"" + format + "\"") +
                                               "; expected \"pooled_episodes_v1\"");
  return Status::OK();
}

Result<Inspected> OpenAndInspect(const std::string& path, const SliceLimits& limits, FileSystem* fs) {
  REEL_ASSIGN_OR_RETURN(FileInfo file, fs->Stat(path));
  if (file.type == FileType::kNotFound) return Status::NotFound(path + ": no such slice");
  if (file.type != FileType::kFile) return Unreadable(path, "not a regular file");
  Inspected out;
  int err = 0;
  {
    auto opened = internal::OpenZipForRead(fs, path, 0, &err);
    if (!opened.ok()) return Unreadable(path, internal::ZipErrorText(err));
    internal::ZipArchive za = std::move(*opened);
    const zip_int64_t n = zip_get_num_entries(za.get(), 0);
    if (n < 0) return Unreadable(path, zip_strerror(za.get()));
    if (n > limits.max_entries)
      return SliceError("zip.entry_count", path + ": " + std::to_string(n) + " entries; the limit is " +
                                               std::to_string(limits.max_entries));
    std::set<std::string> folded;
    for (zip_int64_t i = 0; i < n; ++i)
      REEL_RETURN_IF_ERROR(InspectEntry(za.get(), static_cast<zip_uint64_t>(i), limits, folded, out));
    REEL_RETURN_IF_ERROR(InspectWhole(path, file.size, limits, out));
  }
  // Second open with the consistency checks (local headers against the central
  // directory); the entries were vetted above, so any failure here is corruption.
  auto checked = internal::OpenZipForRead(fs, path, ZIP_CHECKCONS, &err);
  if (!checked.ok()) return Unreadable(path, internal::ZipErrorText(err));
  out.za = std::move(*checked);
  if (zip_get_num_entries(out.za.get(), 0) != static_cast<zip_int64_t>(out.manifest.entries.size()))
    return Unreadable(path, "the archive changed while it was inspected");
  for (size_t i = 0; i < out.manifest.entries.size(); ++i) {
    const char* name = zip_get_name(out.za.get(), i, ZIP_FL_ENC_RAW);
    if (name == nullptr || out.manifest.entries[i].arcname != name)
      return Unreadable(path, "the archive changed while it was inspected");
  }
  REEL_RETURN_IF_ERROR(CheckFormat(path, out, limits));
  return out;
}

}  // namespace

Result<SliceManifest> InspectSlice(const std::string& zip_path, const SliceLimits& limits) {
  REEL_ASSIGN_OR_RETURN(Inspected in, OpenAndInspect(zip_path, limits, DefaultFileSystem()));
  return std::move(in.manifest);
}

Result<SliceManifest> ExtractSlice(const std::string& zip_path, const std::string& dir,
                                   const SliceLimits& limits, FileSystem* fs) {
  if (fs == nullptr) fs = DefaultFileSystem();
  REEL_ASSIGN_OR_RETURN(Inspected in, OpenAndInspect(zip_path, limits, fs));
  REEL_ASSIGN_OR_RETURN(FileInfo existing, fs->Stat(dir));
  if (existing.type != FileType::kNotFound)
    return Status::AlreadyExists(dir + ": extraction directory already exists");
  REEL_RETURN_IF_ERROR(fs->CreateDirs(dir));

  std::set<std::string> dirs = {dir};
  uint64_t total_left = limits.max_total_bytes;
  for (size_t i = 0; i < in.manifest.entries.size(); ++i) {
    // The name passed CheckEntryName and ClassifySlicePath: relative, no "..", no
    // dotfiles, a fixed set of shapes, unique; joined under a directory we created.
    const std::string dest = JoinPath(dir, in.manifest.entries[i].arcname);
    for (std::string d = DirName(dest); d.size() > dir.size(); d = DirName(d)) dirs.insert(d);
    REEL_RETURN_IF_ERROR(fs->CreateDirs(DirName(dest)));
    REEL_ASSIGN_OR_RETURN(auto file, fs->NewWritableFile(dest));
    REEL_RETURN_IF_ERROR(StreamEntry(in.za.get(), in, i, &total_left, limits,
                                     [&](std::string_view s) { return file->Append(s); }));
    REEL_RETURN_IF_ERROR(file->Sync());
    REEL_RETURN_IF_ERROR(file->Close());
  }
  // Deepest first, then the parent of `dir`, so every creation is durable.
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) REEL_RETURN_IF_ERROR(fs->SyncDir(*it));
  REEL_RETURN_IF_ERROR(fs->SyncDir(DirName(dir)));
  return std::move(in.manifest);
}

}  // namespace reel
