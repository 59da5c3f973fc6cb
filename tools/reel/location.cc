// The object-storage flags every read command shares (docs/storage.md).
#include <utility>
#include <vector>

#include "cli.h"

namespace reel::cli {
namespace {

// Object-store inputs opened by this process: (the store's path, the URI as given).
std::vector<std::pair<std::string, std::string>>& Opened() {
  static std::vector<std::pair<std::string, std::string>> opened;
  return opened;
}

}  // namespace

void AddStoreOptions(CLI::App* cmd, ObjectStoreOptions& o) {
  const char* group = "Object storage (s3://bucket/path; see docs/storage.md)";
  cmd->add_option("--endpoint-url", o.endpoint_url,
                  "S3 endpoint, e.g. http://127.0.0.1:9000 (default $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL)")
      ->group(group);
  cmd->add_option("--region", o.region, "S3 region (default $AWS_REGION, $AWS_DEFAULT_REGION)")->group(group);
  cmd->add_flag("--anonymous", o.anonymous, "no credentials (public buckets)")->group(group);
}

Result<OpenedLocation> OpenInput(const std::string& path_or_uri, const ObjectStoreOptions& options) {
  auto loc = OpenLocation(path_or_uri, options);
  if (loc.ok() && loc->object_store && !loc->root.empty()) Opened().emplace_back(loc->root, loc->display);
  return loc;
}

std::string NameInputs(std::string message) { return NameStorePaths(std::move(message), Opened()); }

}  // namespace reel::cli
