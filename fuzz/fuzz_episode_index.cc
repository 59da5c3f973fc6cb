// The episode index (src/reel/read/episode_index.cc): meta/.episode_index.parquet (rows and
// data schemas remembered per episode, with the size and mtime of the files they came from)
// and meta/.episode_index.listing.parquet (directory listings by directory mtime). It is a
// cache read back from the task, so its bytes are outside input: a damaged or foreign
// index must cost reads, never a crash.
//
// The task is fixed (PutSmallTask: 34 episodes, since the index is used for batches of 32
// or more; every file and directory stamped with one old mtime, so that what reel stats is
// "settled" and a seed can match it). Input: two parts (kPartSeparator): the episode index
// file, then the listing file; an empty part leaves that file out. Per input:
//   1. EpisodeIndex::Load; Row and DataSchema of N = 1..34 (and a few other N) with the
//      fixed task's stamps; one row put; SaveIfChanged (every loaded row and schema decoded
//      and written again); Load of what was written. Checked: it remembers as many
//      episodes and listings as the index it was written from.
//   2. Only when the index loaded something (a file refused as a whole leaves the task
//      read as without an index, which fuzz_task covers), as reel uses it: Task::Open
//      (index kUpdate), ListEpisodes, ReadEpisodeRows and ReadDataSchemas of every episode,
//      then the same with kRead over what that wrote. Checked: both list the same episodes
//      with the same files (the listings written are the ones answered from).
//
// Seeds: REEL_FUZZ_WRITE_SEEDS=<dir> fuzz_episode_index -runs=1 <empty dir> writes the index
// reel itself builds for the fixed task (whole, index only, listing only) into <dir>.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>

#include "harness_util.h"
#include "read/episode_index.h"
#include "reel/layout.h"
#include "reel/task.h"

