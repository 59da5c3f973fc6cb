// info.json path templates: PathTemplate::Parse, Render, Match and Glob.
// Input: <template> SEP <a relative path to match> SEP <newline-separated file names>.
#include "harness_util.h"
#include "reel/layout.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reel;
  auto parts = fuzz::SplitParts(data, size, 3);
  auto tmpl = PathTemplate::Parse(std::string(parts[0]));
  if (!tmpl.ok()) return 0;
  PathVars vars;
  vars.chunk = 3;
  vars.file = 999;
  vars.episode_index = 4000;
  vars.image_key = "observation.images.wrist";
  vars.ext = "mkv";
  auto rendered = tmpl->Render(vars);
  if (rendered.ok()) (void)tmpl->Match(*rendered);
  (void)tmpl->Render(PathVars{});
  (void)tmpl->Match(std::string(parts[1]));

  static fuzz::MemFs fs;
  fs.Clear();
  std::string_view names = parts[2];
  for (int i = 0; i < 64 && !names.empty(); ++i) {
    size_t nl = names.find('\n');
    std::string_view name = names.substr(0, nl);
    if (!name.empty() && name.size() < 512) fs.Put("/mem/task/" + std::string(name), "x");
    if (nl == std::string_view::npos) break;
    names.remove_prefix(nl + 1);
  }
  (void)tmpl->Glob(&fs, "/mem/task");
  PathVars fixed;
  fixed.chunk = 0;
  (void)tmpl->Glob(&fs, "/mem/task", fixed);
  return 0;
}
