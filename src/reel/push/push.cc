// PushTask (reel/push.h): the object-storage publishing protocol of docs/storage.md.
#include "reel/push.h"

#include <algorithm>
#include <array>
#include <optional>
#include <set>

#include "io/copy_file.h"
#include "io/durable_dirs.h"
#include "io/same_bytes.h"
#include "layout/confined.h"
#include "layout/journal.h"
#include "push/push_internal.h"
#include "reel/task.h"
#include "util/json_util.h"
#include "util/time_util.h"

namespace reel {
namespace {

using internal::Json;
using internal::PushLock;

// The task files, in the order a push replaces them (contract §3-§5).
constexpr std::array<const char*, 3> kTaskFiles = {"meta/tasks.jsonl", "meta/info.json", "meta/stats.json"};

bool IsTaskFile(const std::string& rel) {
  return std::find(kTaskFiles.begin(), kTaskFiles.end(), rel) != kTaskFiles.end();
}

// ---- the plan ------------------------------------------------------------------------------

struct Pusher {
  const std::string& task_root;
  FileSystem* local;
  FileSystem* dest;
  const std::string& dest_root;
  const PushOptions& options;
  bool staged;  // journals say "staged": a staged change's new episodes (ChangeStoredTask)
  PushReport report;
  // A link inside the source task would send bytes from outside it (issue 27: a task's
  // files are its own): each file sent is checked beneath the task root first.
  internal::Beneath beneath{local, task_root};

  // True when the destination holds `rel` whole: same size (and bytes with verify).
  Result<bool> Present(const std::string& rel) {
    if (options.verify) return internal::SameBytesAcross(local, JoinPath(task_root, rel), dest, JoinPath(dest_root, rel));
    REEL_ASSIGN_OR_RETURN(FileInfo there, dest->Stat(JoinPath(dest_root, rel)));
    if (there.type != FileType::kFile) return false;
    REEL_ASSIGN_OR_RETURN(FileInfo here, local->Stat(JoinPath(task_root, rel)));
    return here.size == there.size;
  }

  // Copies `rel` to the destination. A task file (or a legacy shard) replaces a file that
  // readers use, so it goes whole, old or new, even on a disk (internal::ReplaceFileAcross);
  // an episode's files are new names, hidden by their journal until it goes.
  Status Send(const std::string& rel, bool replaces = false) {
    REEL_RETURN_IF_ERROR(beneath.Check(rel, task_root + " (push)"));
    ++report.files_sent;
    if (options.dry_run) return Status::OK();
    const auto copy = replaces ? internal::ReplaceFileAcross : internal::CopyFileAcross;
    REEL_ASSIGN_OR_RETURN(uint64_t bytes, copy(local, JoinPath(task_root, rel), dest, JoinPath(dest_root, rel)));
    report.bytes_sent += static_cast<int64_t>(bytes);
    return Status::OK();
  }

  // Episode N's own files in publishing order: videos, data, then the episodes row (a
  // legacy shard serves several episodes and goes with the task files).
  static std::vector<std::string> EpisodeFiles(const EpisodeEntry& e) {
    std::vector<std::string> files;
    for (const auto& [slot, path] : e.videos) files.push_back(path);
    if (!e.data_path.empty()) files.push_back(e.data_path);
    if (e.row_source == RowSource::kEpisodeFile) files.push_back(e.row_path);
    return files;
  }

  // Every file the push may send, checked beneath the task root before anything is sent.
  Status CheckSources(const std::vector<EpisodeEntry>& episodes) {
    for (const EpisodeEntry& e : episodes) {
      for (const std::string& rel : EpisodeFiles(e)) REEL_RETURN_IF_ERROR(beneath.Check(rel, task_root + " (push)"));
      if (e.row_source == RowSource::kLegacyShard) REEL_RETURN_IF_ERROR(beneath.Check(e.row_path, task_root + " (push)"));
    }
    for (const char* rel : kTaskFiles) REEL_RETURN_IF_ERROR(beneath.Check(rel, task_root + " (push)"));
    return Status::OK();
  }

