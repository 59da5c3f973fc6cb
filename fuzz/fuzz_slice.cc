// An uploaded zip slice, as the server receives it: InspectSlice (central directory,
// names, limits, meta/info.json) then ExtractSlice into a fresh directory. libzip
// takes a path: the input is written to the harness's temp directory (/dev/shm).
#include <cstdio>

#include "harness_util.h"
#include "reel/pack.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reel;
  auto& tmp = fuzz::TempDir::Get();
  tmp.Clean();
  const std::string zip = tmp.Write("slice.zip", std::string_view(reinterpret_cast<const char*>(data), size));
  SliceLimits limits;  // small limits: the harness must stay fast and in memory
  limits.max_entry_bytes = 4u << 20;
  limits.max_total_bytes = 16u << 20;
  limits.max_meta_bytes = 1u << 20;
  auto manifest = InspectSlice(zip, limits);
  if (fuzz::Debug()) fprintf(stderr, "inspect: %s\n", manifest.status().ToString().c_str());
  if (manifest.ok()) {
    auto extracted = ExtractSlice(zip, tmp.path() + "/out", limits);
    if (fuzz::Debug()) fprintf(stderr, "extract: %s\n", extracted.status().ToString().c_str());
  }
  tmp.Clean();
  return 0;
}
