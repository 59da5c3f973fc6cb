// meta/stats.json: ParseStatsJson, then SerializeStatsJson whose output must parse again.
#include <cstdlib>

#include "harness_util.h"
#include "reel/metadata.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reel;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto stats = ParseStatsJson(text, "meta/stats.json");
  if (!stats.ok()) return 0;
  for (const auto& [name, block] : stats->blocks) (void)block.needs_rebuild();
  const std::string again = SerializeStatsJson(*stats);
  auto reparsed = ParseStatsJson(again, "meta/stats.json (serialized)");
  if (!reparsed.ok()) {
    fprintf(stderr, "SerializeStatsJson wrote what ParseStatsJson refuses: %s\n",
            reparsed.status().ToString().c_str());
    std::abort();
  }
  return 0;
}
