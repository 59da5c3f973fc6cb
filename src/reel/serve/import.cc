// ImportSlice: an untrusted episode slice becomes an episode of a server-side task,
// whole or not at all (serve.h).
#include <arrow/api.h>
#include <arrow/io/interfaces.h>
#include <map>
#include <set>
#include <tuple>

#include "io/same_bytes.h"
#include "layout/confined.h"
#include "reel/check.h"
#include "reel/columns.h"
#include "reel/layout.h"
#include "reel/serve.h"
#include "reel/task.h"
#include "io/scratch_dir.h"
#include "util/json_util.h"
#include "serve/request_parse.h"
#include "serve/serve_internal.h"
#include "write/episode_stats.h"
#include "write/task_files.h"
#include "write/transaction.h"
#include "reel/metadata.h"
#include "io/json_file.h"

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
    if (prefix.size() <= 1) continue;  // "" or "/": nothing to hide
    for (size_t pos; (pos = message.find(prefix)) != std::string::npos;) {
      size_t end = pos + prefix.size();
      if (end < message.size() && message[end] == '/') ++end;
      message.erase(pos, end - pos);
    }
  }
  return message;
}

// A refusal from a Status that carries a slice rule id (zip.*, slice.*), or `fallback_rule`.
// The server answers only the rules of docs/serve.md: a library rule of another family (a
// JSON bound's json.depth) stays in the detail, under the fallback.
ImportOutcome RefuseStatus(const Status& st, const std::string& fallback_rule,
                           const std::vector<std::string>& hide = {}) {
  std::string rule = RuleOf(st);
  if (!rule.starts_with("zip.") && !rule.starts_with("slice.")) rule = fallback_rule;
  const int code = st.code() == StatusCode::kIOError || st.code() == StatusCode::kPermissionDenied ? 500 : 422;
  return Refuse(code, rule, WithoutPrefixes(st.message(), hide));
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
  REEL_ASSIGN_OR_RETURN(std::string info_text,
                        internal::ReadFileBounded(fs, JoinPath(dir, internal::kInfoPath), internal::kJsonFileBytes));
  REEL_ASSIGN_OR_RETURN(out.info, ParseInfoJson(info_text, "meta/info.json"));
  auto tasks = internal::ReadFileBounded(fs, JoinPath(dir, internal::kTasksPath), internal::kJsonFileBytes);
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
  // One read of the data parquet serves the validation below and the stats blocks:
  // every column but the force matrices, which neither looks at (the checker counts
  // their cells from the column levels; reading their values is most of an import).
  REEL_ASSIGN_OR_RETURN(auto schema, task->ReadDataSchema(out.entry));
  std::vector<std::string> columns;
  for (const auto& field : schema->fields())
    if (ClassifyColumn(field->name(), out.info.sensors) != ColumnFamily::kForceMatrix)
      columns.push_back(field->name());
  if (columns.empty()) return Status::Invalid(out.entry.data_path + ": no episode_index column");
  REEL_ASSIGN_OR_RETURN(out.data, task->ReadData(out.entry, columns));
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
  // The form field is (N-1) % 1000 (contract-decisions.md, what reel upload sends); a
  // collector whose chunks_size is not 1000 may send its own file number instead (the
  // contract's "equal to episode-{f:03d}").
  const int64_t suffix = EpisodeFileSuffix(n, 1000);
  const int64_t own_suffix = EpisodeFileSuffix(n, out.info.chunks_size);
  if (form_episode_index >= 0 && form_episode_index != suffix && form_episode_index != own_suffix) {
    *rule = "form.episode_index";
    return Status::Invalid("form field episode_index is " + std::to_string(form_episode_index) +
                           " but the slice holds episode " + std::to_string(n) + ", whose file number is " +
                           std::to_string(suffix));
  }
  *rule = "";
  return out;
}

// A slice's episode files, each with the path it has in the slice and the path the
// task's own templates give it (both relative).
using Placement = std::map<std::string, std::string>;  // staged -> task

Status Layout(const std::string& message) {
  return Status::Invalid("slice.layout: " + message).WithRule("slice.layout");
}

// The file of episode `n` that `tmpl` gives for `vars` (chunk and file added).
Result<std::string> RenderFor(const std::string& tmpl, int64_t n, int64_t chunks_size, PathVars vars) {
  REEL_ASSIGN_OR_RETURN(PathTemplate t, PathTemplate::Parse(tmpl));
  const EpisodeLocation loc = LocateEpisode(n, chunks_size);
  vars.chunk = loc.chunk;
  vars.file = loc.file;
  vars.episode_index = n;
  return t.Render(vars);
}

