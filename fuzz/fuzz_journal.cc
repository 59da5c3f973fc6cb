// Commit, push and change journals (src/reel/layout/journal.cc) read back from a task:
// meta/.commit-<N>.json and meta/.commit-task.json, which RecoverCommits rolls forward
// (renames, then removals, of paths the journal names), meta/.push-<N>.json and
// meta/.push-change.json, which PendingCommits reads to hide episodes. A journal is a file
// like any other and may come from elsewhere (a copied or synced task).
//
// Input: a packed tree (fuzz/make_seeds.py "tree" format) written over a fixed task on
// disk, in the harness's temp directory: <tmp>/task holds a few episode files and temps
// (kSkeleton below) and <tmp>/outside/canary sits beside it. Per input: PendingCommits,
// CommitJournals and PushJournals (must write nothing), then RecoverCommits twice, with the
// ownership callback a writer passes (TaskLock::Acquire: an episode's journal names only that
// episode's files by the task's templates; here the default templates of reel/metadata.h).
// Checked: nothing outside <tmp>/task is created, changed or removed; the read-only calls
// change nothing; each episode number CommitJournals reports has its journal under the name
// recovery opens; no file of an episode without a journal is changed or removed (a journal
// for N touches only N's files, issue 27); after a successful recovery no commit journal is
// left (unless the journal itself renamed a file to a journal's name).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "harness_util.h"
#include "layout/confined.h"
#include "layout/journal.h"
#include "reel/metadata.h"