namespace {

using namespace reel;

constexpr const char* kRoot = "/mem/task";
constexpr const char* kIndex = "/mem/task/meta/.episode_index.parquet";
constexpr const char* kListing = "/mem/task/meta/.episode_index.listing.parquet";
constexpr int kEpisodes = 34;
constexpr int64_t kMtimeNs = int64_t{1600000000} * 1000000000;  // 2020: settled

const fuzz::MemFs& BaseTask() {
  static const fuzz::MemFs* base = [] {
    auto* fs = new fuzz::MemFs;
    fs->set_writable(true);
    fuzz::PutSmallTask(*fs, kRoot, kEpisodes, 3);
    fs->set_mtime_ns(kMtimeNs);
    return fs;
  }();
  return *base;
}

// The listing a pass answered: N, data path, row path, videos.
std::vector<std::string> OnePass(fuzz::MemFs& fs, EpisodeIndexMode mode) {
  TaskOptions options;
  options.fs = &fs;
  options.io_threads = 1;
  options.episode_index = mode;
  std::vector<std::string> listed;
  auto task = Task::Open(kRoot, options);
  if (!task.ok()) return {"open: " + task.status().ToString()};
  auto episodes = (*task)->ListEpisodes();
  if (!episodes.ok()) return {"list: " + episodes.status().ToString()};
  for (const EpisodeEntry& e : *episodes) {
    std::string line = std::to_string(e.episode_index) + " " + e.data_path + " " + e.row_path;
    for (const auto& [key, path] : e.videos) line += " " + key + "=" + path;
    listed.push_back(std::move(line));
  }
  auto rows = (*task)->ReadEpisodeRows(*episodes);
  auto schemas = (*task)->ReadDataSchemas(*episodes);
  if (fuzz::Debug()) {
    int row_ok = 0, schema_ok = 0;
    for (const auto& r : rows) row_ok += r.ok();
    for (const auto& s : schemas) schema_ok += s.ok();
    fprintf(stderr, "episode_index: %zu episodes, %d rows, %d schemas\n", episodes->size(), row_ok, schema_ok);
  }
  for (const auto& r : rows)
    if (r.ok()) (void)r->HasColumn("calibration");
  if (!episodes->empty()) (void)(*task)->FindEpisode(episodes->back().episode_index);
  return listed;
}

void WriteSeeds(const char* dir) {
  fuzz::MemFs fs = BaseTask();
  fs.set_writable(true);
  OnePass(fs, EpisodeIndexMode::kUpdate);
  const std::string* index = fs.Get(kIndex);
  const std::string* listing = fs.Get(kListing);
  if (!index || !listing) {
    fprintf(stderr, "episode_index: reel wrote no index for the fixed task\n");
    std::abort();
  }
  const std::string sep(fuzz::kPartSeparator);
  const std::pair<const char*, std::string> seeds[] = {
      {"reel-index-and-listing", *index + sep + *listing}, {"reel-index-only", *index}, {"reel-listing-only", sep + *listing}};
  for (const auto& [name, bytes] : seeds) std::ofstream(std::string(dir) + "/" + name, std::ios::binary) << bytes;
  fprintf(stderr, "episode_index: seeds written to %s\n", dir);
}

// The fixed task's stamp of its file `relative`.
internal::FileStamp StampOf(const fuzz::MemFs& fs, const std::string& relative) {
  const std::string* bytes = fs.Get(std::string(kRoot) + "/" + relative);
  return internal::FileStamp{relative, bytes ? bytes->size() : 0, kMtimeNs, true};
}

// Step 1; returns whether the index loaded anything.
bool UseIndexDirectly(fuzz::MemFs& fs) {
  auto index = internal::EpisodeIndex::Load(&fs, kRoot);
  const size_t episodes = index->size(), listings = index->listings();
  if (episodes == 0 && listings == 0) return false;
  const InfoJson defaults;
  const auto data_template = *PathTemplate::Parse(defaults.data_path);
  const auto row_template = *PathTemplate::Parse(defaults.episodes_path);
  std::optional<EpisodeRow> any;
  for (int64_t n : {int64_t{0}, int64_t{-1}, std::numeric_limits<int64_t>::max()}) (void)index->Row(n, StampOf(fs, ""));
  for (int64_t n = 1; n <= kEpisodes; ++n) {
    const EpisodeLocation loc = LocateEpisode(n, defaults.chunks_size);
    const PathVars vars{loc.chunk, loc.file, n, std::nullopt, std::nullopt};
    const internal::FileStamp row = StampOf(fs, *row_template.Render(vars));
    if (auto r = index->Row(n, row)) any = *r;
    (void)index->DataSchema(n, StampOf(fs, *data_template.Render(vars)));
  }
  // One episode read again: the index is then rewritten with every row it loaded.
  const EpisodeLocation loc = LocateEpisode(1, defaults.chunks_size);
  index->PutRow(1, StampOf(fs, *row_template.Render(PathVars{loc.chunk, loc.file, 1, std::nullopt, std::nullopt})),
                any.value_or(EpisodeRow{}));
  const size_t remembered = index->size();
  if (!index->SaveIfChanged(&fs, kRoot).ok()) return true;
  auto again = internal::EpisodeIndex::Load(&fs, kRoot);
  if (again->size() != remembered || again->listings() != listings) {
    fprintf(stderr, "episode_index: written with %zu episodes and %zu listings, read back with %zu and %zu\n",
            remembered, listings, again->size(), again->listings());
    std::abort();
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (const char* dir = getenv("REEL_FUZZ_WRITE_SEEDS")) {
    static bool written = false;
    if (!written) WriteSeeds(dir);
    written = true;
  }
  const auto parts = fuzz::SplitParts(data, size, 2);
  static fuzz::MemFs fs;
  const auto reset = [&] {
    fs = BaseTask();
    fs.set_writable(true);  // the index is rewritten like on disk
    if (!parts[0].empty()) fs.Put(kIndex, parts[0]);
    if (!parts[1].empty()) fs.Put(kListing, parts[1]);
  };
  reset();
  if (!UseIndexDirectly(fs)) return 0;
  reset();
  const std::vector<std::string> first = OnePass(fs, EpisodeIndexMode::kUpdate);
  const std::vector<std::string> second = OnePass(fs, EpisodeIndexMode::kRead);
  if (first != second) {
    fprintf(stderr, "episode_index: the index reel rewrote lists other episodes (%zu vs %zu)\n", first.size(),
            second.size());
    for (size_t i = 0; i < std::max(first.size(), second.size()); ++i)
      fprintf(stderr, "  %s | %s\n", i < first.size() ? first[i].c_str() : "-", i < second.size() ? second[i].c_str() : "-");
    std::abort();
  }
  return 0;
}
