#include "layout/journal.h"

#include <algorithm>
#include <functional>
#include <set>

#include "io/durable_dirs.h"
#include "util/json_util.h"

namespace reel::internal {

namespace {

std::string JournalPath(const std::string& root, int64_t n) {
  return JoinPath(root, n == kTaskChange ? "meta/.commit-task.json" : "meta/.commit-" + std::to_string(n) + ".json");
}

// The renames, then the removals, then an fsync of every directory they changed: the
// targets' first, then, for renames between directories, the sources' and the removals'.
// Each directory holds one of the two entries a rename changes and a power cut keeps only
// what its own fsync made durable, so a source synced before its target could lose the
// file from both (and roll-forward would take the missing source as renamed).
Status ApplyPlan(FileSystem* fs, const std::string& root, const CommitPlan& plan) {
  std::set<std::string> targets, dirs;
  for (const Rename& r : plan.renames) {
    const std::string from = JoinPath(root, r.from), to = JoinPath(root, r.to);
    REEL_ASSIGN_OR_RETURN(FileInfo info, fs->Stat(from));
    if (info.type == FileType::kNotFound) continue;  // already renamed before a crash
    REEL_RETURN_IF_ERROR(CreateDirsDurable(fs, DirName(to)));
    REEL_RETURN_IF_ERROR(fs->Rename(from, to));
    targets.insert(DirName(to));
    dirs.insert(DirName(from));
  }
  for (const std::string& rel : plan.removes) {
    const std::string path = JoinPath(root, rel);
    REEL_ASSIGN_OR_RETURN(FileInfo info, fs->Stat(path));
    if (info.type == FileType::kNotFound) continue;  // already removed before a crash
    REEL_RETURN_IF_ERROR(fs->RemoveFile(path));
    dirs.insert(DirName(path));
  }
  for (const std::string& d : targets) REEL_RETURN_IF_ERROR(fs->SyncDir(d));
  for (const std::string& d : dirs)
    if (!targets.count(d)) REEL_RETURN_IF_ERROR(fs->SyncDir(d));
  return Status::OK();
}

// The task files an episode's commit writes beside its own (the transaction's merge).
bool IsEpisodeCommitTaskFile(const std::string& rel) {
  return rel == "meta/info.json" || rel == "meta/stats.json" || rel == "meta/tasks.jsonl";
}

// An episode journal names only what an episode commit writes: each rename a reel temp
// into its target beside it, each target episode n's file (by the task's templates) or
// a task file, each removal n's file. A journal that names another episode's file (a
// forged .commit-99.json deleting episode 3's data) is refused.
Status CheckEpisodeJournal(const Json& doc, const CommitPlan& plan, int64_t n, const EpisodeFiles& episode_files,
                           const std::function<Status(const std::string&)>& bad) {
  const std::string episode = "episode " + std::to_string(n);
  if (!doc.contains("episode_index") || !doc["episode_index"].is_number_integer() ||
      doc["episode_index"].get<int64_t>() != n)
    return bad("is not " + episode + "'s (its \"episode_index\" is " +
               (doc.contains("episode_index") ? Dump(doc["episode_index"], -1) : std::string("missing")) + ")");
  const auto owned = [&](const std::string& rel) -> Result<bool> {
    if (!episode_files) return true;
    return episode_files(n, rel);
  };
  for (const Rename& r : plan.renames) {
    if (!ReelTempWriter(BaseName(r.from)) || DirName(r.from) != DirName(r.to))
      return bad("renames \"" + r.from + "\", which is not a reel temp beside its target \"" + r.to + "\"");
    REEL_ASSIGN_OR_RETURN(bool mine, owned(r.to));
    if (!mine && !IsEpisodeCommitTaskFile(r.to))
      return bad("writes \"" + r.to + "\", which is neither a file of " + episode + " nor a task file");
  }
  for (const std::string& rel : plan.removes) {
    REEL_ASSIGN_OR_RETURN(bool mine, owned(rel));
    if (!mine) return bad("removes \"" + rel + "\", which is not a file of " + episode);
  }
  return Status::OK();
}

// The plan a journal holds; an error for one that is too large, does not parse (it is
// written atomically, so a torn one cannot exist: it is left for a person to look at),
// names an unsafe path, or (for episode n) names what is not n's (CheckEpisodeJournal).
Result<CommitPlan> ReadJournal(FileSystem* fs, const std::string& path, int64_t n, const EpisodeFiles& episode_files) {
  constexpr uint64_t kMaxJournalBytes = uint64_t{256} << 20;
  REEL_ASSIGN_OR_RETURN(FileInfo info, fs->Stat(path));
  if (info.size > kMaxJournalBytes)
    return Status::Invalid(path + ": interrupted commit journal of " + std::to_string(info.size) +
                           " bytes, over the 256 MiB a journal may hold");
  REEL_ASSIGN_OR_RETURN(std::string text, fs->ReadFile(path));
  REEL_ASSIGN_OR_RETURN(Json doc, ParseJson(text, path));
  CommitPlan plan;
  const auto bad = [&](const std::string& what) {
    return Status::Invalid(path + ": interrupted commit journal " + what + "; left for a person to look at");
  };
  if (!doc.is_object()) return bad("is not a JSON object");
  if (doc.contains("renames")) {
    if (!doc["renames"].is_array()) return bad("has \"renames\" that is not an array");
    for (const Json& r : doc["renames"]) {
      if (!r.is_array() || r.size() != 2 || !r[0].is_string() || !r[1].is_string())
        return bad("has a rename that is not [from, to]");
      plan.renames.push_back({r[0].get<std::string>(), r[1].get<std::string>()});
    }
  }
  if (doc.contains("removes")) {
    if (!doc["removes"].is_array()) return bad("has \"removes\" that is not an array");
    for (const Json& r : doc["removes"]) {
      if (!r.is_string()) return bad("has a removal that is not a path");
      plan.removes.push_back(r.get<std::string>());
    }
  }
  for (const Rename& r : plan.renames)
    if (!IsInsideTaskPath(r.from) || !IsInsideTaskPath(r.to)) return bad("names an unsafe path (" + r.from + " -> " + r.to + ")");
  for (const std::string& r : plan.removes)
    if (!IsInsideTaskPath(r)) return bad("names an unsafe path (" + r + ")");
  if (n != kTaskChange) REEL_RETURN_IF_ERROR(CheckEpisodeJournal(doc, plan, n, episode_files, bad));
  return plan;
}

// Every path of a plan inside the task without a symbolic link on the way (layout/
// confined.h), all checked before the first is touched. `what` names the plan's source.
Status CheckPlanBeneath(FileSystem* fs, const std::string& root, const CommitPlan& plan, const std::string& what) {
  Beneath beneath(fs, root);
  for (const Rename& r : plan.renames) {
    REEL_RETURN_IF_ERROR(beneath.Check(r.from, what));
    REEL_RETURN_IF_ERROR(beneath.Check(r.to, what));
  }
  for (const std::string& rel : plan.removes) REEL_RETURN_IF_ERROR(beneath.Check(rel, what));
  return Status::OK();
}

Status RollForward(FileSystem* fs, const std::string& path, const std::string& root, int64_t n,
                   const EpisodeFiles& episode_files) {
  REEL_ASSIGN_OR_RETURN(CommitPlan plan, ReadJournal(fs, path, n, episode_files));
  REEL_RETURN_IF_ERROR(CheckPlanBeneath(fs, root, plan, path + " (interrupted commit journal, left for a person)"));
  REEL_RETURN_IF_ERROR(ApplyPlan(fs, root, plan));
  REEL_RETURN_IF_ERROR(fs->RemoveFile(path));
  return fs->SyncDir(DirName(path));
}

}  // namespace

std::optional<TempWriter> ReelTempWriter(const std::string& name) {
  const size_t mark = name.rfind(".reel-");
  if (name.empty() || name[0] != '.' || mark == std::string::npos || !name.ends_with(".tmp") ||
      mark + 6 > name.size() - 4)
    return std::nullopt;
  return ReadTempWriter(std::string_view(name).substr(mark + 6, name.size() - 4 - (mark + 6)));
}

Result<bool> IsStaleTemp(FileSystem* fs, const std::string& dir, const std::string& name) {
  const std::optional<TempWriter> writer = ReelTempWriter(name);
  if (!writer) return false;
  int64_t mtime_ns = 0;
  if (NeedsModificationTime(*writer)) {
    REEL_ASSIGN_OR_RETURN(FileInfo info, fs->Stat(JoinPath(dir, name)));
    if (info.type == FileType::kNotFound) return false;  // removed meanwhile: nothing to sweep
    mtime_ns = info.mtime_ns;
  }
  return TempWriterGone(*writer, mtime_ns, UnixNowNs());
}

Status RemoveStaleTempsIn(FileSystem* fs, const std::string& dir) {
  auto entries = fs->ListDir(dir);
  if (!entries.ok()) return entries.status().code() == StatusCode::kNotFound ? Status::OK() : entries.status();
  for (const DirEntry& e : *entries) {
    if (e.type != FileType::kFile) continue;
    REEL_ASSIGN_OR_RETURN(bool stale, IsStaleTemp(fs, dir, e.name));
    if (!stale) continue;
    Status removed = fs->RemoveFile(JoinPath(dir, e.name));
    if (!removed.ok() && removed.code() != StatusCode::kNotFound) return removed;  // gone meanwhile: fine
  }
  return Status::OK();
}

Status CommitWithJournal(FileSystem* fs, const std::string& root, int64_t n, const CommitPlan& plan,
                         bool* decided) {
  *decided = false;
  Json journal = Json::object();
  if (n != kTaskChange) journal["episode_index"] = n;
  journal["renames"] = Json::array();
  for (const Rename& r : plan.renames) journal["renames"].push_back({r.from, r.to});
  if (!plan.removes.empty()) journal["removes"] = plan.removes;
  // Every temp must be durable under its own name before the journal is: a crash after the
  // journal is rolled forward, and roll-forward skips a rename whose source is missing
  // (taken as done), so a temp whose directory entry a power cut dropped would leave the
  // episode without that file. The temps' data was fsynced by their writers.
  std::set<std::string> temp_dirs;
  for (const Rename& r : plan.renames) temp_dirs.insert(DirName(JoinPath(root, r.from)));
  for (const std::string& d : temp_dirs) REEL_RETURN_IF_ERROR(fs->SyncDir(d));
  const std::string path = JournalPath(root, n);
  // Undecided until the journal exists: a plan through a link inside the task fails here,
  // whole, rather than leave a journal that recovery would refuse.
  REEL_RETURN_IF_ERROR(CheckPlanBeneath(fs, root, plan, path + " (the commit being written)"));
  Status written = WriteFileAtomic(fs, path, Dump(journal, -1));
  // The rename happened even when the final directory fsync failed: the journal is there.
  auto present = fs->Stat(path);
  *decided = present.ok() && present->type == FileType::kFile;
  if (!*decided) {
    // Not decided is never OK: the journal written but not seen (its Stat failed, or it is
    // not there) is a failed commit, which the caller aborts. Found by the strict Result:
    // an OK Status here made EpisodeWriter::Commit return a Result that was neither a
    // value nor an error.
    if (!written.ok()) return written;
    if (!present.ok()) return present.status();
    return Status::IOError(path + ": the commit journal is not there after it was written");
  }
  // From here on the commit is decided: a crash is rolled forward, never back.
  REEL_RETURN_IF_ERROR(ApplyPlan(fs, root, plan));
  REEL_RETURN_IF_ERROR(fs->RemoveFile(path));
  Status synced = fs->SyncDir(DirName(path));
  // A journal whose directory fsync failed was still used: report that durability
  // was not confirmed.
  return written.ok() ? synced : written;
}

Status RecoverCommits(FileSystem* fs, const std::string& root, const EpisodeFiles& episode_files) {
  // Episodes' commits first: a task change (a maintenance tool) runs under the task lock,
  // after any episode commit it found was rolled forward.
  REEL_ASSIGN_OR_RETURN(std::vector<int64_t> journals, CommitJournals(fs, root));
  for (int64_t n : journals) REEL_RETURN_IF_ERROR(RollForward(fs, JournalPath(root, n), root, n, episode_files));
  const std::string task_change = JournalPath(root, kTaskChange);
  REEL_ASSIGN_OR_RETURN(FileInfo info, fs->Stat(task_change));
  if (info.type == FileType::kNotFound) return Status::OK();
  return RollForward(fs, task_change, root, kTaskChange, episode_files);
}

namespace {

// N of "<prefix><N>.json" in meta/, for each such entry. N is written as reel writes it
// (std::to_string: no leading zero): ".commit-01.json" is no journal of reel's. Read as N = 1,
// it hid episode 1 while recovery looked for ".commit-1.json" and failed on every lock.
std::vector<int64_t> JournalNumbers(const std::vector<DirEntry>& entries, std::string_view prefix) {
  std::vector<int64_t> out;
  for (const DirEntry& e : entries) {
    if (!e.name.starts_with(prefix) || !e.name.ends_with(".json")) continue;
    const std::string digits = e.name.substr(prefix.size(), e.name.size() - prefix.size() - 5);
    if (!digits.empty() && digits.size() <= 18 && digits.find_first_not_of("0123456789") == std::string::npos &&
        (digits.size() == 1 || digits[0] != '0'))
      out.push_back(std::stoll(digits));
  }
  return out;
}

// The entries of meta/: none when it does not exist (a task not yet written), an error for
// any other failure to list it (EIO, EACCES), which must not read as "no journal".
Result<std::vector<DirEntry>> MetaEntries(FileSystem* fs, const std::string& root) {
  auto entries = fs->ListDir(JoinPath(root, "meta"));
  if (!entries.ok() && entries.status().code() == StatusCode::kNotFound) return std::vector<DirEntry>{};
  return entries;
}

}  // namespace

Result<std::vector<int64_t>> CommitJournals(FileSystem* fs, const std::string& root) {
  REEL_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, MetaEntries(fs, root));
  return JournalNumbers(entries, ".commit-");
}

