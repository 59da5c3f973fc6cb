// Internal to the jobs area: the locations one job opened, so that its errors and
// warnings name object-store files by the URI the caller gave.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "reel/object_store.h"
#include "reel/status.h"

namespace reel::internal {

// The locations one job opened. An object store's files are named by the store's own
// paths ("b/task/meta/info.json") inside the library; Name() writes them as the URI the
// caller gave ("s3://b/task/meta/info.json").
class Locations {
 public:
  explicit Locations(const ObjectStoreOptions& store) : store_(store) {}

  Result<OpenedLocation> Open(const std::string& path_or_uri) {
    auto loc = OpenLocation(path_or_uri, store_);
    if (!loc.ok()) return loc.status();
    if (loc->object_store && !loc->root.empty()) Remember(loc->root, loc->display);
    return loc;
  }

  // Names `root` (a store's own path) by `uri` from now on.
  void Remember(std::string root, std::string uri) { opened_.emplace_back(std::move(root), std::move(uri)); }

  // Store paths written as the URIs they were opened by (NameStorePaths, object_store.h).
  std::string Name(std::string message) const { return NameStorePaths(std::move(message), opened_); }

  Status Name(const Status& status) const {
    if (status.ok() || opened_.empty()) return status;
    return Status(status.code(), Name(status.message())).WithRule(status.rule());
  }

  template <typename T>
  Result<T> Name(Result<T> result) const {
    if (!result.ok()) return Name(result.status());
    return result;
  }

  void Name(std::vector<std::string>& messages) const {
    for (std::string& m : messages) m = Name(std::move(m));
  }

  // `path` under a location's root written under the location as given.
  static std::string Display(const OpenedLocation& loc, const std::string& path) {
    if (path.compare(0, loc.root.size(), loc.root) != 0) return path;
    return loc.display + path.substr(loc.root.size());
  }

 private:
  ObjectStoreOptions store_;
  std::vector<std::pair<std::string, std::string>> opened_;  // (store path, URI)
};

}  // namespace reel::internal