namespace {

using namespace reel;

// Files of the fixed task (relative path, bytes): what seeds' journals name.
const std::pair<const char*, const char*> kSkeleton[] = {
    {"meta/info.json", "{}"},
    {"meta/tasks.jsonl", "{\"task_index\": 0, \"task\": \"t\"}\n"},
    {"meta/.info.json.commit.reel-1-1.tmp", "{\"new\": 1}"},
    {"data/chunk-000/episode-000.parquet", "D1"},
    {"data/chunk-000/.episode-001.parquet.commit.reel-1-2.tmp", "D2"},
    {"meta/episodes/chunk-000/.episode-001.parquet.commit.reel-1-3.tmp", "R2"},
    {"videos/chunk-000/cam/.episode-001.mp4.commit.reel-1-4.tmp", "V2"},
    {"videos/chunk-000/cam/episode-000.mp4", "V1"},
};

// Episode numbers, whether the call returns them or (a later signature) a Result of them.
template <typename T>
std::vector<int64_t> Numbers(const T& r) {
  if constexpr (requires { r.ok(); }) {
    return r.ok() ? *r : std::vector<int64_t>{};
  } else {
    return r;
  }
}

void Fail(const std::string& what) {
  fprintf(stderr, "journal: %s\n", what.c_str());
  std::abort();
}

// The first difference between two snapshots, "" when equal.
std::string Difference(const std::map<std::string, std::string>& a, const std::map<std::string, std::string>& b) {
  for (const auto& [path, bytes] : a) {
    auto it = b.find(path);
    if (it == b.end()) return path + " is gone";
    if (it->second != bytes) return path + " changed";
  }
  for (const auto& [path, bytes] : b)
    if (!a.count(path)) return path + " appeared";
  return "";
}

// The episode `rel` belongs to by the default templates, else 0 (a task file or another).
int64_t EpisodeOf(const std::string& rel) {
  const InfoJson defaults;
  if (!rel.ends_with(".parquet") && !rel.ends_with(".mp4") && !rel.ends_with(".mkv")) return 0;
  for (int64_t n = 1; n <= 4; ++n)  // the skeleton's and the seeds' episodes
    for (const std::string& tmpl : {defaults.data_path, defaults.video_path, defaults.episodes_path})
      if (internal::TemplateNamesEpisode(tmpl, rel, n, defaults.chunks_size)) return n;
  return 0;
}

bool RenamesToAJournal(const std::map<std::string, std::string>& journals) {
  for (const auto& [name, text] : journals)
    if (text.find("meta/.commit-") != std::string::npos) return true;
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  auto& tmp = fuzz::TempDir::Get();
  tmp.Clean();
  const std::string base = tmp.path();
  const std::string root = base + "/task";
  for (const auto& [rel, bytes] : kSkeleton) {
    fs::create_directories(fs::path(root + "/" + rel).parent_path());
    std::ofstream(root + "/" + rel, std::ios::binary) << bytes;
  }
  fs::create_directories(base + "/outside");
  std::ofstream(base + "/outside/canary", std::ios::binary) << "canary";
  fuzz::UnpackTreeToDisk(data, size, root);
  const auto outside_before = fuzz::Snapshot(base + "/outside");
  const auto task_before = fuzz::Snapshot(root);

  FileSystem* disk = DefaultFileSystem();
  const std::vector<int64_t> pending = Numbers(internal::PendingCommits(disk, root));
  const std::vector<int64_t> commits = Numbers(internal::CommitJournals(disk, root));
  (void)Numbers(internal::PushJournals(disk, root));
  if (std::string d = Difference(task_before, fuzz::Snapshot(root)); !d.empty())
    Fail("PendingCommits / CommitJournals / PushJournals wrote to the task: " + d);
  // Every number reported is a journal recovery can open by its name.
  for (int64_t n : commits)
    if (!fs::exists(root + "/meta/.commit-" + std::to_string(n) + ".json"))
      Fail("CommitJournals reports " + std::to_string(n) + " but meta/.commit-" + std::to_string(n) + ".json is not there");

  std::map<std::string, std::string> journals;
  for (const auto& [path, bytes] : task_before)
    if (path.starts_with("meta/.commit-")) journals[path] = bytes;
  const InfoJson defaults;
  const internal::EpisodeFiles owned = [&](int64_t n, const std::string& rel) -> Result<bool> {
    return internal::TemplateNamesEpisode(defaults.data_path, rel, n, defaults.chunks_size) ||
           internal::TemplateNamesEpisode(defaults.video_path, rel, n, defaults.chunks_size) ||
           internal::TemplateNamesEpisode(defaults.episodes_path, rel, n, defaults.chunks_size);
  };
  Status first = internal::RecoverCommits(disk, root, owned);
  Status second = internal::RecoverCommits(disk, root, owned);
  if (fuzz::Debug())
    fprintf(stderr, "journal: %zu pending, %zu commit journals; recover: %s; again: %s\n", pending.size(), commits.size(),
            first.ToString().c_str(), second.ToString().c_str());

  if (std::string d = Difference(outside_before, fuzz::Snapshot(base + "/outside")); !d.empty())
    Fail("recovery touched a file outside the task: outside/" + d);
  for (const auto& entry : fs::directory_iterator(base))
    if (entry.path().filename() != "task" && entry.path().filename() != "outside")
      Fail("recovery created " + entry.path().string() + " outside the task");
  // Ownership: an episode whose number no journal carries keeps every file as it was.
  const auto task_after = fuzz::Snapshot(root);
  const bool task_change = journals.count("meta/.commit-task.json") > 0;  // may name any task file
  for (const auto& [path, bytes] : task_change ? decltype(task_before){} : task_before) {
    const int64_t n = EpisodeOf(path);
    if (n == 0 || journals.count("meta/.commit-" + std::to_string(n) + ".json")) continue;
    auto it = task_after.find(path);
    if (it == task_after.end() || it->second != bytes)
      Fail("recovery changed " + path + " of episode " + std::to_string(n) + ", which has no journal");
  }
  if (first.ok() && !RenamesToAJournal(journals)) {
    if (!Numbers(internal::CommitJournals(disk, root)).empty()) Fail("a commit journal is left after a recovery that succeeded");
    if (fs::exists(root + "/meta/.commit-task.json")) Fail("meta/.commit-task.json is left after a recovery that succeeded");
    if (!second.ok()) Fail("a second recovery fails after one that succeeded: " + second.ToString());
  }
  tmp.Clean();
  return 0;
}
