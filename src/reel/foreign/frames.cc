// One episode's data rows and video frames.
#include <arrow/api.h>
#include <parquet/arrow/reader.h>
#include <parquet/exception.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>

#include <algorithm>
#include <set>

#include "foreign/internal.h"
#include "io/parquet_io.h"

namespace reel {

using namespace foreign;

namespace {

// First row r where column[r] != start + r * step, as (row, value); nullopt when none.
Result<std::optional<std::pair<int64_t, int64_t>>> FirstMismatch(const arrow::ChunkedArray& column,
                                                                  int64_t start, int64_t step,
                                                                  const std::string& what) {
  int64_t r = 0;
  for (const auto& chunk : column.chunks()) {
    if (chunk->type_id() == arrow::Type::INT64 && chunk->null_count() == 0) {
      const auto& a = static_cast<const arrow::Int64Array&>(*chunk);
      for (int64_t i = 0; i < a.length(); ++i, ++r)
        if (a.Value(i) != start + r * step) return std::make_optional(std::make_pair(r, a.Value(i)));
      continue;
    }
    arrow::ChunkedArray one(chunk);
    for (int64_t i = 0; i < chunk->length(); ++i, ++r) {
      REEL_ASSIGN_OR_RETURN(int64_t v, IntAt(one, i, what + " row " + std::to_string(r)));
      if (v != start + r * step) return std::make_optional(std::make_pair(r, v));
    }
  }
  return std::optional<std::pair<int64_t, int64_t>>();
}

}  // namespace

Result<std::vector<ForeignEpisode>> foreign::EpisodesOf(FileSystem* fs, const std::string& root,
                                                        const ForeignInfo& info, Sink& sink) {
  switch (info.format) {
    case DatasetFormat::kLeRobotV2: return LeRobotV2Episodes(fs, root, info, sink);
    case DatasetFormat::kLeRobotV3: return LeRobotV3Episodes(fs, root, info, sink);
    case DatasetFormat::kBundle: return BundleEpisodes(fs, root, info, sink);
    default: break;
  }
  return Status::NotSupported(root + ": not a LeRobot or bundle dataset");
}

Result<std::vector<ForeignEpisode>> ForeignDataset::ReadEpisodes() const {
  Sink sink(/*strict=*/true);
  auto episodes = EpisodesOf(fs_, root_, info_, sink);
  if (!episodes.ok()) return episodes.status();
  if (!sink.status().ok()) return sink.status();
  return episodes;
}

namespace foreign {

// Reads rows [from_row, to_row) of the episode's data file: only the row groups
// that overlap them, the requested columns plus the ones that identify rows
// (episode_index and index for LeRobot, step for bundles), which are checked
// and then dropped unless requested. Rule violations go to `sink`. With
// `check_only` no column is kept (Validate's use).
Result<std::shared_ptr<arrow::Table>> ReadEpisodeRows(FileSystem* fs, const std::string& root,
                                                      DatasetFormat format, const ForeignEpisode& e,
                                                      const std::vector<std::string>& columns,
                                                      Sink& sink, bool check_only) {
  const std::string path = JoinPath(root, e.data_path);
  const std::string who = EpisodeName(e.episode_index) +
                          (e.bundle_id.empty() ? "" : " (id " + e.bundle_id + ")");
  // A reader's bundle index came from manifest.json alone: the bundle is checked as it is read.
  if (format == DatasetFormat::kBundle && sink.strict()) REEL_RETURN_IF_ERROR(CheckBundle(fs, root, e, sink).status());
  REEL_ASSIGN_OR_RETURN(auto reader, internal::OpenParquet(fs, path, true));
  std::shared_ptr<arrow::Schema> schema;
  if (auto st = reader->GetSchema(&schema); !st.ok())
    return Status::Corruption(path + ": unreadable parquet schema (" + st.message() + ")");
  std::vector<std::string> wanted = columns;
  if (wanted.empty() && !check_only)
    for (const auto& f : schema->fields()) wanted.push_back(f->name());
  const bool bundle = format == DatasetFormat::kBundle;
  std::vector<std::string> checks =
      bundle ? std::vector<std::string>{"step"} : std::vector<std::string>{"episode_index", "index"};
  std::vector<std::string> read = wanted;
  for (const std::string& c : checks)
    if (schema->GetFieldByName(c) && std::find(read.begin(), read.end(), c) == read.end())
      read.push_back(c);
  REEL_ASSIGN_OR_RETURN(std::vector<int> leaves, internal::LeafIndices(*reader, read, path));

  const auto metadata = reader->parquet_reader()->metadata();
  const int64_t file_rows = metadata->num_rows();
  // One episode per file (v2.x, bundle): the file is exactly the episode.
  const bool whole_file = format != DatasetFormat::kLeRobotV3;
  if ((whole_file && file_rows != e.length) || file_rows < e.to_row) {
    const std::string rule = bundle ? kRuleLength : kRuleDataRows;
    if (!sink.Error(rule, e.data_path,
                    path + ": " + std::to_string(file_rows) + " rows, but " + who + " has length " +
                        std::to_string(e.length) +
                        (whole_file ? std::string()
                                    : " at rows [" + std::to_string(e.from_row) + ", " +
                                          std::to_string(e.to_row) + ")")))
      return sink.status();
    if (file_rows < e.to_row) return Status::Invalid(path + ": too few rows for " + who);
  }
  std::vector<int> groups;
  int64_t start = 0, first_start = -1;
  for (int g = 0; g < metadata->num_row_groups(); ++g) {
    const int64_t n = metadata->RowGroup(g)->num_rows();
    if (start < e.to_row && start + n > e.from_row) {
      groups.push_back(g);
      if (first_start < 0) first_start = start;
    }
    start += n;
  }
  std::shared_ptr<arrow::Table> table;
  try {
    auto t = reader->ReadRowGroups(groups, leaves);
    if (!t.ok()) return Status::Corruption(path + ": unreadable rows (" + t.status().message() + ")");
    table = *t;
  } catch (const std::exception& ex) {
    return Status::Corruption(path + ": unreadable rows (" + ex.what() + ")");
  }
  if (first_start >= 0) table = table->Slice(e.from_row - first_start, e.length);

  for (const std::string& c : checks) {
    auto col = table->GetColumnByName(c);
    if (!col) continue;
    const int64_t expect = c == "episode_index" ? e.episode_index
                           : c == "index"       ? e.dataset_from_index
                                                : 0;
    const int64_t step = c == "episode_index" ? 0 : 1;
    REEL_ASSIGN_OR_RETURN(auto bad, FirstMismatch(*col, expect, step, path + " column \"" + c + "\""));
    if (!bad) continue;
    const std::string rule = c == "step" ? kRuleStep : c == "index" ? kRuleIndexContiguous : kRuleDataRows;
    const std::string expected = c == "step" ? "0..n-1"
                                 : c == "index"
                                     ? "dataset_from_index + row = " + std::to_string(expect + bad->first)
                                     : std::to_string(expect);
    if (!sink.Error(rule, e.data_path,
                    path + ": " + who + " row " + std::to_string(bad->first) + " (file row " +
                        std::to_string(e.from_row + bad->first) + ") has " + c + " " +
                        std::to_string(bad->second) + ", expected " + expected))
      return sink.status();
  }
  std::vector<int> keep;
  for (const std::string& name : wanted) keep.push_back(table->schema()->GetFieldIndex(name));
  auto selected = table->SelectColumns(keep);
  if (!selected.ok()) return Status::Invalid(path + ": " + selected.status().message());
  return *selected;
}

}  // namespace foreign

Result<std::shared_ptr<arrow::Table>> ForeignDataset::ReadFrames(
    const ForeignEpisode& episode, const std::vector<std::string>& columns) const {
  Sink sink(/*strict=*/true);
  return ReadEpisodeRows(fs_, root_, info_.format, episode, columns, sink);
}

Result<VideoTargets> ForeignDataset::FindVideoTargets(const ForeignEpisode& episode,
                                                      const std::string& key) const {
  const VideoSpan* span = nullptr;
  std::string keys;
  for (const VideoSpan& v : episode.videos) {
    if (v.key == key) span = &v;
    keys += (keys.empty() ? "" : ", ") + v.key;
  }
  if (!span)
    return Status::NotFound(root_ + ": " + EpisodeName(episode.episode_index) + " has no video \"" +
                            key + "\" (its video keys: " + (keys.empty() ? "none" : keys) + ")");
  VideoTargets t;
  t.path = JoinPath(root_, span->path);
  t.tolerance_s = 0.5 / info_.fps;
  if (info_.format == DatasetFormat::kBundle) {
    // Bundle invariant: parquet row i is frame i of every video.
    t.by_index = true;
    for (int64_t i = 0; i < episode.length; ++i) t.frame.push_back(i);
    return t;
  }
  // LeRobot: the frame shown at row i is the one at from_timestamp + timestamp.
  REEL_ASSIGN_OR_RETURN(auto table, ReadFrames(episode, {"timestamp"}));
  const auto& ts = *table->column(0);
  const std::string what = JoinPath(root_, episode.data_path) + " column \"timestamp\"";
  for (int64_t i = 0; i < table->num_rows(); ++i) {
    REEL_ASSIGN_OR_RETURN(double s, DoubleAt(ts, i, what + " row " + std::to_string(i)));
    t.time_s.push_back(span->from_timestamp + s);
  }
  return t;
}

Status ForeignDataset::ReadVideoRgb(const ForeignEpisode& episode, const std::string& key,
                                    std::span<const int64_t> rows, VideoInfo* info,
                                    std::vector<uint8_t>* out) const {
  REEL_ASSIGN_OR_RETURN(VideoTargets t, FindVideoTargets(episode, key));
  for (int64_t r : rows)
    if (r < 0 || r >= episode.length)
      return Status::Invalid(root_ + ": " + EpisodeName(episode.episode_index) + " has rows 0.." +
                             std::to_string(episode.length - 1) + ", not row " + std::to_string(r));
  VideoReaderOptions read_options;
  read_options.fs = fs_;  // the dataset's FileSystem (null: the local one)
  REEL_ASSIGN_OR_RETURN(auto reader, VideoReader::Open(t.path, read_options));
  const VideoInfo& vi = reader->info();
  if (info) *info = vi;
  if (!out) return Status::OK();
  out->resize(rows.size() * static_cast<size_t>(vi.width) * vi.height * 3);
  if (t.by_index) {
    std::vector<int64_t> frames(rows.begin(), rows.end());
    if (vi.frames < episode.length)
      return Status::Invalid(t.path + ": " + std::to_string(vi.frames) + " frames, but " +
                             EpisodeName(episode.episode_index) + " has length " +
                             std::to_string(episode.length) + " (row i = frame i)");
    return reader->ReadRgb(frames, *out);
  }
  std::vector<double> times;
  for (int64_t r : rows) times.push_back(t.time_s[static_cast<size_t>(r)]);
  return reader->ReadRgbAt(times, t.tolerance_s, *out);
}

}  // namespace reel
