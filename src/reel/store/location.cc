// OpenLocation: a plain path or a URI -> a FileSystem and the root inside it.
#include <arrow/filesystem/filesystem.h>
#include <arrow/filesystem/s3fs.h>

#include <cctype>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string_view>

#include "reel/object_store.h"

namespace reel {
namespace {

struct ParsedUri {
  std::string scheme;  // lower case, without "://"
  std::string bucket;  // the authority: an S3/GCS bucket
  std::string key;     // below the bucket, no leading or trailing '/'
  std::string query;   // after '?', without it
};

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string FirstSet(std::initializer_list<std::string> values) {
  for (const std::string& v : values)
    if (!v.empty()) return v;
  return {};
}

Result<ParsedUri> ParseUri(const std::string& uri) {
  ParsedUri p;
  const size_t sep = uri.find("://");
  p.scheme = uri.substr(0, sep);
  for (char& c : p.scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string rest = uri.substr(sep + 3);
  if (size_t q = rest.find('?'); q != std::string::npos) {
    p.query = rest.substr(q + 1);
    rest.resize(q);
  }
  const size_t slash = rest.find('/');
  p.bucket = rest.substr(0, slash);
  if (slash != std::string::npos) p.key = rest.substr(slash + 1);
  while (!p.key.empty() && p.key.back() == '/') p.key.pop_back();
  while (!p.key.empty() && p.key.front() == '/') p.key.erase(0, 1);
  if (p.key.find("//") != std::string::npos) return Status::Invalid(uri + ": empty path component (\"//\")");
  return p;
}

// "http://host:port/" -> scheme "http", endpoint "host:port"; no scheme = https.
Status SetEndpoint(const std::string& url, arrow::fs::S3Options* s3) {
  std::string rest = url;
  s3->scheme = "https";
  if (size_t sep = url.find("://"); sep != std::string::npos) {
    s3->scheme = url.substr(0, sep);
    rest = url.substr(sep + 3);
  }
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (s3->scheme != "http" && s3->scheme != "https")
    return Status::Invalid("endpoint URL " + url + ": scheme must be http or https");
  if (rest.empty() || rest.find('/') != std::string::npos)
    return Status::Invalid("endpoint URL " + url + ": expected [http[s]://]host[:port]");
  s3->endpoint_override = rest;
  return Status::OK();
}

struct Registry {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<ObjectStoreFileSystem>> cache;  // by connection settings
  bool s3_initialized = false;
  bool atexit_registered = false;
  bool shut_down = false;
};

Registry& GetRegistry() {
  static Registry* registry = new Registry;  // never destroyed: used from std::atexit
  return *registry;
}

// The settings an S3 file system is made with, and a key naming them for the cache.
struct S3Setup {
  arrow::fs::S3Options s3;
  std::string key;
  std::string endpoint;  // as the user gave it, for messages
};

Result<S3Setup> MakeS3Setup(const ParsedUri& p, const std::string& uri, const ObjectStoreOptions& o) {
  S3Setup setup;
  arrow::fs::S3Options& s3 = setup.s3;
  if (!p.query.empty()) {
    // Arrow's own URI options (region=, endpoint_override=, scheme=, ...) win.
    auto from_uri = arrow::fs::S3Options::FromUri(uri);
    if (!from_uri.ok()) return Status::Invalid(uri + ": " + from_uri.status().message());
    s3 = *from_uri;
  } else if (o.anonymous) {
    s3 = arrow::fs::S3Options::Anonymous();
  } else {
    s3 = arrow::fs::S3Options::Defaults();
    const std::string id = Env("AWS_ACCESS_KEY_ID"), secret = Env("AWS_SECRET_ACCESS_KEY");
    if (!id.empty() && !secret.empty()) s3.ConfigureAccessKey(id, secret, Env("AWS_SESSION_TOKEN"));
    setup.key += "key=" + id + "\n" + secret + "\n" + Env("AWS_SESSION_TOKEN") + "\n";
  }
  setup.endpoint = FirstSet({o.endpoint_url, Env("AWS_ENDPOINT_URL_S3"), Env("AWS_ENDPOINT_URL")});
  if (s3.endpoint_override.empty() && !setup.endpoint.empty()) {
    Status st = SetEndpoint(setup.endpoint, &s3);
    if (!st.ok()) return st.WithContext(uri);
  }
  if (s3.region.empty()) s3.region = FirstSet({o.region, Env("AWS_REGION"), Env("AWS_DEFAULT_REGION")});
  if (s3.region.empty() && !s3.endpoint_override.empty()) s3.region = "us-east-1";
  if (s3.region.empty()) {
    auto region = arrow::fs::ResolveS3BucketRegion(p.bucket);
    if (!region.ok()) return Status::IOError(uri + ": finding the bucket's region: " + region.status().message());
    s3.region = *region;
  }
  if (o.connect_timeout_s > 0) s3.connect_timeout = o.connect_timeout_s;
  if (o.request_timeout_s > 0) s3.request_timeout = o.request_timeout_s;
  s3.retry_strategy = arrow::fs::S3RetryStrategy::GetAwsStandardRetryStrategy(std::max(1, o.max_attempts));
  setup.key += "s3\n" + p.query + "\n" + s3.scheme + "://" + s3.endpoint_override + "\n" + s3.region + "\n" +
               (o.anonymous ? "anon" : "auth") + "\n" + std::to_string(s3.connect_timeout) + "/" +
               std::to_string(s3.request_timeout) + "/" + std::to_string(o.max_attempts);
  return setup;
}

// Once per process: Arrow's S3 support up, and down again at exit.
Status EnsureS3(Registry& r) {
  if (r.shut_down) return Status::IOError("object stores were shut down (the process is exiting)");
  if (r.s3_initialized) return Status::OK();
  arrow::Status st = arrow::fs::EnsureS3Initialized();
  if (!st.ok()) return Status::IOError("initialising Arrow's S3 support: " + st.message());
  r.s3_initialized = true;
  return Status::OK();
}

// The bucket must exist: one HEAD, which also proves the endpoint and credentials.
// Anonymous access may be refused a HEAD on a bucket whose objects are public, so
// there only a definite "no such bucket" fails.
Status CheckBucket(ObjectStoreFileSystem& fs, const ParsedUri& p, const std::string& uri,
                   const S3Setup& setup, bool anonymous) {
  auto info = fs.Stat(p.bucket);
  const std::string where = setup.endpoint.empty() ? "" : " at " + setup.endpoint;
  if (!info.ok()) {
    if (anonymous) return Status::OK();
    return Status(info.status().code(), uri + ": cannot reach bucket \"" + p.bucket + "\"" + where + ": " +
                                            info.status().message());
  }
  if (info->type == FileType::kNotFound)
    return Status::NotFound(uri + ": bucket \"" + p.bucket + "\" does not exist" + where);
  return Status::OK();
}

Result<OpenedLocation> OpenS3(const ParsedUri& p, const std::string& uri, const ObjectStoreOptions& o) {
  // What can be refused without S3 is refused first (S3 up is one more thing to finalise).
  const std::string endpoint = FirstSet({o.endpoint_url, Env("AWS_ENDPOINT_URL_S3"), Env("AWS_ENDPOINT_URL")});
  if (!endpoint.empty()) {
    arrow::fs::S3Options probe;
    REEL_RETURN_IF_ERROR(SetEndpoint(endpoint, &probe).WithContext(uri));
  }
  Registry& r = GetRegistry();
  {
    // Before any S3Options: the AWS SDK's credential providers need it up.
    std::lock_guard<std::mutex> lock(r.mu);
    REEL_RETURN_IF_ERROR(EnsureS3(r));
  }
  REEL_ASSIGN_OR_RETURN(S3Setup setup, MakeS3Setup(p, uri, o));
  std::shared_ptr<ObjectStoreFileSystem> fs;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (r.shut_down) return Status::IOError(uri + ": object stores were shut down (the process is exiting)");
    auto& cached = r.cache[setup.key];
    if (!cached) {
      auto made = arrow::fs::S3FileSystem::Make(setup.s3);
      if (!made.ok()) {
        r.cache.erase(setup.key);
        return Status::IOError(uri + ": " + made.status().message());
      }
      cached = ObjectStoreFileSystem::Wrap(*made, "s3://");
      // Registered after the first S3FileSystem exists: Arrow creates statics of its own
      // on the way (its S3 client finalizer), and atexit handlers run in reverse order, so
      // this one runs while those are still alive.
      if (!r.atexit_registered) {
        r.atexit_registered = true;
        std::atexit([] { ShutdownObjectStores(); });
      }
    }
    fs = cached;
  }
  REEL_RETURN_IF_ERROR(CheckBucket(*fs, p, uri, setup, o.anonymous));
  OpenedLocation loc;
  loc.root = p.key.empty() ? p.bucket : p.bucket + "/" + p.key;
  loc.object_store = fs.get();
  loc.fs = std::move(fs);
  return loc;
}

// Any other scheme: what arrow::fs::FileSystemFromUri makes of it.
Result<OpenedLocation> OpenOther(const ParsedUri& p, const std::string& uri) {
  Registry& r = GetRegistry();
  std::string path;
  std::shared_ptr<ObjectStoreFileSystem> fs;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (r.shut_down) return Status::IOError(uri + ": object stores were shut down (the process is exiting)");
    auto made = arrow::fs::FileSystemFromUri(uri, &path);
    if (!made.ok()) return Status::Invalid(uri + ": " + made.status().message());
    // Keyed by the file system's own URI form, so equal stores share one.
    auto& cached = r.cache[p.scheme + "\n" + (*made)->type_name() + "\n" + p.bucket];
    if (!cached || !cached->arrow_fs()->Equals(**made)) cached = ObjectStoreFileSystem::Wrap(*made, p.scheme + "://");
    fs = cached;
  }
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  OpenedLocation loc;
  loc.root = path;
  loc.object_store = fs.get();
  loc.fs = std::move(fs);
  return loc;
}

}  // namespace

