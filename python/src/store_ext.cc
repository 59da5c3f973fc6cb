// reel._core.StorageOptions (reel::ObjectStoreOptions) and the object-store helpers
// of the Python layer: read_file through any location, the read counters.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "binding.h"

namespace reel {
namespace py {

using namespace nb::literals;

Result<OpenedLocation> Locate(const std::string& path_or_uri, const ObjectStoreOptions& options) {
  nb::gil_scoped_release release;
  return OpenLocation(path_or_uri, options);
}

void BindStore(nb::module_& m) {
  nb::class_<ObjectStoreOptions>(m, "StorageOptions",
                                 "reel::ObjectStoreOptions (include/reel/object_store.h): how to reach an "
                                 "object store; the CLI's --endpoint-url, --region, --anonymous.")
      .def(nb::init<>())
      .def_rw("endpoint_url", &ObjectStoreOptions::endpoint_url,
              "S3 endpoint, e.g. http://127.0.0.1:9000; '' = $AWS_ENDPOINT_URL_S3 / $AWS_ENDPOINT_URL")
      .def_rw("region", &ObjectStoreOptions::region, "'' = $AWS_REGION / $AWS_DEFAULT_REGION")
      .def_rw("anonymous", &ObjectStoreOptions::anonymous, "no credentials (public buckets)")
      .def_rw("connect_timeout_s", &ObjectStoreOptions::connect_timeout_s)
      .def_rw("request_timeout_s", &ObjectStoreOptions::request_timeout_s)
      .def_rw("max_attempts", &ObjectStoreOptions::max_attempts);
  m.def("is_uri", &IsUri, "path"_a, "True for '<scheme>://...' (an object-store location).");
  m.def(
      "read_file",
      [](const std::string& path, const ObjectStoreOptions& storage) -> nb::object {
        Result<std::string> bytes = NotRunYet();
        {
          nb::gil_scoped_release release;
          bytes = [&]() -> Result<std::string> {
            REEL_ASSIGN_OR_RETURN(OpenedLocation loc, OpenLocation(path, storage));
            REEL_ASSIGN_OR_RETURN(FileInfo info, loc.fs->Stat(loc.root));
            if (info.type == FileType::kNotFound) return Status::NotFound(path + ": no such file");
            return loc.fs->ReadFile(loc.root);
          }();
        }
        if (!bytes.ok() && bytes.status().code() == StatusCode::kNotFound) return nb::none();
        const std::string& b = Unwrap(std::move(bytes));
        return nb::bytes(b.data(), b.size());
      },
      "path"_a, "storage"_a = ObjectStoreOptions(),
      "The whole file at a path or URI as bytes; None when it does not exist.");
  m.def(
      "object_store_counters",
      [](const std::string& uri, const ObjectStoreOptions& storage, bool reset) {
        OpenedLocation loc = Unwrap(Locate(uri, storage));
        nb::dict d;
        if (!loc.object_store) return d;
        ObjectStoreCounters c = loc.object_store->counters();
        d["bytes_read"] = c.bytes_read;
        d["read_requests"] = c.read_requests;
        d["files_opened"] = c.files_opened;
        d["metadata_requests"] = c.metadata_requests;
        if (reset) loc.object_store->ResetCounters();
        return d;
      },
      "uri"_a, "storage"_a = ObjectStoreOptions(), "reset"_a = false,
      "What the object store serving `uri` (shared by every location with the same settings) has "
      "read: {bytes_read, read_requests, files_opened, metadata_requests}; {} for a plain path. "
      "`reset` zeroes them after reading.");
  m.def("shutdown_object_stores", &ShutdownObjectStores,
        "Drops the object-store connections and finalises Arrow's S3 support (reel does this at exit).");
}

}  // namespace py
}  // namespace reel
