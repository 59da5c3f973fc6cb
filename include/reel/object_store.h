// Object storage: tasks and datasets read from S3 (and S3-compatible stores such
// as MinIO, OSS, moto), GCS, or anything arrow::fs::FileSystemFromUri accepts,
// through the same FileSystem interface as the local disk.
//
// A location is a plain path ("/data/task", "task") or a URI
// ("s3://bucket/prefix/task", "gs://bucket/task"). OpenLocation() resolves it to a
// FileSystem and the root path inside it; everything downstream (Task::Open,
// ForeignDataset::Open, CheckTask, DetectFormat) takes that pair unchanged.
//
// Reads on an object store: Stat is a HEAD (or a one-page LIST for an implicit
// directory), ListDir a LIST, ReadFile one GET, and OpenRandomAccess returns
// Arrow's own ranged-read file: a HEAD for the size, then one ranged GET per read.
// Parquet footers and columns (and, once video goes through FileSystem, video
// packets) are therefore read in ranges, never as whole-file downloads.
//
// Writes: NewWritableFile streams to the object, which appears whole at Close()
// (multipart upload); Sync() flushes nothing durable. There is no rename and no
// lock: Rename() and LockFile() return NotSupported, SyncDir() is a no-op. Writers
// that need atomic publication (the recorder, import) do not run on an object store;
// `reel push` and export (ExportPublish::kUpload) publish by writing a marker object
// last instead (docs/storage.md).
//
// Thread safety: OpenLocation may be called from any thread. The object-store
// FileSystem is safe for concurrent use (Arrow's file systems are), and its
// counters are atomic.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "reel/fs.h"
#include "reel/status.h"

namespace arrow::fs {
class FileSystem;
}

namespace reel {

// How to reach an object store. The same struct feeds the CLI flags
// (--endpoint-url, --region, --anonymous) and Python's `storage_options` keyword.
// Empty fields fall back to the environment, then to Arrow/AWS defaults.
struct ObjectStoreOptions {
  // S3 endpoint, e.g. "http://127.0.0.1:9000" (scheme optional: https when absent).
  // "" = $AWS_ENDPOINT_URL_S3, else $AWS_ENDPOINT_URL, else AWS itself.
  std::string endpoint_url;
  // "" = $AWS_REGION, else $AWS_DEFAULT_REGION, else "us-east-1" when an endpoint is
  // set, else the bucket's region as AWS reports it.
  std::string region;
  // No credentials at all (public buckets). Otherwise $AWS_ACCESS_KEY_ID /
  // $AWS_SECRET_ACCESS_KEY (/ $AWS_SESSION_TOKEN), else the AWS default chain
  // (profile, instance metadata).
  bool anonymous = false;
  // Seconds to establish a connection; and the longest a request may go without a byte
  // arriving (curl's low-speed limit on Linux: a stalled server fails after it, a slow
  // download of a big object does not). <= 0 = the AWS default. Worst case for an
  // unresponsive endpoint: about max_attempts * request_timeout_s plus back-off.
  double connect_timeout_s = 5;
  double request_timeout_s = 10;
  // Attempts per request (the first included) before an error is returned, with the
  // AWS standard back-off between them.
  int max_attempts = 3;
};

// What an object-store FileSystem has done since it was made (or ResetCounters()).
struct ObjectStoreCounters {
  uint64_t bytes_read = 0;         // bytes returned by ReadFile and ranged reads
  uint64_t read_requests = 0;      // ReadFile calls plus ranged reads (each a GET on S3)
  uint64_t files_opened = 0;       // OpenRandomAccess calls (a HEAD on S3, for the size)
  uint64_t metadata_requests = 0;  // Stat and ListDir calls
};

// reel::FileSystem over an arrow::fs::FileSystem. Paths are the wrapped file
// system's own ("bucket/prefix/file" for S3); error messages name them as URIs
// ("s3://bucket/prefix/file") so that they can be pasted back into the CLI.
class ObjectStoreFileSystem final : public FileSystem {
 public:
  // `uri_prefix` is put before paths in messages ("s3://"; "" for none). Never fails.
  static std::unique_ptr<ObjectStoreFileSystem> Wrap(std::shared_ptr<arrow::fs::FileSystem> fs,
                                                     std::string uri_prefix);
  ~ObjectStoreFileSystem() override;

