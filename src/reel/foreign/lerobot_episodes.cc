// The LeRobot episode index: meta/episodes.jsonl (v2.x) or the episodes parquet
// files (v3.x), checked against the metadata rules of docs/foreign-read.md.
#include <arrow/api.h>

#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "foreign/internal.h"
#include "util/json_util.h"
#include "io/parquet_io.h"

namespace reel {

using internal::Json;
using namespace foreign;

namespace {

std::string Seconds(double s) {
  std::ostringstream o;
  o.precision(6);
  o << s;
  return o.str();
}

// Stats each file once; a missing one is a kRuleFileMissing error naming what needed it.
class FileProbe {
 public:
  FileProbe(FileSystem* fs, const std::string& root) : fs_(fs), root_(root) {}
  // False when the caller must stop (strict sink).
  bool Check(const std::string& rel, const std::string& needed_by, Sink& sink);

 private:
  FileSystem* fs_;
  std::string root_;
  std::map<std::string, bool> seen_;
};

bool FileProbe::Check(const std::string& rel, const std::string& needed_by,
                      Sink& sink) {
  auto [it, fresh] = seen_.emplace(rel, true);
  if (!fresh) return true;
  auto is_file = IsFile(fs_, JoinPath(root_, rel));
  if (is_file.ok() && *is_file) return true;
  it->second = false;
  return sink.Error(kRuleFileMissing, rel,
                    JoinPath(root_, rel) + ": missing (" + needed_by + ")",
                    StatusCode::kNotFound);
}

// (to - from) must be length / fps within half a frame: a longer or shorter
// span means the episodes row points at another episode's frames (lerobot#2627).
bool CheckSpan(const VideoSpan& v, const ForeignEpisode& e, double fps, const std::string& where,
               Sink& sink) {
  const double expected = static_cast<double>(e.length) / fps;
  const double span = v.to_timestamp - v.from_timestamp;
  if (std::fabs(span - expected) <= 0.5 / fps) return true;
  return sink.Error(kRuleVideoSpan, where,
                    where + ": " + EpisodeName(e.episode_index) + " videos/" + v.key +
                        " to_timestamp - from_timestamp = " + Seconds(v.to_timestamp) + " - " +
                        Seconds(v.from_timestamp) + " = " + Seconds(span) + " s, but length " +
                        std::to_string(e.length) + " / fps " + Seconds(fps) + " = " +
                        Seconds(expected) + " s (more than half a frame apart)");
}

}  // namespace

// ---- v2.x -----------------------------------------------------------------------------

namespace foreign {

Result<std::vector<ForeignEpisode>> LeRobotV2Episodes(FileSystem* fs, const std::string& root,
                                                      const ForeignInfo& info,
                                                      Sink& sink) {
  const std::string rel = "meta/episodes.jsonl";
  const std::string path = JoinPath(root, rel);
  REEL_ASSIGN_OR_RETURN(PathTemplate data_tmpl, PathTemplate::Parse(info.data_path));
  std::optional<PathTemplate> video_tmpl;
  if (!info.video_keys.empty()) {
    REEL_ASSIGN_OR_RETURN(video_tmpl, PathTemplate::Parse(info.video_path));
  }
  REEL_ASSIGN_OR_RETURN(std::string text, fs->ReadFile(path));
  std::istringstream lines(text);
  std::string line;
  int64_t lineno = 0, next_index = 0;
  FileProbe probe(fs, root);
  std::vector<ForeignEpisode> out;
  while (std::getline(lines, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + " line " + std::to_string(lineno);
    REEL_ASSIGN_OR_RETURN(Json j, internal::ParseJson(line, where));
    ForeignEpisode e;
    e.episode_index = -1;
    e.length = -1;
    REEL_RETURN_IF_ERROR(internal::GetInt(j, "episode_index", where, e.episode_index));
    REEL_RETURN_IF_ERROR(internal::GetInt(j, "length", where, e.length));
    REEL_RETURN_IF_ERROR(internal::GetStringList(j, "tasks", where, e.tasks));
    if (e.length < 0)
      return Status::Invalid(where + ": \"length\" must be a non-negative integer, found " +
                             std::to_string(e.length));
    // episode_chunk = episode_index // chunks_size addresses files, so indices
    // must be 0..n-1 in line order: a gap or reorder would address other files.
    if (e.episode_index != next_index &&
        !sink.Error(kRuleEpisodeOrder, rel,
                    where + ": episode_index " + std::to_string(e.episode_index) + ", expected " +
                        std::to_string(next_index) + " (episode_index must be 0..n-1 in line order)"))
      return sink.status();
    next_index = e.episode_index + 1;
    PathVars vars;
    vars.chunk = e.episode_index / info.chunks_size;
    vars.episode_index = e.episode_index;
    REEL_ASSIGN_OR_RETURN(e.data_path, data_tmpl.Render(vars));
    e.from_row = 0;
    e.to_row = e.length;
    e.dataset_from_index = out.empty() ? 0 : out.back().dataset_to_index;
    e.dataset_to_index = e.dataset_from_index + e.length;
    if (!probe.Check(e.data_path, "data file of " + EpisodeName(e.episode_index), sink))
      return sink.status();
    for (const std::string& key : info.video_keys) {
      vars.image_key = key;
      VideoSpan v{key, "", 0, static_cast<double>(e.length) / info.fps};
      REEL_ASSIGN_OR_RETURN(v.path, video_tmpl->Render(vars));
      if (!probe.Check(v.path, "video " + key + " of " + EpisodeName(e.episode_index), sink))
        return sink.status();
      e.videos.push_back(std::move(v));
    }
    out.push_back(std::move(e));
  }
  return out;
}

// ---- v3.x -----------------------------------------------------------------------------

namespace {

struct EpisodesFile {
  std::string rel;
  std::shared_ptr<arrow::Table> table;
};

// Reads one v3 episodes row into `e`; cell errors are metadata errors.
Status ReadV3Row(const EpisodesFile& f, int64_t r, const ForeignInfo& info, ForeignEpisode& e,
                 std::vector<std::pair<int64_t, int64_t>>& video_files, int64_t& data_chunk,
                 int64_t& data_file) {
  const arrow::Table& t = *f.table;
  auto cell = [&](const std::string& name) -> Result<std::shared_ptr<arrow::ChunkedArray>> {
    return Column(t, name, f.rel);
  };
  const std::string at = f.rel + " row " + std::to_string(r) + " column ";
  auto int_of = [&](const std::string& name) -> Result<int64_t> {
    REEL_ASSIGN_OR_RETURN(auto c, cell(name));
    return IntAt(*c, r, at + "\"" + name + "\"");
  };
  auto double_of = [&](const std::string& name) -> Result<double> {
    REEL_ASSIGN_OR_RETURN(auto c, cell(name));
    return DoubleAt(*c, r, at + "\"" + name + "\"");
  };
  REEL_ASSIGN_OR_RETURN(e.episode_index, int_of("episode_index"));
  REEL_ASSIGN_OR_RETURN(e.length, int_of("length"));
  REEL_ASSIGN_OR_RETURN(data_chunk, int_of("data/chunk_index"));
  REEL_ASSIGN_OR_RETURN(data_file, int_of("data/file_index"));
  REEL_ASSIGN_OR_RETURN(e.dataset_from_index, int_of("dataset_from_index"));
  REEL_ASSIGN_OR_RETURN(e.dataset_to_index, int_of("dataset_to_index"));
  if (auto tasks = t.GetColumnByName("tasks")) {
    REEL_ASSIGN_OR_RETURN(e.tasks, StringListAt(*tasks, r, at + "\"tasks\""));
  }
  for (const std::string& key : info.video_keys) {
    const std::string p = "videos/" + key + "/";
    VideoSpan v{key, "", 0, 0};
    int64_t chunk = 0, file = 0;
    REEL_ASSIGN_OR_RETURN(chunk, int_of(p + "chunk_index"));
    REEL_ASSIGN_OR_RETURN(file, int_of(p + "file_index"));
    REEL_ASSIGN_OR_RETURN(v.from_timestamp, double_of(p + "from_timestamp"));
    REEL_ASSIGN_OR_RETURN(v.to_timestamp, double_of(p + "to_timestamp"));
    video_files.emplace_back(chunk, file);
    e.videos.push_back(std::move(v));
  }
  if (e.length < 0) return Status::Invalid(at + "\"length\": negative (" + std::to_string(e.length) + ")");
  return Status::OK();
}

}  // namespace

Result<std::vector<ForeignEpisode>> LeRobotV3Episodes(FileSystem* fs, const std::string& root,
                                                      const ForeignInfo& info,
                                                      Sink& sink) {
  REEL_ASSIGN_OR_RETURN(PathTemplate data_tmpl, PathTemplate::Parse(info.data_path));
  std::optional<PathTemplate> video_tmpl;
  if (!info.video_keys.empty()) {
    REEL_ASSIGN_OR_RETURN(video_tmpl, PathTemplate::Parse(info.video_path));
  }
  REEL_ASSIGN_OR_RETURN(
      PathTemplate meta_tmpl,
      PathTemplate::Parse("meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"));
  REEL_ASSIGN_OR_RETURN(auto files, meta_tmpl.Glob(fs, root));
  if (files.empty())
    return Status::NotFound(JoinPath(root, "meta/episodes") +
                            ": no chunk-NNN/file-NNN.parquet episodes files");

  FileProbe probe(fs, root);
  std::vector<ForeignEpisode> out;
  std::map<std::string, int64_t> data_base;  // data file -> dataset_from_index of its first episode
  std::string last_data;
  std::map<std::string, double> video_end;  // video file -> to_timestamp of its last episode so far
  for (const auto& [rel, vars] : files) {
    EpisodesFile f{rel, nullptr};
    REEL_ASSIGN_OR_RETURN(f.table, internal::ReadParquetTable(fs, JoinPath(root, rel), {}, false));
    for (int64_t r = 0; r < f.table->num_rows(); ++r) {
      ForeignEpisode e;
      std::vector<std::pair<int64_t, int64_t>> video_files;
      int64_t data_chunk = 0, data_file = 0;
      Status st = ReadV3Row(f, r, info, e, video_files, data_chunk, data_file);
      if (!st.ok()) return st;  // the index cannot be built past an unreadable row
      const int64_t expected = static_cast<int64_t>(out.size());
      const std::string where = JoinPath(root, rel) + " row " + std::to_string(r);
      // Row i must be episode i: LeRobot looks episodes up by position.
      if (e.episode_index != expected &&
          !sink.Error(kRuleEpisodeOrder, rel,
                      where + ": episode_index " + std::to_string(e.episode_index) + ", expected " +
                          std::to_string(expected) +
                          " (row i must be episode_index i; a gap or reorder mis-maps episodes)"))
        return sink.status();
      const int64_t want_from = out.empty() ? 0 : out.back().dataset_to_index;
      if ((e.dataset_from_index != want_from ||
           e.dataset_to_index - e.dataset_from_index != e.length) &&
          !sink.Error(kRuleIndexContiguous, rel,
                      where + ": " + EpisodeName(e.episode_index) + " dataset_from_index " +
                          std::to_string(e.dataset_from_index) + ", dataset_to_index " +
                          std::to_string(e.dataset_to_index) + ", length " +
                          std::to_string(e.length) + "; expected [" + std::to_string(want_from) +
                          ", " + std::to_string(want_from + e.length) +
                          ") (contiguous with the previous episode, to - from = length)"))
        return sink.status();

      PathVars dv;
      dv.chunk = data_chunk;
      dv.file = data_file;
      dv.episode_index = e.episode_index;
      REEL_ASSIGN_OR_RETURN(e.data_path, data_tmpl.Render(dv));
      // Episodes of one data file are consecutive, so a file's rows start at
      // the dataset_from_index of its first episode.
      auto [base, fresh] = data_base.emplace(e.data_path, e.dataset_from_index);
      if (!fresh && e.data_path != last_data &&
          !sink.Error(kRuleIndexContiguous, rel,
                      where + ": " + EpisodeName(e.episode_index) + " returns to data file " +
                          e.data_path + " after another file (episodes of a file must be consecutive)"))
        return sink.status();
      last_data = e.data_path;
      e.from_row = e.dataset_from_index - base->second;
      e.to_row = e.from_row + e.length;
      if (!probe.Check(e.data_path, "data file of " + EpisodeName(e.episode_index), sink))
        return sink.status();

      for (size_t k = 0; k < e.videos.size(); ++k) {
        VideoSpan& v = e.videos[k];
        PathVars vv;
        vv.image_key = v.key;
        vv.chunk = video_files[k].first;
        vv.file = video_files[k].second;
        vv.episode_index = e.episode_index;
        REEL_ASSIGN_OR_RETURN(v.path, video_tmpl->Render(vv));
        if (!probe.Check(v.path, "video " + v.key + " of " + EpisodeName(e.episode_index), sink))
          return sink.status();
        if (!CheckSpan(v, e, info.fps, where, sink)) return sink.status();
        // Spans within one file follow each other; an overlap means two episodes
        // claim the same frames.
        auto end = video_end.find(v.path);
        if (end != video_end.end() && v.from_timestamp < end->second - 0.5 / info.fps &&
            !sink.Error(kRuleVideoSpan, rel,
                        where + ": " + EpisodeName(e.episode_index) + " videos/" + v.key +
                            "/from_timestamp " + Seconds(v.from_timestamp) +
                            " s overlaps the previous episode in " + v.path + " (ends at " +
                            Seconds(end->second) + " s)"))
          return sink.status();
        video_end[v.path] = v.to_timestamp;
      }
      out.push_back(std::move(e));
    }
  }
  return out;
}

}  // namespace foreign
}  // namespace reel
