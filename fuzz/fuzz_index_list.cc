// Episode lists and frame ranges as typed on the command line (--episodes, --at):
// ParseIndexList and DropRepeats. Aborts when an accepted list breaks the documented
// contract (size bound, range, DropRepeats keeping first occurrences in order).
#include <cstdlib>
#include <set>
#include <string_view>

#include "reel/index_list.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reel;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  constexpr int64_t kExact = int64_t{1} << 53;
  for (int64_t max_size : {kMaxIndexListSize, int64_t{7}}) {
    auto list = ParseIndexList(text, max_size);
    if (!list.ok()) continue;
    if (static_cast<int64_t>(list->size()) > max_size) std::abort();
    for (int64_t i : *list)
      if (i < 0 || i > kExact) std::abort();
    const std::vector<int64_t> once = DropRepeats(*list);
    std::set<int64_t> seen;
    size_t at = 0;
    for (int64_t i : *list) {
      if (!seen.insert(i).second) continue;
      if (at >= once.size() || once[at++] != i) std::abort();
    }
    if (at != once.size()) std::abort();
  }
  return 0;
}