// Where the episode's files go in the task (contract §12: every path from the task's
// templates and chunks_size, never from the slice's names). The slice's own files must
// be exactly those its own templates give for N (no other episode file rides along),
// and its templates must be the task's: a file's role (data, episodes row, video) is
// known only through them. Its chunks_size may differ: the files carry no location, so
// they are placed, byte for byte, where the task's chunks_size puts N.
Result<Placement> PlanPlacement(const InfoJson& slice, const InfoJson& task, const EpisodeEntry& entry,
                                const SliceManifest& manifest) {
  const int64_t n = entry.episode_index;
  for (const auto& [what, mine, theirs] :
       {std::tuple<const char*, const std::string&, const std::string&>{"data_path", slice.data_path, task.data_path},
        {"episodes_path", slice.episodes_path, task.episodes_path},
        {"video_path", slice.video_path, task.video_path}})
    if (mine != theirs)
      return Layout(std::string("meta/info.json: ") + what + " \"" + mine + "\" differs from the task's \"" + theirs +
                    "\"; the server takes slices in the task's layout only");
  Placement out;
  auto place = [&](const std::string& rel, const std::string& tmpl, PathVars vars) -> Status {
    REEL_ASSIGN_OR_RETURN(std::string own, RenderFor(tmpl, n, slice.chunks_size, vars));
    if (own != rel)
      return Layout(rel + " is not where the slice's own templates put episode " + std::to_string(n) + " (" + own + ")");
    REEL_ASSIGN_OR_RETURN(std::string target, RenderFor(tmpl, n, task.chunks_size, vars));
    if (!internal::TemplateNamesEpisode(tmpl, target, n, task.chunks_size))
      return Layout("the task's template \"" + tmpl + "\" does not name episode " + std::to_string(n) + " uniquely");
    out[rel] = target;
    return Status::OK();
  };
  REEL_RETURN_IF_ERROR(place(entry.data_path, slice.data_path, {}));
  REEL_RETURN_IF_ERROR(place(entry.row_path, slice.episodes_path, {}));
  REEL_ASSIGN_OR_RETURN(PathTemplate video, PathTemplate::Parse(slice.video_path));
  for (const auto& [key, rel] : entry.videos) {
    std::optional<PathVars> vars = video.Match(rel);
    if (!vars || !vars->image_key || *vars->image_key != key)
      return Layout(rel + " does not match the slice's video_path for slot " + key);
    REEL_RETURN_IF_ERROR(place(rel, slice.video_path, PathVars{std::nullopt, std::nullopt, std::nullopt,
                                                               vars->image_key, vars->ext}));
  }
  std::set<std::string> targets;
  for (const auto& [from, to] : out)
    if (!targets.insert(to).second) return Layout("two of the slice's files would land on " + to);
  for (const SliceEntry& e : manifest.entries) {
    if (e.arcname == internal::kInfoPath || e.arcname == internal::kStatsPath || e.arcname == internal::kTasksPath)
      continue;
    // An auxiliary stream beside a video (its name passed ClassifySlicePath): accepted and not
    // imported; contract 000 §8 says readers may ignore it.
    if (e.arcname.starts_with("videos/") && AuxStreamMainStem(BaseName(e.arcname))) continue;
    if (!out.count(e.arcname))
      return Layout(e.arcname + " is not a file of episode " + std::to_string(n) +
                    " by the slice's own templates (video_extensions, slots)");
  }
  return out;
}

}  // namespace

std::string SessionId(const std::string& project, int64_t episode_index) {
  return project + "/" + std::to_string(episode_index);
}

