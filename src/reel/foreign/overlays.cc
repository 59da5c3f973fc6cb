// Bundle overlays (reel/dataset.h OverlayKind): the rules a file must keep, the reader,
// the listing and the check. The writer is interop/overlay_writer.cc.
#include <arrow/api.h>
#include <parquet/arrow/reader.h>

#include <algorithm>
#include <map>
#include <set>

#include "foreign/internal.h"
#include "io/parquet_io.h"
#include "layout/confined.h"

namespace reel {

using namespace foreign;

const char* OverlayKindName(OverlayKind kind) { return kind == OverlayKind::kDense ? "dense" : "spans"; }

namespace foreign {
namespace {

constexpr const char* kOverlaysDir = "overlays";
constexpr const char* kStep = "step";
constexpr const char* kStartStep = "start_step";
constexpr const char* kEndStep = "end_step";

bool IsKeyColumn(const std::string& name) { return name == kStep || name == kStartStep || name == kEndStep; }

// The int64 key column `name`, without nulls, as one contiguous vector.
Result<std::vector<int64_t>> KeyValues(const arrow::Table& table, const std::string& name, const std::string& what) {
  auto column = table.GetColumnByName(name);
  if (column->type()->id() != arrow::Type::INT64)
    return Status::Invalid(what + ": \"" + name + "\" must be int64, found " + column->type()->ToString());
  if (column->null_count() > 0)
    return Status::Invalid(what + ": \"" + name + "\" holds " + std::to_string(column->null_count()) + " nulls");
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(column->length()));
  for (const auto& chunk : column->chunks()) {
    const auto& a = static_cast<const arrow::Int64Array&>(*chunk);
    out.insert(out.end(), a.raw_values(), a.raw_values() + a.length());
  }
  return out;
}

Status CheckDense(const arrow::Table& table, int64_t length, const std::string& what) {
  if (table.num_rows() != length)
    return Status::Invalid(what + ": a dense overlay has one row per step, " + std::to_string(length) +
                           " for this episode, found " + std::to_string(table.num_rows()));
  REEL_ASSIGN_OR_RETURN(std::vector<int64_t> step, KeyValues(table, kStep, what));
  for (int64_t i = 0; i < length; ++i)
    if (step[static_cast<size_t>(i)] != i)
      return Status::Invalid(what + ": row " + std::to_string(i) + " has step " +
                             std::to_string(step[static_cast<size_t>(i)]) + "; a dense overlay's step is 0.." +
                             std::to_string(length - 1) + " in order");
  return Status::OK();
}

Status CheckSpans(const arrow::Table& table, int64_t length, const std::string& what) {
  REEL_ASSIGN_OR_RETURN(std::vector<int64_t> start, KeyValues(table, kStartStep, what));
  REEL_ASSIGN_OR_RETURN(std::vector<int64_t> end, KeyValues(table, kEndStep, what));
  for (size_t i = 0; i < start.size(); ++i)
    if (start[i] < 0 || start[i] >= end[i] || end[i] > length)
      return Status::Invalid(what + ": row " + std::to_string(i) + " spans [" + std::to_string(start[i]) + ", " +
                             std::to_string(end[i]) + "); a span needs 0 <= start_step < end_step <= " +
                             std::to_string(length) + " (the episode's length)");
  return Status::OK();
}

// The kind a schema's key columns name, or Invalid.
Result<OverlayKind> KindOf(const arrow::Schema& schema, const std::string& what) {
  const bool step = schema.GetFieldIndex(kStep) >= 0;
  const bool start = schema.GetFieldIndex(kStartStep) >= 0;
  const bool end = schema.GetFieldIndex(kEndStep) >= 0;
  if (step && !start && !end) return OverlayKind::kDense;
  if (!step && start && end) return OverlayKind::kSpans;
  return Status::Invalid(what + ": an overlay has either a \"step\" column (dense) or \"start_step\" and "
                         "\"end_step\" columns (spans), found columns " + schema.ToString(false).substr(0, 300));
}

// Overlay directories under overlays/ (none when it is absent). A name that breaks the
// naming rule or is a link goes to `strays`.
Result<std::vector<std::string>> OverlayNames(FileSystem* fs, const std::string& root,
                                              std::vector<std::string>* strays) {
  const std::string dir = JoinPath(root, kOverlaysDir);
  REEL_RETURN_IF_ERROR(internal::CheckBeneath(fs, root, kOverlaysDir, "overlays"));
  REEL_ASSIGN_OR_RETURN(FileInfo info, fs->Stat(dir));
  if (info.type == FileType::kNotFound) return std::vector<std::string>{};
  if (info.type != FileType::kDirectory) return Status::Invalid(dir + ": must be a directory of overlays");
  REEL_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, fs->ListDir(dir));
  std::vector<std::string> names;
  for (const DirEntry& e : entries) {
    if (!e.name.empty() && e.name[0] == '.') continue;
    if (e.type == FileType::kDirectory && !e.symlink && IsOverlayName(e.name))
      names.push_back(e.name);
    else if (strays)
      strays->push_back(e.name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Reads the overlay file at `path` (at most kMaxOverlayBytes) and checks it against an
// episode of `length` steps. The caller has made sure no link is on the way.
Result<std::shared_ptr<arrow::Table>> ReadOverlayTable(FileSystem* fs, const std::string& path, int64_t length) {
  REEL_ASSIGN_OR_RETURN(FileInfo info, fs->Stat(path));
  if (info.type == FileType::kNotFound) return Status::NotFound(path + ": no such overlay file");
  if (info.type != FileType::kFile) return Status::Invalid(path + ": an overlay must be a regular file");
  if (static_cast<int64_t>(info.size) > kMaxOverlayBytes)
    return Status::Invalid(path + ": " + std::to_string(info.size) + " bytes, over the overlay limit of " +
                           std::to_string(kMaxOverlayBytes));
  REEL_ASSIGN_OR_RETURN(auto table, internal::ReadParquetTable(fs, path, {}, false));
  REEL_RETURN_IF_ERROR(CheckOverlayTable(*table, length, path).status());
  return table;
}

}  // namespace

Result<std::vector<std::string>> OverlayEpisodes(FileSystem* fs, const std::string& root, const std::string& name,
                                                 std::vector<std::string>* strays) {
  const std::string dir = JoinPath(root, std::string(kOverlaysDir) + "/" + name);
  REEL_ASSIGN_OR_RETURN(FileInfo info, fs->Stat(dir));
  if (info.type == FileType::kNotFound) return std::vector<std::string>{};
  REEL_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, fs->ListDir(dir));
  std::vector<std::string> ids;
  const std::string suffix = ".parquet";
  for (const DirEntry& e : entries) {
    if (!e.name.empty() && e.name[0] == '.') continue;
    const bool parquet = e.name.size() > suffix.size() && e.name.ends_with(suffix);
    if (parquet && e.type == FileType::kFile && !e.symlink)
      ids.push_back(e.name.substr(0, e.name.size() - suffix.size()));
    else if (strays)
      strays->push_back(e.name);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

bool IsOverlayName(const std::string& name) {
  if (name.empty() || name.size() > 100 || name[0] == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-';
  });
}

std::string OverlayRelPath(const std::string& name, const std::string& bundle_id) {
  return std::string(kOverlaysDir) + "/" + name + "/" + bundle_id + ".parquet";
}

Result<OverlayKind> CheckOverlayTable(const arrow::Table& table, int64_t length, const std::string& what) {
  REEL_ASSIGN_OR_RETURN(OverlayKind kind, KindOf(*table.schema(), what));
  std::set<std::string> seen;
  for (const auto& field : table.schema()->fields())
    if (!seen.insert(field->name()).second)
      return Status::Invalid(what + ": column \"" + field->name() + "\" appears twice");
  if (table.num_columns() == (kind == OverlayKind::kDense ? 1 : 2))
    return Status::Invalid(what + ": an overlay needs at least one value column beside its key columns");
  REEL_RETURN_IF_ERROR(kind == OverlayKind::kDense ? CheckDense(table, length, what)
                                                   : CheckSpans(table, length, what));
  return kind;
}

Result<std::vector<std::string>> OverlaySignature(const arrow::Schema& schema, const std::string& what) {
  REEL_ASSIGN_OR_RETURN(OverlayKind kind, KindOf(schema, what));
  std::vector<std::string> out = {OverlayKindName(kind)};
  for (const auto& field : schema.fields())
    if (!IsKeyColumn(field->name())) out.push_back(field->name() + ": " + field->type()->ToString());
  return out;
}

std::vector<std::string> OverlayValueColumns(const arrow::Schema& schema) {
  std::vector<std::string> out;
  for (const auto& field : schema.fields())
    if (!IsKeyColumn(field->name())) out.push_back(field->name());
  return out;
}

Result<std::shared_ptr<arrow::Schema>> FooterSchema(FileSystem* fs, const std::string& path) {
  REEL_ASSIGN_OR_RETURN(auto reader, internal::OpenParquet(fs, path, false));
  std::shared_ptr<arrow::Schema> schema;
  auto st = reader->GetSchema(&schema);
  if (!st.ok()) return Status::Corruption(path + ": " + st.ToString());
  return schema;
}

Result<std::shared_ptr<arrow::Table>> ReadOverlayFile(FileSystem* fs, const std::string& root,
                                                      const std::string& rel, int64_t length) {
  const std::string path = JoinPath(root, rel);
  REEL_RETURN_IF_ERROR(internal::CheckBeneath(fs, root, rel, path));
  return ReadOverlayTable(fs, path, length);
}

void CheckOverlays(FileSystem* fs, const std::string& root, const std::vector<ForeignEpisode>& episodes,
                   Sink& sink) {
  std::vector<std::string> strays;
  auto names = OverlayNames(fs, root, &strays);
  if (!names.ok()) {
    sink.Error(kRuleOverlay, kOverlaysDir, names.status().message(), names.status().code());
    return;
  }
  for (const std::string& s : strays)
    sink.Error(kRuleOverlay, std::string(kOverlaysDir) + "/" + s,
               JoinPath(root, std::string(kOverlaysDir) + "/" + s) +
                   ": not an overlay (a directory named by 1-100 of [A-Za-z0-9_.-], not a link)");
  std::map<std::string, const ForeignEpisode*> by_id;
  for (const ForeignEpisode& e : episodes) by_id[e.bundle_id] = &e;
  for (const std::string& name : *names) {
    std::vector<std::string> odd;
    auto ids = OverlayEpisodes(fs, root, name, &odd);
    if (!ids.ok()) {
      sink.Error(kRuleOverlay, std::string(kOverlaysDir) + "/" + name, ids.status().message(), ids.status().code());
      continue;
    }
    for (const std::string& s : odd)
      sink.Error(kRuleOverlay, std::string(kOverlaysDir) + "/" + name + "/" + s,
                 JoinPath(root, std::string(kOverlaysDir) + "/" + name + "/" + s) +
                     ": not an overlay file (<bundle id>.parquet, a regular file)");
    std::vector<std::string> first_schema;
    std::string first_rel;
    for (const std::string& id : *ids) {
      const std::string rel = OverlayRelPath(name, id);
      auto e = by_id.find(id);
      if (e == by_id.end()) {
        sink.Error(kRuleOverlay, rel, JoinPath(root, rel) + ": manifest.json lists no episode \"" + id + "\"");
        continue;
      }
      // No link on the way: overlays/ was checked, and the listings above keep no link.
      // (A CheckBeneath per file would list the overlay's directory once per file.)
      auto table = ReadOverlayTable(fs, JoinPath(root, rel), e->second->length);
      if (!table.ok()) {
        sink.Error(kRuleOverlay, rel, table.status().message(), table.status().code());
        continue;
      }
      std::vector<std::string> schema = *OverlaySignature(*(*table)->schema(), rel);  // checked above
      if (first_rel.empty()) {
        first_rel = rel;
        first_schema = schema;
      } else if (schema != first_schema) {
        sink.Error(kRuleOverlay, rel, JoinPath(root, rel) + ": kind or value columns differ from " + first_rel +
                                          " (all files of overlay \"" + name + "\" hold the same columns)");
      }
    }
  }
}

}  // namespace foreign

Result<const ForeignEpisode*> FindBundleEpisode(const std::vector<ForeignEpisode>& episodes,
                                                const std::string& episode, const std::string& root) {
  for (const ForeignEpisode& e : episodes)
    if (e.bundle_id == episode) return &e;
  const bool digits = !episode.empty() && episode.size() < 19 &&
                      std::all_of(episode.begin(), episode.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (digits) {
    const int64_t n = std::stoll(episode);
    if (n < static_cast<int64_t>(episodes.size())) return &episodes[static_cast<size_t>(n)];
  }
  return Status::NotFound(root + ": no episode \"" + episode.substr(0, 120) + "\" (a bundle id of manifest.json, or " +
                          "a position 0.." + std::to_string(static_cast<int64_t>(episodes.size()) - 1) + ")");
}

Result<const ForeignEpisode*> FindForeignEpisode(const std::vector<ForeignEpisode>& episodes, int64_t n,
                                                 const std::string& root) {
  for (const ForeignEpisode& e : episodes)
    if (e.episode_index == n) return &e;
  return Status::NotFound(root + ": no episode " + std::to_string(n) + " (episodes 0.." +
                          std::to_string(static_cast<int64_t>(episodes.size()) - 1) + ")");
}

Result<std::vector<OverlayInfo>> ForeignDataset::ListOverlays() const {
  if (info_.format != DatasetFormat::kBundle)
    return Status::NotSupported(root_ + ": overlays belong to bundle datasets (seed 004), this is " +
                                DatasetFormatName(info_.format));
  REEL_ASSIGN_OR_RETURN(std::vector<std::string> names, OverlayNames(fs_, root_, nullptr));
  std::vector<OverlayInfo> out;
  for (const std::string& name : names) {
    OverlayInfo o;
    o.name = name;
    REEL_ASSIGN_OR_RETURN(o.episodes, OverlayEpisodes(fs_, root_, name, nullptr));
    if (!o.episodes.empty()) {
      const std::string path = JoinPath(root_, OverlayRelPath(name, o.episodes.front()));
      REEL_ASSIGN_OR_RETURN(auto schema, FooterSchema(fs_, path));
      REEL_ASSIGN_OR_RETURN(o.kind, KindOf(*schema, path));
      o.columns = OverlayValueColumns(*schema);
    }
    out.push_back(std::move(o));
  }
  return out;
}

Result<std::shared_ptr<arrow::Table>> ForeignDataset::ReadOverlay(const ForeignEpisode& episode,
                                                                  const std::string& name) const {
  if (info_.format != DatasetFormat::kBundle)
    return Status::NotSupported(root_ + ": overlays belong to bundle datasets (seed 004), this is " +
                                DatasetFormatName(info_.format));
  if (!IsOverlayName(name))
    return Status::Invalid(root_ + ": overlay name \"" + name.substr(0, 120) +
                           "\" is not 1-100 of [A-Za-z0-9_.-] starting with no '.'");
  auto table = ReadOverlayFile(fs_, root_, OverlayRelPath(name, episode.bundle_id), episode.length);
  if (table.status().code() == StatusCode::kNotFound)
    return Status::NotFound(root_ + ": " + EpisodeName(episode.episode_index) + " (id " + episode.bundle_id +
                            ") has no overlay \"" + name + "\"");
  return table;
}

}  // namespace reel
