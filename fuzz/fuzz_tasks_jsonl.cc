// meta/tasks.jsonl: ParseTasksJsonl (one JSON object a line).
#include "harness_util.h"
#include "reel/metadata.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto tasks = reel::ParseTasksJsonl(text, "meta/tasks.jsonl");
  (void)tasks;
  return 0;
}