bool IsUri(const std::string& s) {
  const size_t sep = s.find("://");
  if (sep == std::string::npos || sep == 0) return false;
  if (!std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  for (size_t i = 0; i < sep; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (!std::isalnum(c) && c != '+' && c != '-' && c != '.') return false;
  }
  return true;
}

Result<OpenedLocation> OpenLocation(const std::string& path_or_uri, const ObjectStoreOptions& options) {
  if (!IsUri(path_or_uri)) {
    OpenedLocation loc;
    loc.fs = std::shared_ptr<FileSystem>(DefaultFileSystem(), [](FileSystem*) {});
    loc.root = path_or_uri;
    loc.display = path_or_uri;
    return loc;
  }
  std::string uri = path_or_uri;
  while (uri.size() > 1 && uri.back() == '/' && uri.find("://") + 3 < uri.size()) uri.pop_back();
  REEL_ASSIGN_OR_RETURN(ParsedUri p, ParseUri(uri));
  if (p.scheme == "s3" || p.scheme == "gs" || p.scheme == "gcs") {
    if (p.bucket.empty()) return Status::Invalid(path_or_uri + ": no bucket (expected " + p.scheme + "://bucket/path)");
  }
  Result<OpenedLocation> loc = p.scheme == "s3" ? OpenS3(p, uri, options) : OpenOther(p, uri);
  if (loc.ok()) loc->display = uri;
  return loc;
}

void ShutdownObjectStores() {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.cache.clear();
  if (r.s3_initialized && !r.shut_down) (void)arrow::fs::EnsureS3Finalized();
  r.shut_down = true;
}

std::string NameStorePaths(std::string message, const std::vector<std::pair<std::string, std::string>>& roots) {
  for (const auto& [root, uri] : roots) {
    for (size_t at = message.find(root); at != std::string::npos; at = message.find(root, at + 1)) {
      const size_t end = at + root.size();
      const bool whole = end == message.size() || std::string_view("/: \";,)").find(message[end]) != std::string_view::npos;
      const bool starts = at == 0 || message[at - 1] == ' ' || message[at - 1] == '"' || message[at - 1] == '\'';
      if (!whole || !starts) continue;
      message.replace(at, root.size(), uri);
      at += uri.size() - 1;
    }
  }
  return message;
}

}  // namespace reel