Result<std::vector<int64_t>> PushJournals(FileSystem* fs, const std::string& root) {
  REEL_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, MetaEntries(fs, root));
  return JournalNumbers(entries, kPushJournalPrefix);
}

std::string ChangeJournalPath(const std::string& root) {
  return JoinPath(root, "meta/" + std::string(kPushJournalPrefix) + "change.json");
}

namespace {

// The episodes of a staged change past its commit point (its change journal whole): every
// file of theirs was sent before the journal was written, so they are shown although their
// own journals are still being deleted one by one (an object store deletes no two objects
// at once). A torn or foreign change journal names none: the change never committed. One
// gone since meta/ was listed names none either (its episodes' journals went before it, so
// hiding them for this listing is the old state); any other error reading it is returned.
Result<std::set<int64_t>> CommittedChange(FileSystem* fs, const std::string& root) {
  std::set<int64_t> out;
  constexpr int64_t kMaxChangeJournalBytes = int64_t{256} << 20;  // as recovery reads it
  const std::string path = ChangeJournalPath(root);
  // Bounded before it is read: its bytes come from the store.
  REEL_ASSIGN_OR_RETURN(FileInfo info, fs->Stat(path));
  if (info.type != FileType::kFile || info.size > static_cast<uint64_t>(kMaxChangeJournalBytes)) return out;
  auto text = fs->ReadFile(path);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) return out;
    return text.status();
  }
  auto doc = ParseJson(*text, path, {.max_bytes = kMaxChangeJournalBytes, .max_depth = 4});
  if (!doc.ok() || !doc->is_object() || !doc->contains("episodes") || !(*doc)["episodes"].is_array()) return out;
  for (const Json& n : (*doc)["episodes"])
    if (n.is_number_integer()) out.insert(n.get<int64_t>());
  return out;
}

}  // namespace

Result<std::vector<int64_t>> PendingCommits(FileSystem* fs, const std::string& root) {
  REEL_ASSIGN_OR_RETURN(const std::vector<DirEntry> entries, MetaEntries(fs, root));
  std::vector<int64_t> out = JournalNumbers(entries, ".commit-");
  std::vector<int64_t> pushes = JournalNumbers(entries, kPushJournalPrefix);
  const bool changing = std::any_of(entries.begin(), entries.end(),
                                    [](const DirEntry& e) { return e.name == ".push-change.json"; });
  std::set<int64_t> committed;
  if (changing) {
    REEL_ASSIGN_OR_RETURN(committed, CommittedChange(fs, root));
  }
  for (int64_t n : pushes)
    if (!committed.count(n)) out.push_back(n);
  return out;
}

std::string PushJournalPath(const std::string& root, int64_t episode_index) {
  return JoinPath(root, "meta/" + std::string(kPushJournalPrefix) + std::to_string(episode_index) + ".json");
}

}  // namespace reel::internal
