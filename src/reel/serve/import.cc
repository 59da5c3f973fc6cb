// ImportSlice: an untrusted episode slice becomes an episode of a server-side task,
// whole or not at all (serve.h).
#include <arrow/api.h>
#include <arrow/io/interfaces.h>
#include <set>

#include "reel/check.h"
#include "reel/layout.h"
#include "reel/serve.h"
#include "reel/task.h"
#include "io/scratch_dir.h"
#include "meta/json_util.h"
#include "serve/request_parse.h"
#include "serve/serve_internal.h"
#include "write/episode_stats.h"
#include "write/task_files.h"

namespace reel {

namespace {

ImportOutcome Refuse(int http_status, std::string rule, std::string message) {
  ImportOutcome out;
  out.http_status = http_status;
  out.rule = std::move(rule);
  out.message = std::move(message);
  return out;
}

// Server paths mean nothing to the client and should not leak to it: messages name
// entries relative to the slice.
std::string WithoutPrefixes(std::string message, const std::vector<std::string>& prefixes) {
  for (const std::string& prefix : prefixes) {
    if (prefix.empty()) continue;
    for (size_t pos; (pos = message.find(prefix)) != std::string::npos;) {
      size_t end = pos + prefix.size();
      if (end < message.size() && message[end] == '/') ++end;
      message.erase(pos, end - pos);
    }
  }
  return message;
}

// A refusal from a Status that carries a slice rule id, or `fallback_rule`.
ImportOutcome RefuseStatus(const Status& st, const std::string& fallback_rule,
                           const std::vector<std::string>& hide = {}) {
  std::string rule = RuleOf(st);
  if (rule.empty()) rule = fallback_rule;
  const int code = st.code() == StatusCode::kIOError || st.code() == StatusCode::kPermissionDenied ? 500 : 422;
  return Refuse(code, rule, WithoutPrefixes(st.message(), hide));
}

// True when the two files hold the same bytes.
Result<bool> SameBytes(FileSystem* fs, const std::string& a, const std::string& b) {
  REEL_ASSIGN_OR_RETURN(FileInfo sa, fs->Stat(a));
  REEL_ASSIGN_OR_RETURN(FileInfo sb, fs->Stat(b));
  if (sa.type != FileType::kFile || sb.type != FileType::kFile || sa.size != sb.size) return false;
  REEL_ASSIGN_OR_RETURN(auto fa, fs->OpenRandomAccess(a));
  REEL_ASSIGN_OR_RETURN(auto fb, fs->OpenRandomAccess(b));
  constexpr int64_t kChunk = 1 << 20;
  for (int64_t off = 0; off < static_cast<int64_t>(sa.size); off += kChunk) {
    auto ba = fa->ReadAt(off, kChunk);
    auto bb = fb->ReadAt(off, kChunk);
    if (!ba.ok() || !bb.ok()) return Status::IOError("comparing " + a + " with " + b + ": read failed");
    if (!(*ba)->Equals(**bb)) return false;
  }
  return true;
}

// The episode's files of a task, relative to its root: data, episodes file, videos.
std::set<std::string> EpisodeFiles(const EpisodeEntry& e) {
  std::set<std::string> out;
  if (!e.data_path.empty()) out.insert(e.data_path);
  if (!e.row_path.empty()) out.insert(e.row_path);
  for (const auto& [slot, path] : e.videos) out.insert(path);
  return out;
}

// What the staged slice holds, validated against itself and the form field.
struct StagedEpisode {
  InfoJson info;
  EpisodeEntry entry;
  std::shared_ptr<arrow::Table> data;
  std::string tasks_jsonl;
};

Result<StagedEpisode> ReadStaged(FileSystem* fs, const std::string& dir, const SliceManifest& manifest,
                                 int64_t form_episode_index, std::string* rule) {
  StagedEpisode out;
  *rule = "slice.format";
  REEL_ASSIGN_OR_RETURN(DetectedFormat format, DetectFormat(fs, dir));
  if (format.format != DatasetFormat::kPooledEpisodesV1)
    return Status::Invalid("meta/info.json: format is \"" + format.version +
                           "\"; an upload slice must be pooled_episodes_v1");
  *rule = "slice.info_json";
  REEL_ASSIGN_OR_RETURN(std::string info_text, fs->ReadFile(JoinPath(dir, internal::kInfoPath)));
  REEL_ASSIGN_OR_RETURN(out.info, ParseInfoJson(info_text, "meta/info.json"));
  auto tasks = fs->ReadFile(JoinPath(dir, internal::kTasksPath));
  if (tasks.ok()) out.tasks_jsonl = std::move(*tasks);

  *rule = "slice.episodes";
  REEL_ASSIGN_OR_RETURN(auto task, Task::Open(dir, {fs, 1}));
  REEL_ASSIGN_OR_RETURN(auto episodes, task->ListEpisodes());
  if (episodes.size() != 1)
    return Status::Invalid("the slice holds " + std::to_string(episodes.size()) + " episodes; it must hold exactly one");
  out.entry = episodes.front();
  if (out.entry.data_path.empty() || out.entry.row_source != RowSource::kEpisodeFile)
    return Status::Invalid("episode " + std::to_string(out.entry.episode_index) +
                           ": the slice needs its data parquet and its single-row episodes file");

  *rule = "slice.episode_index";
  const int64_t n = out.entry.episode_index;
  REEL_ASSIGN_OR_RETURN(EpisodeRow row, task->ReadEpisodeRow(out.entry));
  if (row.episode_index != n)
    return Status::Invalid(out.entry.row_path + ": episode_index " + std::to_string(row.episode_index) +
                           " but the file is named for episode " + std::to_string(n));
  const EpisodeLocation loc = LocateEpisode(n, out.info.chunks_size);
  if (loc.chunk != manifest.chunk || loc.file != manifest.file)
    return Status::Invalid("episode " + std::to_string(n) + " belongs in chunk " + std::to_string(loc.chunk) +
                           " file " + std::to_string(loc.file) + ", not where the slice put it");
  REEL_ASSIGN_OR_RETURN(out.data, task->ReadData(out.entry));
  auto column = out.data->GetColumnByName("episode_index");
  if (!column) return Status::Invalid(out.entry.data_path + ": no episode_index column");
  for (const auto& chunk : column->chunks()) {
    if (chunk->type_id() != arrow::Type::INT64)
      return Status::Invalid(out.entry.data_path + ": episode_index is not int64");
    const auto& values = static_cast<const arrow::Int64Array&>(*chunk);
    for (int64_t i = 0; i < values.length(); ++i)
      if (values.IsNull(i) || values.Value(i) != n)
        return Status::Invalid(out.entry.data_path + ": a row has episode_index " +
                               (values.IsNull(i) ? std::string("null") : std::to_string(values.Value(i))) +
                               " in the slice of episode " + std::to_string(n));
  }
  const int64_t suffix = EpisodeFileSuffix(n, out.info.chunks_size);
  if (form_episode_index >= 0 && form_episode_index != suffix) {
    *rule = "form.episode_index";
    return Status::Invalid("form field episode_index is " + std::to_string(form_episode_index) +
                           " but the slice holds episode " + std::to_string(n) + ", whose file number is " +
                           std::to_string(suffix));
  }
  *rule = "";
  return out;
}

// Moves the staged episode files into the task as dotfile temps (same file system,
// so a rename) and returns the renames that publish them.
Result<std::vector<internal::Rename>> PlaceTemps(FileSystem* fs, const std::string& staged,
                                                 const std::string& task_root,
                                                 const std::set<std::string>& files,
                                                 std::vector<std::string>* placed) {
  std::vector<internal::Rename> renames;
  for (const std::string& rel : files) {
    const std::string final_abs = JoinPath(task_root, rel);
    const std::string tmp = internal::TempPathFor(final_abs, "import");
    REEL_RETURN_IF_ERROR(fs->CreateDirs(DirName(final_abs)));
    REEL_RETURN_IF_ERROR(fs->Rename(JoinPath(staged, rel), tmp));
    placed->push_back(tmp);
    renames.push_back({tmp.substr(task_root.size() + 1), rel});
  }
  return renames;
}

}  // namespace

std::string SessionId(const std::string& project, int64_t episode_index) {
  return project + "/" + std::to_string(episode_index);
}

ImportOutcome ImportSlice(const std::string& root, const ImportRequest& request,
                          const ImportOptions& options) {
  FileSystem* fs = options.fs ? options.fs : DefaultFileSystem();
  if (std::string problem = serve::ProjectNameProblem(request.project); !problem.empty())
    return Refuse(400, "form.name", "the task name is refused: " + problem);
  const std::string staging_parent = options.staging_dir.empty() ? JoinPath(root, ".staging") : options.staging_dir;
  auto staging = internal::ScratchDir::Create("import", staging_parent, fs);
  if (!staging.ok()) return RefuseStatus(staging.status(), "import.io");
  const std::string staged = JoinPath((*staging)->path(), "slice");

  const std::vector<std::string> hide = {staged, request.zip_path, root};
  auto manifest = ExtractSlice(request.zip_path, staged, options.limits, fs);
  if (!manifest.ok()) return RefuseStatus(manifest.status(), "zip.unreadable", hide);
  std::string rule;
  auto episode = ReadStaged(fs, staged, *manifest, request.form_episode_index, &rule);
  if (!episode.ok()) return RefuseStatus(episode.status(), rule, hide);
  const int64_t n = episode->entry.episode_index;

  if (options.check) {
    CheckOptions check_options;
    check_options.fs = fs;
    check_options.io_threads = 1;
    auto report = CheckTask(staged, check_options);
    if (!report.ok()) return RefuseStatus(report.status(), "slice.unreadable", hide);
    for (const Finding& f : report->findings)
      if (f.severity == Severity::kError)
        return Refuse(422, "check." + f.rule,
                      (f.path.empty() ? std::string() : f.path + ": ") + f.message + " (" +
                          std::to_string(report->Count(Severity::kError)) + " error(s) in the slice)");
  }

  // Commit under the task's lock; the server owns the task directory.
  const std::string task_root = JoinPath(root, request.project);
  ImportOutcome out;
  out.episode_index = n;
  out.session_id = SessionId(request.project, n);
  Status st = fs->CreateDirs(JoinPath(task_root, "meta/episodes"));
  if (!st.ok()) return RefuseStatus(st, "import.io");
  auto lock = fs->LockFile(JoinPath(task_root, internal::kLockPath));
  if (!lock.ok()) return RefuseStatus(lock.status(), "import.io");
  if (st = internal::RecoverCommits(fs, task_root); !st.ok()) return RefuseStatus(st, "import.io");

  const std::set<std::string> files = EpisodeFiles(episode->entry);
  auto info_stat = fs->Stat(JoinPath(task_root, internal::kInfoPath));
  if (!info_stat.ok()) return RefuseStatus(info_stat.status(), "import.io");
  if (info_stat->type == FileType::kFile) {
    auto task = Task::Open(task_root, {fs, 1});
    if (!task.ok()) return Refuse(409, "import.task", task.status().message());
    auto existing = (*task)->FindEpisode(n);
    if (existing.ok()) {
      const std::set<std::string> have = EpisodeFiles(*existing);
      bool same = have == files;
      for (auto it = files.begin(); same && it != files.end(); ++it) {
        auto eq = SameBytes(fs, JoinPath(staged, *it), JoinPath(task_root, *it));
        if (!eq.ok()) return RefuseStatus(eq.status(), "import.io");
        same = *eq;
      }
      if (!same)
        return Refuse(409, "import.conflict",
                      "task \"" + request.project + "\" already holds a different episode " + std::to_string(n));
      out.http_status = 200;
      out.already_present = true;
      out.message = "episode " + std::to_string(n) + " is already present, byte for byte";
      return out;
    }
  }

  auto stats = internal::EpisodeStatsFromTable(*episode->data, episode->info.sensors);
  if (!stats.ok()) return RefuseStatus(stats.status(), "slice.stats", hide);
  std::vector<std::string> placed;
  auto renames = PlaceTemps(fs, staged, task_root, files, &placed);
  auto remove_placed = [&] {
    for (const std::string& t : placed) (void)fs->RemoveFile(t);
  };
  if (!renames.ok()) {
    remove_placed();
    return RefuseStatus(renames.status(), "import.io");
  }
  internal::EpisodeCommit commit;
  commit.episode_index = n;
  commit.episode_files = std::move(*renames);
  commit.declaration = std::move(episode->info);
  commit.stats = std::move(*stats);
  commit.tasks_jsonl = episode->tasks_jsonl;
  if (commit.tasks_jsonl.empty())  // a slice without tasks.jsonl: the contract's one line
    commit.tasks_jsonl = "{\"task_index\": 0, \"task\": " +
                         internal::Dump(internal::Json(commit.declaration.task_name.empty() ? request.project
                                                                                           : commit.declaration.task_name),
                                        -1) +
                         "}\n";
  bool decided = false;
  st = internal::CommitEpisode(fs, task_root, commit, &decided);
  if (!st.ok() && !decided) {
    remove_placed();
    return RefuseStatus(st, "import.io");
  }
  // Decided but not confirmed durable: the journal makes N appear (now or at the next
  // start), so the episode counts as imported.
  out.http_status = 201;
  out.message = st.ok() ? "imported" : "imported; " + st.message();
  return out;
}

}  // namespace reel
