// The object-storage flags every read command shares (docs/storage.md).
#include "cli.h"

namespace reel::cli {

void AddStoreOptions(CLI::App* cmd, ObjectStoreOptions& o) {
  const char* group = "Object storage (s3://bucket/path; see docs/storage.md)";
  cmd->add_option("--endpoint-url", o.endpoint_url,
                  "S3 endpoint, e.g. http://127.0.0.1:9000 (default $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL)")
      ->group(group);
  cmd->add_option("--region", o.region, "S3 region (default $AWS_REGION, $AWS_DEFAULT_REGION)")->group(group);
  cmd->add_flag("--anonymous", o.anonymous, "no credentials (public buckets)")->group(group);
}

Result<OpenedLocation> OpenInput(const std::string& path_or_uri, const ObjectStoreOptions& options) {
  return OpenLocation(path_or_uri, options);
}

}  // namespace reel::cli
