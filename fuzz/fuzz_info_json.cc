// meta/info.json: ParseInfoJson, the path templates it declares, SerializeInfoJson (its
// output must parse again), DetectFormat over a directory holding it.
#include <cstdlib>

#include "harness_util.h"
#include "reel/layout.h"
#include "reel/metadata.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reel;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto info = ParseInfoJson(text, "meta/info.json");
  if (info.ok()) {
    for (const auto& [name, feature] : info->features) (void)feature.ElementCount();
    PathVars vars;
    vars.chunk = 0;
    vars.file = 0;
    vars.episode_index = 1;
    vars.image_key = "observation.images.cam";
    vars.ext = "mp4";
    for (const std::string* t : {&info->data_path, &info->video_path, &info->episodes_path}) {
      auto tmpl = PathTemplate::Parse(*t);
      if (tmpl.ok()) {
        auto rendered = tmpl->Render(vars);
        if (rendered.ok()) (void)tmpl->Match(*rendered);
      }
    }
    auto again = SerializeInfoJson(*info);
    if (again.ok()) {
      auto reparsed = ParseInfoJson(*again, "meta/info.json (serialized)");
      if (!reparsed.ok()) {
        fprintf(stderr, "SerializeInfoJson wrote what ParseInfoJson refuses: %s\n",
                reparsed.status().ToString().c_str());
        std::abort();
      }
    }
  }
  static fuzz::MemFs fs;
  fs.Clear();
  fs.Put("/mem/task/meta/info.json", text);
  (void)DetectFormat(&fs, "/mem/task");
  return 0;
}
