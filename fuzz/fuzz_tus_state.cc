// The resumable-upload state the import server reads back from its spool (src/reel/serve/
// spool.cc, tus 1.0.0): <id>.json (what the upload is for: length, name, project, form
// episode index, principal), <id>.part (its size is the offset) and <id>.result.json (the
// stored answer of a finished import). The spool is server scratch space, but it survives
// restarts and may be left by another version.
// Input: three parts (kPartSeparator): <id>.json, <id>.result.json, <id>.part; an empty
// part leaves that file out. Read through an in-memory file system. Per input: Spool::Get
// (the HEAD/PATCH/import handlers' first step), LoadResult, and Get of malformed ids.
// Checked: a state read back has the id asked for and an offset that is the part's size
// (or, the part gone, its length).
#include <cstdio>
#include <cstdlib>

#include "harness_util.h"
#include "serve/spool.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reel;
  static const std::string kId = "0123456789abcdef0123456789abcdef";
  const std::string dir = "/mem/spool";
  const auto parts = fuzz::SplitParts(data, size, 3);
  static fuzz::MemFs fs;
  fs.Clear();
  fs.Put(dir + "/.keep", "");
  if (!parts[0].empty()) fs.Put(dir + "/" + kId + ".json", parts[0]);
  if (!parts[1].empty()) fs.Put(dir + "/" + kId + ".result.json", parts[1]);
  if (!parts[2].empty()) fs.Put(dir + "/" + kId + ".part", parts[2].substr(1));  // "\x00": an empty part file
  serve::Spool spool(dir, &fs);
  auto up = spool.Get(kId);
  if (fuzz::Debug()) fprintf(stderr, "tus_state: %s\n", up.status().ToString().c_str());
  if (up.ok()) {
    const uint64_t expected = parts[2].empty() ? up->length : parts[2].size() - 1;
    if (up->id != kId || up->offset != expected) {
      fprintf(stderr, "tus_state: upload %s read back with offset %llu, expected %llu\n", up->id.c_str(),
              static_cast<unsigned long long>(up->offset), static_cast<unsigned long long>(expected));
      std::abort();
    }
  }
  (void)spool.LoadResult(kId);
  for (const char* id : {"", "0123456789ABCDEF0123456789ABCDEF", "../0123456789abcdef0123456789abc"}) {
    if (spool.Get(id).ok()) {
      fprintf(stderr, "tus_state: a malformed id \"%s\" was found\n", id);
      std::abort();
    }
  }
  return 0;
}
