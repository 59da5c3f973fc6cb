// The server's JSON config: LoadServeConfig (it takes a path: the input is written to
// the harness's temp directory).
#include "harness_util.h"
#include "reel/serve.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = reel::fuzz::TempDir::Get().Write(
      "serve.json", std::string_view(reinterpret_cast<const char*>(data), size));
  auto config = reel::LoadServeConfig(path);
  (void)config;
  return 0;
}