namespace {

// ImportSlice's steps; *n is set once the slice's N is read, so that a refusal after
// that point still names the episode (ImportSlice copies it into the outcome).
ImportOutcome ImportSliceSteps(const std::string& root, const ImportRequest& request,
                               const ImportSliceOptions& options, int64_t* n_read) {
  FileSystem* fs = options.fs ? options.fs : DefaultFileSystem();
  if (std::string problem = serve::ProjectNameProblem(request.project); !problem.empty())
    return Refuse(400, "form.name", "the task name is refused: " + problem);
  const std::string staging_parent = options.staging_dir.empty() ? JoinPath(root, ".staging") : options.staging_dir;
  auto staging = internal::ScratchDir::Create("import", staging_parent, fs);
  if (!staging.ok()) return RefuseStatus(staging.status(), "import.io", {root});
  const std::string staged = JoinPath((*staging)->path(), "slice");

  const std::vector<std::string> hide = {staged, request.zip_path, root};
  auto manifest = ExtractSlice(request.zip_path, staged, options.limits, fs);
  if (!manifest.ok()) return RefuseStatus(manifest.status(), "zip.unreadable", hide);
  std::string rule;
  auto episode = ReadStaged(fs, staged, *manifest, request.form_episode_index, &rule);
  if (!episode.ok()) return RefuseStatus(episode.status(), rule, hide);
  const int64_t n = episode->entry.episode_index;
  *n_read = n;

  if (options.check) {
    CheckOptions check_options;
    check_options.fs = fs;
    check_options.io_threads = 1;
    auto report = CheckTask(staged, check_options);
    if (!report.ok()) return RefuseStatus(report.status(), "slice.unreadable", hide);
    for (const Finding& f : report->findings)
      if (f.severity == Severity::kError)
        return Refuse(422, "check." + f.rule,
                      WithoutPrefixes((f.path.empty() ? std::string() : f.path + ": ") + f.message, hide) + " (" +
                          std::to_string(report->Count(Severity::kError)) + " error(s) in the slice)");
  }
  // Everything the task will hold that is derived from the slice is computed and
  // bounded before the task directory is touched: the stats block, and the slice's
  // info.json as the server would write it (nesting makes pretty-printed JSON grow
  // with its square: a 24 KB info.json became 288 MB).
  auto stats = internal::EpisodeStatsFromTable(*episode->data, episode->info.sensors);
  if (!stats.ok()) return RefuseStatus(stats.status(), "slice.stats", hide);
  auto info_text = SerializeInfoJson(episode->info);
  if (!info_text.ok()) return RefuseStatus(info_text.status(), "slice.info_json", hide);
  if (info_text->size() > options.limits.max_meta_bytes)
    return Refuse(422, "slice.info_json",
                  "meta/info.json would take " + std::to_string(info_text->size()) + " bytes written out (limit " +
                      std::to_string(options.limits.max_meta_bytes) + ")");

  // Commit under the task's lock; the server owns the task directory.
  const std::string task_root = JoinPath(root, request.project);
  const std::vector<std::string> hide_task = {staged, request.zip_path, root};
  ImportOutcome out;
  out.episode_index = n;
  out.session_id = SessionId(request.project, n);
  auto lock = internal::TaskLock::Acquire(fs, task_root);
  if (!lock.ok()) return RefuseStatus(lock.status(), "import.io", hide_task);

  // The task's layout: its info.json, or for a new task the one the commit will
  // write (the contract's chunks_size and templates).
  auto info_stat = fs->Stat(JoinPath(task_root, internal::kInfoPath));
  if (!info_stat.ok()) return RefuseStatus(info_stat.status(), "import.io", hide_task);
  const bool task_exists = info_stat->type == FileType::kFile;
  auto task_info = internal::LoadInfo(fs, task_root);
  if (!task_info.ok()) return Refuse(409, "import.task", WithoutPrefixes(task_info.status().message(), hide_task));
  auto placement = PlanPlacement(episode->info, *task_info, episode->entry, *manifest);
  if (!placement.ok()) return RefuseStatus(placement.status(), "slice.layout", hide);
  std::set<std::string> files;
  for (const auto& [from, to] : *placement) files.insert(to);

  if (task_exists) {
    auto task = Task::Open(task_root, {fs, 1});
    if (!task.ok()) return Refuse(409, "import.task", WithoutPrefixes(task.status().message(), hide_task));
    auto existing = (*task)->FindEpisode(n);
    if (existing.ok()) {
      const std::set<std::string> have = EpisodeFiles(*existing);
      bool same = have == files;
      for (auto it = placement->begin(); same && it != placement->end(); ++it) {
        auto eq = internal::SameBytes(fs, JoinPath(staged, it->first), JoinPath(task_root, it->second));
        if (!eq.ok()) return RefuseStatus(eq.status(), "import.io", hide_task);
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

  auto txn = internal::EpisodeTransaction::Begin(&*lock, n);
  if (!txn.ok()) return RefuseStatus(txn.status(), "import.io", hide_task);
  for (const auto& [from, rel] : *placement) {  // same file system: each a rename
    if (Status st = (*txn)->Adopt(JoinPath(staged, from), rel); !st.ok())
      return RefuseStatus(st, "import.io", hide_task);  // the transaction removes what it moved
  }
  internal::TaskFilesUpdate update;
  update.declaration = std::move(episode->info);
  update.stats = std::move(*stats);
  update.tasks_jsonl = episode->tasks_jsonl;
  if (update.tasks_jsonl.empty())  // a slice without tasks.jsonl: the contract's one line
    update.tasks_jsonl = "{\"task_index\": 0, \"task\": " +
                         internal::Dump(internal::Json(update.declaration.task_name.empty() ? request.project
                                                                                           : update.declaration.task_name),
                                        -1) +
                         "}\n";
  Status st = (*txn)->Commit(update);
  if (!(*txn)->decided()) return RefuseStatus(st, "import.io", hide_task);
  // Decided but not confirmed durable: the journal makes N appear (now or at the next
  // start), so the episode counts as imported.
  out.http_status = 201;
  out.message = st.ok() ? "imported" : "imported; " + WithoutPrefixes(st.message(), hide_task);
  return out;
}

}  // namespace

ImportOutcome ImportSlice(const std::string& root, const ImportRequest& request,
                          const ImportSliceOptions& options) {
  int64_t n = -1;
  ImportOutcome out = ImportSliceSteps(root, request, options, &n);
  out.episode_index = n;
  return out;
}

}  // namespace reel