  // A missing object is kNotFound; a prefix with objects below it is kDirectory
  // (object stores have implicit directories).
  Result<FileInfo> Stat(const std::string& path) override;
  // Sorted by name. NotFound when `path` is neither an object prefix nor a directory.
  Result<std::vector<DirEntry>> ListDir(const std::string& path) override;
  Result<std::string> ReadFile(const std::string& path) override;
  // Arrow's file for `path` (S3: ranged GETs), wrapped to count bytes read.
  Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenRandomAccess(const std::string& path) override;
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  // NotSupported: object stores have no atomic rename.
  Status Rename(const std::string& from, const std::string& to) override;
  // OK: nothing to make durable (an object is durable once its upload completed).
  Status SyncDir(const std::string& path) override;
  Status RemoveFile(const std::string& path) override;
  // Directories are implicit: one goes with its last object, so RemoveAll (reel/fs.h)
  // needs only RemoveFile. NotFound when nothing is below `path` any more (the usual
  // case); an empty marker object "path/" (written by other tools) is deleted; IOError
  // when objects remain below it; NotSupported for a bucket.
  Status RemoveDir(const std::string& path) override;
  Status CreateDirs(const std::string& path) override;
  // NotSupported: object stores have no lock.
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override;
  // None: no atomic rename, no lock, implicit directories.
  FileSystemCapabilities Capabilities() const override {
    return {.atomic_rename = false, .locks = false, .directories = false};
  }

  ObjectStoreCounters counters() const;
  void ResetCounters();
  const std::shared_ptr<arrow::fs::FileSystem>& arrow_fs() const { return fs_; }
  // `path` as a URI for messages: uri_prefix + path.
  std::string Uri(const std::string& path) const { return uri_prefix_ + path; }

  struct Counters;  // the atomics behind counters(); shared with open files

 private:
  ObjectStoreFileSystem(std::shared_ptr<arrow::fs::FileSystem> fs, std::string uri_prefix);

  std::shared_ptr<arrow::fs::FileSystem> fs_;
  std::string uri_prefix_;
  std::shared_ptr<Counters> counters_;
};

// A location resolved: the file system to read it through and the root inside it.
struct OpenedLocation {
  // Never null. For a plain path: DefaultFileSystem() (not owned, lives forever).
  // For a URI: an ObjectStoreFileSystem shared by every location opened with the
  // same scheme, endpoint, region and credentials settings, kept until process exit
  // (so a raw FileSystem* taken from it, as TaskOptions::fs, stays valid).
  std::shared_ptr<FileSystem> fs;
  // The path to pass to Task::Open & co: the plain path as given, or the path
  // inside the object store ("bucket/prefix/task", no trailing '/').
  std::string root;
  // The URI as given (trailing '/' removed), or the plain path.
  std::string display;
  // Set for a URI: the same object as `fs`, for its counters.
  ObjectStoreFileSystem* object_store = nullptr;
};

// True when `path_or_uri` has the form "<scheme>://..." with a scheme of letters,
// digits, '+', '-' or '.' (RFC 3986), e.g. "s3://b/k", "gs://b", "file:///x".
bool IsUri(const std::string& path_or_uri);

// Resolves a plain path to the POSIX file system and a URI to an object store.
// "s3://" URIs are configured from `options` and the environment (see
// ObjectStoreOptions); any other scheme goes to arrow::fs::FileSystemFromUri
// (gs://, file://, abfs://, hdfs://, as the Arrow build supports). S3 is
// initialised on first use and finalised at process exit.
//
// Errors name the URI: Invalid for a malformed URI or one without a bucket, or a
// scheme Arrow does not know; NotFound when the bucket does not exist; IOError or
// PermissionDenied when the endpoint cannot be reached or refuses the credentials
// (after options.max_attempts attempts, each bounded by the timeouts). Nothing
// below the bucket is read: a missing task is reported by whoever opens it.
Result<OpenedLocation> OpenLocation(const std::string& path_or_uri, const ObjectStoreOptions& options = {});

// The library names an object store's files by the store's own paths ("b/task/x"); an edge
// names them as the user wrote them. Returns `message` with each `root` of `roots` (a
// location's (root, display) pair) that starts a word (at the start, or after a space or a
// quote) and ends one written as its display: "b/task/meta/info.json: bad" ->
// "s3://b/task/meta/info.json: bad"; "s3://b/task" and "/x/b/task" stay as they are.
std::string NameStorePaths(std::string message, const std::vector<std::pair<std::string, std::string>>& roots);

// Drops the cached object-store file systems and finalises Arrow's S3 support.
// Runs at process exit by itself (std::atexit, registered on first S3 use); callers
// with their own shutdown order (Python's atexit) may call it earlier. After it, no
// FileSystem from OpenLocation(URI) may be used. Idempotent.
void ShutdownObjectStores();

}  // namespace reel