  // Sends what N lacks at the destination under N's journal. The journal is deleted after
  // (N is published), unless `hold`: a staged change publishes its episodes together.
  Status PushEpisode(const EpisodeEntry& e, const std::set<int64_t>& interrupted, bool hold) {
    const std::vector<std::string> files = EpisodeFiles(e);
    std::vector<std::string> missing;
    for (const std::string& rel : files) {
      REEL_ASSIGN_OR_RETURN(bool present, Present(rel));
      if (!present) missing.push_back(rel);
    }
    const bool resumed = interrupted.count(e.episode_index) > 0;
    if (missing.empty() && !resumed) {
      ++report.present;
      return Status::OK();
    }
    report.sent.push_back(e.episode_index);
    if (resumed) report.resumed.push_back(e.episode_index);
    if (options.dry_run) {
      report.files_sent += static_cast<int64_t>(missing.size());
      return Status::OK();
    }
    // The journal first: from here until it is deleted, readers hide N. On a disk (a
    // destination with directories) each step is made durable before the next, so a power
    // cut cannot keep a later step without an earlier one: the journal before any file,
    // every file (its data and its name, in directories whose own names are durable)
    // before the journal goes, and the journal's removal before the push says it is done.
    // An object store's writes are durable when they return; its SyncDir does nothing.
    const std::string journal = internal::PushJournalPath(dest_root, e.episode_index);
    Json doc = {{"episode_index", e.episode_index}, {"files", files}, {"written_at", internal::UnixNow()}};
    if (staged) doc["staged"] = true;
    REEL_RETURN_IF_ERROR(WriteFileSynced(dest, journal, internal::Dump(doc, -1)));
    REEL_RETURN_IF_ERROR(dest->SyncDir(DirName(journal)));
    std::set<std::string> dirs;
    for (const std::string& rel : missing) {
      const std::string dir = DirName(JoinPath(dest_root, rel));
      if (dirs.insert(dir).second) REEL_RETURN_IF_ERROR(internal::CreateDirsDurable(dest, dir));
      REEL_RETURN_IF_ERROR(Send(rel));
    }
    for (const std::string& dir : dirs) REEL_RETURN_IF_ERROR(dest->SyncDir(dir));
    if (hold) return Status::OK();
    REEL_RETURN_IF_ERROR(dest->RemoveFile(journal));
    return dest->SyncDir(DirName(journal));
  }

  // Those that differ at the destination of: the legacy shards holding the episodes' rows
  // (with `shards`), then tasks.jsonl, info.json, stats.json (with `task_files`).
  Result<std::vector<std::string>> ChangedTaskFiles(const std::vector<EpisodeEntry>& episodes, bool shards,
                                                    bool task_files) {
    std::set<std::string> shard_paths;
    for (const EpisodeEntry& e : episodes)
      if (shards && e.row_source == RowSource::kLegacyShard) shard_paths.insert(e.row_path);
    std::vector<std::string> files(shard_paths.begin(), shard_paths.end());
    for (const char* rel : kTaskFiles) {
      if (!task_files) break;
      REEL_ASSIGN_OR_RETURN(FileInfo st, local->Stat(JoinPath(task_root, rel)));
      if (st.type == FileType::kFile) files.push_back(rel);
    }
    std::vector<std::string> changed;
    for (const std::string& rel : files) {
      REEL_ASSIGN_OR_RETURN(bool same,
                            internal::SameBytesAcross(local, JoinPath(task_root, rel), dest, JoinPath(dest_root, rel)));
      if (!same) changed.push_back(rel);
    }
    return changed;
  }

  // Each task file that differs, replaced whole (old or new at every moment), then its
  // directory synced (on a disk).
  Status PushTaskFiles(const std::vector<EpisodeEntry>& episodes, bool shards, bool task_files) {
    REEL_ASSIGN_OR_RETURN(std::vector<std::string> changed, ChangedTaskFiles(episodes, shards, task_files));
    std::set<std::string> dirs;
    for (const std::string& rel : changed) {
      report.task_files_sent.push_back(rel);
      const std::string dir = DirName(JoinPath(dest_root, rel));
      if (dirs.insert(dir).second) REEL_RETURN_IF_ERROR(internal::CreateDirsDurable(dest, dir));
      REEL_RETURN_IF_ERROR(Send(rel, /*replaces=*/true));
    }
    for (const std::string& dir : dirs) REEL_RETURN_IF_ERROR(dest->SyncDir(dir));
    return Status::OK();
  }

