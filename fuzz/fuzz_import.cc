// The whole server-side import of one uploaded slice (ImportSlice, what POST
// /api/v1/session/upload runs once the body has arrived): extraction, the staged
// episode's parquet and info.json, the conformance checker (videos included), the
// journaled commit and the info.json/stats.json/tasks.jsonl merge. Half the inputs are
// imported twice, so the second import meets a task that already holds the episode
// (identical re-upload or conflict).
// Input: byte 0 (bit 0: import twice; bits 1-3: the form's episode_index, 7 = not sent),
// then the zip. Written to the harness's temp directory; the root is emptied per input.
#include <cstdio>

#include "harness_util.h"
#include "reel/serve.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reel;
  if (size < 1) return 0;
  auto& tmp = fuzz::TempDir::Get();
  tmp.Clean();
  const std::string zip =
      tmp.Write("upload.zip", std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  ImportSliceOptions options;  // small limits: the harness must stay fast and in memory
  options.limits.max_entry_bytes = 4u << 20;
  options.limits.max_total_bytes = 16u << 20;
  options.limits.max_meta_bytes = 1u << 20;
  ImportRequest request;
  request.project = "task";
  const int form = (data[0] >> 1) & 7;
  request.form_episode_index = form == 7 ? -1 : form;
  request.zip_path = zip;
  const std::string root = tmp.path() + "/root";
  ImportOutcome first = ImportSlice(root, request, options);
  if (fuzz::Debug()) fprintf(stderr, "import: %d %s %s\n", first.http_status, first.rule.c_str(), first.message.c_str());
  if ((data[0] & 1) && first.http_status / 100 == 2) {
    ImportOutcome second = ImportSlice(root, request, options);
    if (fuzz::Debug()) fprintf(stderr, "import again: %d %s\n", second.http_status, second.rule.c_str());
  }
  tmp.Clean();
  return 0;
}