  // A staged change's commit, after its episodes were sent hidden under their journals:
  // the change journal records the new task files (the commit point: from here a later
  // writer rolls the change forward, before it the episodes are rolled back), the task
  // files are written, the episodes' journals deleted (they appear together, with task
  // files that already count them), and the change journal last.
  Status CommitStaged(const std::vector<EpisodeEntry>& episodes) {
    REEL_ASSIGN_OR_RETURN(std::vector<std::string> changed, ChangedTaskFiles(episodes, true, true));
    Json files = Json::object();
    for (const std::string& rel : changed) {
      REEL_ASSIGN_OR_RETURN(std::string text, local->ReadFile(JoinPath(task_root, rel)));
      files[rel] = std::move(text);
    }
    Json numbers = Json::array();
    for (int64_t n : report.sent) numbers.push_back(n);
    const std::string journal = internal::ChangeJournalPath(dest_root);
    Json doc = {{"episodes", numbers}, {"files", files}, {"written_at", internal::UnixNow()}};
    REEL_RETURN_IF_ERROR(WriteFileSynced(dest, journal, internal::Dump(doc, -1)));
    REEL_RETURN_IF_ERROR(dest->SyncDir(DirName(journal)));  // the commit point, durable on a disk
    REEL_RETURN_IF_ERROR(PushTaskFiles(episodes, /*shards=*/true, /*task_files=*/true));
    for (int64_t n : report.sent) REEL_RETURN_IF_ERROR(dest->RemoveFile(internal::PushJournalPath(dest_root, n)));
    REEL_RETURN_IF_ERROR(dest->RemoveFile(journal));
    return dest->SyncDir(DirName(journal));
  }
};

// A killed push's task-file temps on a disk destination (".<name>.replace.reel-<writer>.tmp"
// in meta/ and meta/episodes/, internal::ReplaceFileAcross) go once their writer is gone.
// Readers never see dotfiles; this frees the space. An object store gets no such temp
// (files are written in place there), so it is not listed.
Status RemoveStaleReplaceTemps(FileSystem* dest, const std::string& root) {
  if (!dest->Capabilities().atomic_rename) return Status::OK();
  REEL_RETURN_IF_ERROR(internal::RemoveStaleTempsIn(dest, JoinPath(root, "meta")));
  return internal::RemoveStaleTempsIn(dest, JoinPath(root, "meta/episodes"));
}

// The episodes to push: those `wanted` names (NotFound for one the task lacks), or every
// one when `wanted` is empty and `empty_is_all`.
Result<std::vector<EpisodeEntry>> Selected(std::vector<EpisodeEntry> all, const std::vector<int64_t>& wanted,
                                          bool empty_is_all, const std::string& task_root) {
  if (wanted.empty() && empty_is_all) return all;
  std::set<int64_t> left(wanted.begin(), wanted.end());
  std::vector<EpisodeEntry> out;
  for (EpisodeEntry& e : all)
    if (left.erase(e.episode_index)) out.push_back(std::move(e));
  if (!left.empty())
    return Status::NotFound(task_root + ": episode " + std::to_string(*left.begin()) + " is not in the task");
  return out;
}


}  // namespace

namespace internal {

namespace {

// A staged change killed after its commit point: its task files are written from the
// change journal, its episodes' journals deleted, the change journal last.
Status RollForwardChange(FileSystem* dest, const std::string& root) {
  const std::string path = ChangeJournalPath(root);
  REEL_ASSIGN_OR_RETURN(FileInfo st, dest->Stat(path));
  if (st.type == FileType::kNotFound) return Status::OK();
  constexpr int64_t kMaxChangeJournalBytes = int64_t{256} << 20;
  // Bounded before it is read: its bytes come from the store, and ParseJson's bound applies
  // only once the whole file is in memory.
  if (st.size > static_cast<uint64_t>(kMaxChangeJournalBytes))
    return Status::Corruption(path + ": a change journal of " + std::to_string(st.size) +
                              " bytes, over the 256 MiB one may hold; the change cannot be rolled forward "
                              "(remove the file to abandon it)");
  REEL_ASSIGN_OR_RETURN(std::string text, dest->ReadFile(path));
  auto parsed = ParseJson(text, path, {.max_bytes = kMaxChangeJournalBytes, .max_depth = 4});
  // Torn while written (a destination with in-place writes, i.e. a local disk): the
  // commit point was never reached, so the change is rolled back like an uncommitted one.
  if (!parsed.ok()) return dest->RemoveFile(path);
  Json doc = std::move(*parsed);
  const auto bad = [&path](const std::string& why) {
    return Status::Corruption(path + ": " + why + "; the change cannot be rolled forward (remove the file to abandon it)");
  };
  if (!doc.is_object() || !doc.contains("files") || !doc["files"].is_object() || !doc.contains("episodes") ||
      !doc["episodes"].is_array())
    return bad("not a change journal (an object with \"files\" and \"episodes\")");
  for (const auto& [rel, content] : doc["files"].items())
    if (!content.is_string() || !IsTaskFile(rel))
      return bad("names \"" + rel + "\", which is not a task file");
  for (const Json& n : doc["episodes"])
    if (!n.is_number_integer() || n.get<int64_t>() < 1) return bad("lists an episode that is not a number >= 1");
  for (const auto& [rel, content] : doc["files"].items())
    REEL_RETURN_IF_ERROR(WriteFileAtomic(dest, JoinPath(root, rel), content.get<std::string>()));
  for (const Json& n : doc["episodes"]) {
    Status removed = dest->RemoveFile(PushJournalPath(root, n.get<int64_t>()));
    if (!removed.ok() && removed.code() != StatusCode::kNotFound) return removed;
  }
  REEL_RETURN_IF_ERROR(dest->RemoveFile(path));
  return dest->SyncDir(DirName(path));  // task files and journals: all in meta/
}

// A staged change killed before its commit point: the files its journals list belong to
// new episodes that exist nowhere else, so they go, the row first and the journal last.
Result<std::vector<int64_t>> RollBackStagedEpisodes(FileSystem* dest, const std::string& root) {
  std::vector<int64_t> others;
  REEL_ASSIGN_OR_RETURN(const std::vector<int64_t> journals, PushJournals(dest, root));
  for (int64_t n : journals) {
    const std::string path = PushJournalPath(root, n);
    // A journal torn while written (a local destination), or one over the 1 MiB a journal
    // may hold (bounded by its size before it is read), cannot say it is staged: it is left
    // for its push to resume, as the journals of plain pushes are.
    REEL_ASSIGN_OR_RETURN(FileInfo st, dest->Stat(path));
    if (st.size > (uint64_t{1} << 20)) {
      others.push_back(n);
      continue;
    }
    REEL_ASSIGN_OR_RETURN(std::string text, dest->ReadFile(path));
    auto parsed = ParseJson(text, path, {.max_bytes = 1 << 20, .max_depth = 4});
    Json doc = parsed.ok() ? std::move(*parsed) : Json();
    bool staged = false;
    std::vector<std::string> files;
    if (!doc.is_object() || !GetBool(doc, "staged", path, staged).ok() || !staged ||
        !GetStringList(doc, "files", path, files).ok()) {
      others.push_back(n);
      continue;
    }
    // The journal is the destination's bytes: each file it lists is removed only inside
    // the task, through no symbolic link (layout/confined.h), all checked first.
    Beneath beneath(dest, root);
    for (const std::string& rel : files)
      REEL_RETURN_IF_ERROR(beneath.Check(rel, path + " (staged push journal; nothing was rolled back)"));
    std::set<std::string> dirs;
    for (auto it = files.rbegin(); it != files.rend(); ++it) {
      Status st = dest->RemoveFile(JoinPath(root, *it));
      if (!st.ok() && st.code() != StatusCode::kNotFound) return st;
      dirs.insert(DirName(JoinPath(root, *it)));
    }
    // The removals durable before the journal's (on a disk): a journal gone with a file
    // left would publish a torn episode.
    for (const std::string& dir : dirs) REEL_RETURN_IF_ERROR(dest->SyncDir(dir));
    REEL_RETURN_IF_ERROR(dest->RemoveFile(path));
    REEL_RETURN_IF_ERROR(dest->SyncDir(DirName(path)));
  }
  return others;
}

}  // namespace

Result<std::vector<int64_t>> RecoverStagedPushes(FileSystem* dest, const std::string& root) {
  REEL_RETURN_IF_ERROR(RollForwardChange(dest, root));
  REEL_RETURN_IF_ERROR(RemoveStaleReplaceTemps(dest, root));
  return RollBackStagedEpisodes(dest, root);
}

namespace {

// A plain push never rolls a destination back: its task files are replaced by the source's
// (total_episodes, stats.json), so a destination holding an episode the source lacks (one
// imported there, issue 27 finding 12) or counting more episodes would lose them from its
// counts. Refused before anything is sent, naming them.
Status CheckNothingRolledBack(const Task& source, const std::vector<EpisodeEntry>& listed, FileSystem* dest,
                              const std::string& dest_root) {
  REEL_ASSIGN_OR_RETURN(FileInfo info, dest->Stat(JoinPath(dest_root, "meta/info.json")));
  if (info.type == FileType::kNotFound) return Status::OK();  // a new destination
  const auto fail = [&](const Status& st) {
    return st.WithContext(dest_root + ": cannot list the destination to check that the push takes nothing from it");
  };
  auto there = Task::Open(dest_root, {.fs = dest, .io_threads = 4, .episode_index = EpisodeIndexMode::kOff});
  if (!there.ok()) return fail(there.status());
  auto theirs = (*there)->ListEpisodes();
  if (!theirs.ok()) return fail(theirs.status());
  std::set<int64_t> ours;
  for (const EpisodeEntry& e : listed) ours.insert(e.episode_index);
  std::vector<int64_t> lacking;
  for (const EpisodeEntry& e : *theirs)
    if (!ours.count(e.episode_index)) lacking.push_back(e.episode_index);
  const std::string advice = "; the push would roll the destination's task files back over them. Bring them "
                             "into " + source.root() + " first (reel import), or push to a new destination";
  if (!lacking.empty()) {
    std::string names;
    for (size_t i = 0; i < lacking.size() && i < 10; ++i) names += (i ? ", " : "") + std::to_string(lacking[i]);
    if (lacking.size() > 10) names += ", ... (" + std::to_string(lacking.size()) + " in all)";
    return Status::AlreadyExists(dest_root + ": holds episode(s) " + names + " that " + source.root() + " lacks" +
                                 advice);
  }
  if ((*there)->info().total_episodes > source.info().total_episodes)
    return Status::AlreadyExists(dest_root + ": counts " + std::to_string((*there)->info().total_episodes) +
                                 " episodes (total_episodes), " + source.root() + " " +
                                 std::to_string(source.info().total_episodes) + advice);
  return Status::OK();
}

}  // namespace

Result<PushReport> PushWithLock(const std::string& task_root, FileSystem* local, FileSystem* dest,
                                const std::string& dest_root, const PushOptions& options, PushLock* lock,
                                std::optional<std::vector<int64_t>> staged) {
  // Every directory listed: a forged listing cache must not keep an episode from the push.
  REEL_ASSIGN_OR_RETURN(auto task, Task::Open(task_root, {.fs = local, .io_threads = 4, .listing_cache = false}));
  REEL_ASSIGN_OR_RETURN(auto listed, task->ListEpisodes());
  if (!staged) REEL_RETURN_IF_ERROR(CheckNothingRolledBack(*task, listed, dest, dest_root));
  REEL_ASSIGN_OR_RETURN(auto episodes, Selected(std::move(listed), staged ? *staged : options.episodes, !staged, task_root));
  Pusher p{task_root, local, dest, dest_root, options, staged.has_value(), {}};
  p.report.episodes = static_cast<int64_t>(episodes.size());
  p.report.dry_run = options.dry_run;
  REEL_RETURN_IF_ERROR(p.CheckSources(episodes));
  REEL_ASSIGN_OR_RETURN(const std::vector<int64_t> journals, PushJournals(dest, dest_root));
  const std::set<int64_t> interrupted(journals.begin(), journals.end());
  // A plain push sends the task files first: the new total_episodes counts every episode
  // it publishes, so the destination checks clean at every moment, a cut included
  // (total_episodes may exceed the highest visible episode, as after a deletion; the
  // reverse is an error). Legacy shards hold rows of several episodes, so they go last,
  // once those episodes' files are there. A staged change sends them all at its commit.
  if (!staged) REEL_RETURN_IF_ERROR(p.PushTaskFiles(episodes, /*shards=*/false, /*task_files=*/true));
  for (size_t i = 0; i < episodes.size(); ++i) {
    REEL_RETURN_IF_ERROR(p.PushEpisode(episodes[i], interrupted, staged.has_value()));
    if (lock) REEL_RETURN_IF_ERROR(lock->Renew());
    if (options.progress)
      options.progress({"episodes pushed", static_cast<int64_t>(i + 1), static_cast<int64_t>(episodes.size()),
                        "episode " + std::to_string(episodes[i].episode_index)});
  }
  REEL_RETURN_IF_ERROR(staged ? p.CommitStaged(episodes)
                              : p.PushTaskFiles(episodes, /*shards=*/true, /*task_files=*/false));
  return std::move(p.report);
}

}  // namespace internal

Result<PushReport> PushTask(const std::string& task_root, FileSystem* dest, const std::string& dest_root,
                            const PushOptions& options) {
  FileSystem* local = options.fs ? options.fs : DefaultFileSystem();
  if (!dest) return Status::Invalid("push: no destination file system");
  std::unique_ptr<PushLock> lock;
  if (!options.dry_run) {
    REEL_RETURN_IF_ERROR(internal::CreateDirsDurable(dest, JoinPath(dest_root, "meta")));
    REEL_ASSIGN_OR_RETURN(lock, PushLock::Acquire(dest, dest_root, options.lock_lease_s));
    REEL_RETURN_IF_ERROR(internal::RecoverStagedPushes(dest, dest_root).status());
  }
  return internal::PushWithLock(task_root, local, dest, dest_root, options, lock.get(), std::nullopt);
}

}  // namespace reel
