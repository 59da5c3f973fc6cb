#include "read/episode_index.h"

#include <arrow/api.h>
#include <arrow/array/builder_dict.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/reader.h>
#include <arrow/ipc/writer.h>

#include <chrono>
#include <functional>
#include <limits>
#include <span>
#include <string_view>
#include <unordered_map>

#include "io/json_file.h"
#include "io/parquet_io.h"
#include "layout/journal.h"
#include "util/parallel.h"

namespace reel::internal {
namespace {

// Bumped when the columns change; an index of another version loads empty.
constexpr const char* kVersionKey = "reel.episode_index";
constexpr const char* kVersion = "2";

// The index's columns, in file order.
struct Columns {
  arrow::Int64Builder n, row_size, row_mtime, data_size, data_mtime;
  arrow::Int64Builder task_index, start, end, length;
  arrow::DoubleBuilder created_at, duration;
  arrow::StringBuilder row_path, data_path;
  // Values that repeat across episodes (most share one schema and one calibration) are
  // dictionary-encoded, in the file and in memory once loaded.
  arrow::StringDictionary32Builder drop_stats, video_codec, calibration, fm_specs, slam_specs, missing;
  arrow::BinaryDictionary32Builder data_schema;
};

std::string JoinLines(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : "\n") + s;
  return out;
}

std::vector<std::string> SplitLines(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const size_t end = std::min(text.find('\n'), text.size());
    out.emplace_back(text.substr(0, end));
    text.remove_prefix(std::min(end + 1, text.size()));
  }
  return out;
}

template <typename Builder, typename T>
void AppendOr(Builder& b, bool present, const T& value) {
  (void)(present ? b.Append(value) : b.AppendNull());
}

// A typed column of `table` by name, or null when absent or of another type.
template <typename ArrayType>
std::shared_ptr<ArrayType> Col(const arrow::Table& table, const char* name) {
  auto column = table.GetColumnByName(name);
  if (!column || column->num_chunks() != 1) return nullptr;
  return std::dynamic_pointer_cast<ArrayType>(column->chunk(0));
}

// A dictionary-encoded string or binary column of `table`; `array` null when absent or of
// another type. A key outside the dictionary (a damaged file) reads as null.
struct DictColumn {
  std::shared_ptr<arrow::DictionaryArray> array;
  std::shared_ptr<arrow::BinaryArray> values;  // arrow::StringArray is one too

  static DictColumn Of(const arrow::Table& table, const char* name) {
    DictColumn c;
    auto dict = Col<arrow::DictionaryArray>(table, name);
    if (!dict) return c;
    const arrow::Type::type type = dict->dictionary()->type_id();
    if (type != arrow::Type::STRING && type != arrow::Type::BINARY) return c;
    c.values = std::static_pointer_cast<arrow::BinaryArray>(dict->dictionary());
    c.array = std::move(dict);
    return c;
  }
  // The dictionary slot of row i, or -1 for a null.
  int64_t Key(int64_t i) const {
    if (array->IsNull(i)) return -1;
    const int64_t key = array->GetValueIndex(i);
    return key >= 0 && key < values->length() && values->IsValid(key) ? key : -1;
  }
  bool IsValid(int64_t i) const { return Key(i) >= 0; }
  std::string View(int64_t i) const {
    const int64_t key = Key(i);
    return key < 0 ? std::string() : std::string(values->GetView(key));
  }
};

// A list<int64> column read row by row; a row of another length than asked (or an absent
// column, or a null) reads empty.
struct FlatInt64List {
  std::shared_ptr<arrow::ListArray> lists;
  std::shared_ptr<arrow::Int64Array> values;

  FlatInt64List(const arrow::Table& table, const char* name) : lists(Col<arrow::ListArray>(table, name)) {
    if (lists) values = std::dynamic_pointer_cast<arrow::Int64Array>(lists->values());
  }
  std::span<const int64_t> Row(int64_t i, size_t expected) const {
    if (!values || lists->IsNull(i) || static_cast<size_t>(lists->value_length(i)) != expected) return {};
    const int64_t offset = lists->value_offset(i);
    if (offset < 0 || offset + static_cast<int64_t>(expected) > values->length() || values->null_count() > 0) return {};
    return {values->raw_values() + offset, expected};
  }
};

Result<std::shared_ptr<arrow::Schema>> SchemaFromBytes(std::string_view bytes) {
  arrow::io::BufferReader reader(std::make_shared<arrow::Buffer>(
      reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<int64_t>(bytes.size())));
  arrow::ipc::DictionaryMemo memo;
  auto schema = arrow::ipc::ReadSchema(&reader, &memo);
  if (!schema.ok()) return Status::Corruption(schema.status().ToString());
  return *schema;
}

}  // namespace

namespace {

// The clock file systems stamp modification times with (CLOCK_REALTIME).
int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

namespace {

// Paths grouped by their directory, so that each directory is resolved once.
using DirGroups = std::vector<std::pair<std::string_view, std::vector<size_t>>>;

DirGroups GroupByDir(const std::vector<std::string>& relatives) {
  std::map<std::string_view, std::vector<size_t>> by_dir;
  for (size_t i = 0; i < relatives.size(); ++i) {
    if (relatives[i].empty()) continue;
    const size_t slash = relatives[i].rfind('/');
    by_dir[slash == std::string::npos ? std::string_view() : std::string_view(relatives[i]).substr(0, slash)]
        .push_back(i);
  }
  return DirGroups(by_dir.begin(), by_dir.end());
}

// The position of the file `name` in `entries` (sorted by name, as ListDir gives them).
std::optional<size_t> FileAt(const std::vector<DirEntry>& entries, std::string_view name) {
  auto it = std::lower_bound(entries.begin(), entries.end(), name,
                             [](const DirEntry& e, std::string_view n) { return e.name < n; });
  if (it == entries.end() || it->name != name || it->type != FileType::kFile) return std::nullopt;
  return static_cast<size_t>(it - entries.begin());
}

std::string_view NameIn(std::string_view dir, const std::string& relative) {
  return std::string_view(relative).substr(dir.empty() ? 0 : dir.size() + 1);
}

// Stats relatives[i] for each i of `members` (all in `dir`) into out[i].
void StatMembers(FileSystem* fs, const std::string& root, std::string_view dir, const std::vector<size_t>& members,
                 const std::vector<std::string>& relatives, int64_t settled_before,
                 std::vector<std::optional<FileStamp>>& out) {
  if (members.empty()) return;
  std::vector<std::string> names;
  names.reserve(members.size());
  for (size_t i : members) names.emplace_back(NameIn(dir, relatives[i]));
  std::vector<Result<FileInfo>> infos = fs->StatMany(JoinPath(root, std::string(dir)), names);
  for (size_t k = 0; k < members.size(); ++k) {
    const Result<FileInfo>& info = infos[k];
    if (!info.ok() || info->type != FileType::kFile) continue;
    out[members[k]] = FileStamp{relatives[members[k]], info->size, info->mtime_ns,
                                info->mtime_ns != 0 && info->mtime_ns < settled_before};
  }
}

}  // namespace

std::vector<std::optional<FileStamp>> StampAll(FileSystem* fs, const std::string& root,
                                               const std::vector<std::string>& relatives, int threads) {
  const int64_t settled_before = NowNs() - kSettleNs;
  const DirGroups groups = GroupByDir(relatives);
  std::vector<std::optional<FileStamp>> out(relatives.size());
  ParallelFor(static_cast<int64_t>(groups.size()), threads, [&](int64_t g) {
    StatMembers(fs, root, groups[g].first, groups[g].second, relatives, settled_before, out);
  });
  return out;
}

namespace {

// One of the index's files as a table in one chunk, or null when it is missing, too large,
// unreadable or of another version: it is then rebuilt by use.
std::shared_ptr<arrow::Table> LoadTable(FileSystem* fs, const std::string& path) {
  // A cache is never worth more memory than this (about 200 bytes per episode remembered;
  // a file past it is damaged or not ours).
  constexpr int64_t kMaxIndexBytes = int64_t{512} << 20;
  // Read whole, then decoded from memory: on an object store one GET, where the parquet
  // reader's ranged reads (footer, then column chunks) would be several.
  auto bytes = ReadFileBounded(fs, path, kMaxIndexBytes);
  if (!bytes.ok()) return nullptr;
  auto in = std::make_shared<arrow::io::BufferReader>(arrow::Buffer::FromString(std::move(*bytes)));
  auto reader = OpenParquetFile(std::move(in), path, false);
  if (!reader.ok()) return nullptr;
  auto read = ReadColumns(**reader, {}, path);
  if (!read.ok()) return nullptr;
  auto table = (*read)->CombineChunks();
  if (!table.ok()) return nullptr;
  auto meta = (*table)->schema()->metadata();
  if (!meta || meta->Get(kVersionKey).ValueOr("") != kVersion) return nullptr;
  return *table;
}


// Writes `table` to `relative` under `root`: a temp beside it renamed over it; on a store
// without atomic rename (an object store, whose object appears whole when its upload
// completes, as for WriteFileAtomic) written in place. (Were such a store to show a torn
// file, the load would find no footer and load empty: a cache costs reads, never answers.)
Status ReplaceFile(FileSystem* fs, const std::string& root, const char* relative, const arrow::Table& table) {
  const std::string path = JoinPath(root, relative);
  if (!fs->Capabilities().atomic_rename) return WriteParquet(fs, path, table);
  const std::string temp = TempPathFor(path, "index");
  Status st = WriteParquet(fs, temp, table);
  if (st.ok()) st = fs->Rename(temp, path);
  if (!st.ok()) (void)fs->RemoveFile(temp);
  return st;
}

}  // namespace

struct EpisodeIndex::Loaded {
  std::shared_ptr<arrow::Table> table;  // owns the arrays' buffers
  std::shared_ptr<arrow::Int64Array> n, row_size, row_mtime, data_size, data_mtime, task_index, start, end, length;
  std::shared_ptr<arrow::DoubleArray> created, duration;
  std::shared_ptr<arrow::StringArray> row_path, data_path;
  DictColumn drop, codec, calib, fm, slam, missing, schema;
  std::unordered_map<int64_t, int64_t> row_of;  // N -> table row

  // Null when a column is missing or of another type: the file is then not used.
  static std::unique_ptr<Loaded> From(std::shared_ptr<arrow::Table> table);

  bool RowMatches(int64_t i, const FileStamp& now) const {
    return row_path->IsValid(i) && row_path->GetView(i) == now.path &&
           static_cast<uint64_t>(row_size->Value(i)) == now.size && row_mtime->Value(i) == now.mtime_ns;
  }
  bool DataMatches(int64_t i, const FileStamp& now) const {
    return data_path->IsValid(i) && schema.IsValid(i) && data_path->GetView(i) == now.path &&
           static_cast<uint64_t>(data_size->Value(i)) == now.size && data_mtime->Value(i) == now.mtime_ns;
  }
  // `columns`: the row's string columns to fill (empty: all); the others keep their
  // defaults, as Task::ReadEpisodeRows promises (a listing of lengths builds no calibration).
  EpisodeRow RowAt(int64_t i, const std::vector<std::string>& columns) const {
    auto want = [&](const char* c) {
      return columns.empty() || std::find(columns.begin(), columns.end(), c) != columns.end();
    };
    EpisodeRow r;
    r.episode_index = n->Value(i);
    r.task_index = task_index->Value(i);
    r.start_frame_index = start->Value(i);
    r.end_frame_index = end->Value(i);
    r.length = length->Value(i);
    r.created_at = created->Value(i);
    r.duration_sec = duration->Value(i);
    if (want("drop_stats")) r.drop_stats = drop.View(i);
    if (want("video_codec")) r.video_codec = codec.View(i);
    if (want("calibration")) r.calibration = calib.View(i);
    if (want("force_matrix_specs")) r.force_matrix_specs = fm.View(i);
    if (want("slam_specs")) r.slam_specs = slam.View(i);
    r.missing_columns = SplitLines(missing.View(i));
    return r;
  }
  std::optional<int64_t> Find(int64_t episode) const {
    auto it = row_of.find(episode);
    if (it == row_of.end()) return std::nullopt;
    return it->second;
  }
};

std::unique_ptr<EpisodeIndex::Loaded> EpisodeIndex::Loaded::From(std::shared_ptr<arrow::Table> table) {
  auto l = std::make_unique<Loaded>();
  const arrow::Table& t = *table;
  l->table = std::move(table);
  l->n = Col<arrow::Int64Array>(t, "episode_index");
  l->row_path = Col<arrow::StringArray>(t, "row_path"), l->data_path = Col<arrow::StringArray>(t, "data_path");
  l->row_size = Col<arrow::Int64Array>(t, "row_size"), l->row_mtime = Col<arrow::Int64Array>(t, "row_mtime_ns");
  l->data_size = Col<arrow::Int64Array>(t, "data_size"), l->data_mtime = Col<arrow::Int64Array>(t, "data_mtime_ns");
  l->task_index = Col<arrow::Int64Array>(t, "task_index"), l->start = Col<arrow::Int64Array>(t, "start_frame_index");
  l->end = Col<arrow::Int64Array>(t, "end_frame_index"), l->length = Col<arrow::Int64Array>(t, "length");
  l->created = Col<arrow::DoubleArray>(t, "created_at"), l->duration = Col<arrow::DoubleArray>(t, "duration_sec");
  l->drop = DictColumn::Of(t, "drop_stats"), l->codec = DictColumn::Of(t, "video_codec");
  l->calib = DictColumn::Of(t, "calibration"), l->fm = DictColumn::Of(t, "force_matrix_specs");
  l->slam = DictColumn::Of(t, "slam_specs"), l->missing = DictColumn::Of(t, "missing_columns");
  l->schema = DictColumn::Of(t, "data_schema");
  for (const arrow::Array* c : std::initializer_list<const arrow::Array*>{
           l->n.get(), l->row_path.get(), l->data_path.get(), l->row_size.get(), l->row_mtime.get(),
           l->data_size.get(), l->data_mtime.get(), l->task_index.get(), l->start.get(), l->end.get(),
           l->length.get(), l->created.get(), l->duration.get()})
    if (c == nullptr) return nullptr;  // another layout: rebuilt by use
  for (const DictColumn* c : {&l->drop, &l->codec, &l->calib, &l->fm, &l->slam, &l->missing, &l->schema})
    if (!c->array) return nullptr;
  l->row_of.reserve(static_cast<size_t>(t.num_rows()));
  for (int64_t i = 0; i < t.num_rows(); ++i)
    if (l->n->IsValid(i)) l->row_of[l->n->Value(i)] = i;  // a duplicate N: the last row
  return l;
}

EpisodeIndex::EpisodeIndex() = default;
EpisodeIndex::~EpisodeIndex() = default;

std::unique_ptr<EpisodeIndex> EpisodeIndex::Load(FileSystem* fs, const std::string& root) {
  auto index = std::make_unique<EpisodeIndex>();
  index->LoadListings(fs, root);
  if (std::shared_ptr<arrow::Table> table = LoadTable(fs, JoinPath(root, kEpisodeIndexPath)))
    index->loaded_ = Loaded::From(std::move(table));
  // Decoding left the pool's freed buffers in its thread caches (mimalloc keeps them): about
  // 50 MB of a listing's peak at 100,000 episodes. Nothing to hand back when nothing loaded.
  if (index->loaded_ || !index->listings_.empty()) arrow::default_memory_pool()->ReleaseUnused();
  return index;
}

std::optional<EpisodeRow> EpisodeIndex::Row(int64_t n, const FileStamp& now,
                                             const std::vector<std::string>& columns) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(n);
    if (it != entries_.end() && it->second.row) {
      if (it->second.row_file != now) return std::nullopt;
      return it->second.row;
    }
  }
  // loaded_ is immutable: read without the lock.
  std::optional<int64_t> i = loaded_ ? loaded_->Find(n) : std::nullopt;
  if (!i || !loaded_->RowMatches(*i, now)) return std::nullopt;
  return loaded_->RowAt(*i, columns);
}

std::shared_ptr<arrow::Schema> EpisodeIndex::DataSchema(int64_t n, const FileStamp& now) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(n);
  if (it != entries_.end() && it->second.data_schema)
    return it->second.data_file == now ? it->second.data_schema : nullptr;
  std::optional<int64_t> i = loaded_ ? loaded_->Find(n) : std::nullopt;
  if (!i || !loaded_->DataMatches(*i, now)) return nullptr;
  // Most episodes share one schema: each distinct serialisation is deserialised once.
  return LoadedSchemaLocked(*i);
}

void EpisodeIndex::PutRow(int64_t n, const FileStamp& read, EpisodeRow row) {
  if (!read.settled) return;
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = entries_[n];
  e.row_file = read;
  e.row = std::move(row);
  changed_ = true;
}

void EpisodeIndex::PutDataSchema(int64_t n, const FileStamp& read, std::shared_ptr<arrow::Schema> schema) {
  if (!read.settled) return;
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = entries_[n];
  e.data_file = read;
  e.data_schema = std::move(schema);
  changed_ = true;
}

std::shared_ptr<arrow::Schema> EpisodeIndex::LoadedSchemaLocked(int64_t i) const {
  const int64_t key = loaded_->schema.Key(i);
  if (key < 0) return nullptr;
  // Most episodes share one schema: each dictionary slot is deserialised once.
  std::shared_ptr<arrow::Schema>& memo = schemas_[key];
  if (!memo) memo = SchemaFromBytes(loaded_->schema.values->GetView(key)).ValueOr(nullptr);
  return memo;
}

std::map<int64_t, EpisodeIndex::Entry> EpisodeIndex::MergedLocked() const {
  std::map<int64_t, Entry> all;
  if (loaded_) {
    const Loaded& l = *loaded_;
    for (const auto& [n, i] : l.row_of) {
      Entry e;
      if (l.row_path->IsValid(i)) {
        e.row_file = FileStamp{std::string(l.row_path->GetView(i)), static_cast<uint64_t>(l.row_size->Value(i)),
                               l.row_mtime->Value(i)};
        e.row = l.RowAt(i, {});
      }
      if (l.data_path->IsValid(i) && l.schema.IsValid(i)) {
        if (std::shared_ptr<arrow::Schema> memo = LoadedSchemaLocked(i)) {
          e.data_file = FileStamp{std::string(l.data_path->GetView(i)), static_cast<uint64_t>(l.data_size->Value(i)),
                                  l.data_mtime->Value(i)};
          e.data_schema = std::move(memo);
        }
      }
      all.emplace(n, std::move(e));
    }
  }
  for (const auto& [n, e] : entries_) {
    Entry& merged = all[n];
    if (e.row) {
      merged.row_file = e.row_file;
      merged.row = e.row;
    }
    if (e.data_schema) {
      merged.data_file = e.data_file;
      merged.data_schema = e.data_schema;
    }
  }
  return all;
}

size_t EpisodeIndex::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t count = entries_.size();
  if (loaded_)
    for (const auto& [n, i] : loaded_->row_of) count += entries_.count(n) == 0;
  return count;
}

size_t EpisodeIndex::listings() const {
  std::lock_guard<std::mutex> lock(mu_);
  return listings_.size();
}

PathTemplate::DirLister EpisodeIndex::Lister(FileSystem* fs, const std::string& root) {
  // Where directories exist only as prefixes (an object store) they have no modification
  // time to stat for, and a stat costs two requests there.
  const bool dir_times = fs->Capabilities().directories;
  return [this, fs, root, dir_times](const std::string& relative) -> Result<std::shared_ptr<const std::vector<DirEntry>>> {
    const int64_t settled_before = NowNs() - kSettleNs;
    const std::string path = JoinPath(root, relative);
    FileInfo dir;
    if (dir_times) {
      REEL_ASSIGN_OR_RETURN(dir, fs->Stat(path));
    }
    const bool stamped = dir.type == FileType::kDirectory && dir.mtime_ns != 0;
    if (stamped) {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = listings_.find(relative);
      if (it != listings_.end() && it->second.mtime_ns == dir.mtime_ns) {
        it->second.used = true;
        return it->second.Entries();
      }
    }
    // Listed after the stat: a change in between leaves the remembered mtime older than
    // the directory's, so the next lister lists it again.
    REEL_ASSIGN_OR_RETURN(std::vector<DirEntry> listed, fs->ListDir(path));
    auto entries = std::make_shared<const std::vector<DirEntry>>(std::move(listed));
    std::optional<Listing> remembered;
    if (stamped && dir.mtime_ns < settled_before) remembered = Listing::Of(dir.mtime_ns, *entries);
    if (remembered) {
      remembered->used = true;
      std::lock_guard<std::mutex> lock(mu_);
      listings_[relative] = std::move(*remembered);
      listings_changed_ = true;
    } else if (!stamped) {
      std::lock_guard<std::mutex> lock(mu_);
      fresh_[relative] = entries;  // an object store's: its files' stamps came with it
    }
    return entries;
  };
}

std::vector<std::optional<FileStamp>> EpisodeIndex::Stamp(FileSystem* fs, const std::string& root,
                                                          const std::vector<std::string>& relatives, int threads,
                                                          bool trust_listings) {
  const int64_t settled_before = NowNs() - kSettleNs;
  const DirGroups groups = GroupByDir(relatives);
  std::vector<std::optional<FileStamp>> out(relatives.size());
  ParallelFor(static_cast<int64_t>(groups.size()), threads, [&](int64_t g) {
    const auto& [dir, members] = groups[g];
    const std::string relative_dir(dir);
    if (FromFreshListing(relative_dir, dir, members, relatives, settled_before, out)) return;
    auto info = fs->Stat(JoinPath(root, relative_dir));
    const int64_t dir_mtime = info.ok() && info->type == FileType::kDirectory ? info->mtime_ns : 0;
    std::vector<size_t> unknown;
    {
      std::lock_guard<std::mutex> lock(mu_);
      Listing* listing = trust_listings ? ListingAtLocked(relative_dir, dir_mtime) : nullptr;
      for (size_t i : members) {
        const auto at = listing ? listing->At(NameIn(dir, relatives[i])) : std::nullopt;
        if (at && listing->stamps[*at].second != 0)
          out[i] = FileStamp{relatives[i], listing->stamps[*at].first, listing->stamps[*at].second, true};
        else
          unknown.push_back(i);
      }
    }
    StatMembers(fs, root, dir, unknown, relatives, settled_before, out);
    // Stamped after the directory was seen at the listing's time: remembered with it (a
    // file not settled yet, or gone, as unknown: a remembered stamp it contradicts is wrong).
    std::lock_guard<std::mutex> lock(mu_);
    Listing* listing = ListingAtLocked(relative_dir, dir_mtime);
    for (size_t i : listing ? unknown : std::vector<size_t>{}) {
      const auto at = listing->At(NameIn(dir, relatives[i]));
      if (!at) continue;
      const bool known = out[i] && out[i]->settled;
      const std::pair<uint64_t, int64_t> fresh{known ? out[i]->size : 0, known ? out[i]->mtime_ns : 0};
      std::pair<uint64_t, int64_t>& kept = listing->stamps[*at];
      if (kept == fresh) continue;
      corrected_in_place_ = corrected_in_place_ || kept.second != 0;
      kept = fresh;
      listings_changed_ = true;
    }
  });
  return out;
}

bool EpisodeIndex::FromFreshListing(const std::string& relative_dir, std::string_view dir,
                                    const std::vector<size_t>& members, const std::vector<std::string>& relatives,
                                    int64_t settled_before, std::vector<std::optional<FileStamp>>& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = fresh_.find(relative_dir);
  if (it == fresh_.end()) return false;
  const std::vector<DirEntry>& entries = *it->second;
  for (size_t i : members) {
    const std::optional<size_t> at = FileAt(entries, NameIn(dir, relatives[i]));
    if (!at || entries[*at].mtime_ns == 0) continue;
    const DirEntry& e = entries[*at];
    out[i] = FileStamp{relatives[i], e.size, e.mtime_ns, e.mtime_ns < settled_before};
  }
  return true;
}

EpisodeIndex::Listing* EpisodeIndex::ListingAtLocked(const std::string& relative_dir, int64_t mtime_ns) {
  if (mtime_ns == 0) return nullptr;
  auto it = listings_.find(relative_dir);
  if (it == listings_.end() || it->second.mtime_ns != mtime_ns) return nullptr;
  Listing& l = it->second;
  if (l.stamps.size() != l.size()) l.stamps.assign(l.size(), {0, 0});
  return &l;
}

bool EpisodeIndex::CorrectedInPlace() const {
  std::lock_guard<std::mutex> lock(mu_);
  return corrected_in_place_;
}

std::optional<EpisodeIndex::Listing> EpisodeIndex::Listing::Of(int64_t mtime_ns, const std::vector<DirEntry>& entries) {
  Listing l;
  l.mtime_ns = mtime_ns;
  l.ends.reserve(entries.size());
  l.kinds.reserve(entries.size());
  for (const DirEntry& e : entries) {
    // A link's target changes without its directory.
    const bool plain = !e.symlink && (e.type == FileType::kFile || e.type == FileType::kDirectory);
    if (!plain || !l.Append(e.name, e.type == FileType::kFile ? 'f' : 'd')) return std::nullopt;
  }
  return l;
}

bool EpisodeIndex::Listing::Append(std::string_view name, char kind) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string_view::npos ||
      name.find('\0') != std::string_view::npos || (kind != 'f' && kind != 'd') ||
      (size() > 0 && !(Name(size() - 1) < name)) || name.size() > std::numeric_limits<uint32_t>::max() - names.size())
    return false;
  names += name;
  ends.push_back(static_cast<uint32_t>(names.size()));
  kinds += kind;
  return true;
}

std::string_view EpisodeIndex::Listing::Name(size_t k) const {
  const uint32_t begin = k == 0 ? 0 : ends[k - 1];
  return std::string_view(names).substr(begin, ends[k] - begin);
}

std::shared_ptr<const std::vector<DirEntry>> EpisodeIndex::Listing::Entries() const {
  auto out = std::make_shared<std::vector<DirEntry>>();
  out->reserve(size());
  for (size_t k = 0; k < size(); ++k)
    out->push_back({.name = std::string(Name(k)), .type = kinds[k] == 'f' ? FileType::kFile : FileType::kDirectory});
  return out;
}

std::optional<size_t> EpisodeIndex::Listing::At(std::string_view name) const {
  size_t lo = 0, hi = size();  // the first entry not less than `name`
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (Name(mid) < name) lo = mid + 1;
    else hi = mid;
  }
  if (lo == size() || Name(lo) != name || kinds[lo] != 'f') return std::nullopt;
  return lo;
}

void EpisodeIndex::LoadListings(FileSystem* fs, const std::string& root) {
  std::shared_ptr<arrow::Table> table = LoadTable(fs, JoinPath(root, kListingIndexPath));
  if (!table) return;
  auto dir = Col<arrow::StringArray>(*table, "dir");
  auto mtime = Col<arrow::Int64Array>(*table, "mtime_ns");
  auto names = Col<arrow::ListArray>(*table, "names");
  auto kinds = Col<arrow::StringArray>(*table, "kinds");  // 'f' file, 'd' directory, one per name
  if (!dir || !mtime || !names || !kinds) return;
  auto flat = std::dynamic_pointer_cast<arrow::StringArray>(names->values());
  if (!flat) return;
  // Per name, its file's size and modification time (0: not stamped); absent in older files.
  const FlatInt64List sizes(*table, "sizes"), mtimes(*table, "mtimes");
  for (int64_t i = 0; i < table->num_rows(); ++i) {
    if (dir->IsNull(i) || mtime->IsNull(i) || names->IsNull(i) || kinds->IsNull(i)) continue;
    const std::string_view kind = kinds->GetView(i);
    if (static_cast<int64_t>(kind.size()) != names->value_length(i)) continue;
    Listing read;
    read.mtime_ns = mtime->Value(i);
    const int64_t first = names->value_offset(i), count = static_cast<int64_t>(kind.size());
    const int64_t bytes = flat->value_offset(first + count) - flat->value_offset(first);
    read.names.reserve(static_cast<size_t>(std::max<int64_t>(0, bytes)));
    read.ends.reserve(kind.size());
    read.kinds.reserve(kind.size());
    for (int64_t k = 0; k < count; ++k)
      if (flat->IsNull(first + k) || !read.Append(flat->GetView(first + k), kind[k])) break;
    if (read.size() != kind.size()) continue;  // damaged: listed again
    Listing& l = listings_[std::string(dir->GetView(i))] = std::move(read);
    const auto size_of = sizes.Row(i, kind.size()), mtime_of = mtimes.Row(i, kind.size());
    if (size_of.empty() || mtime_of.empty()) continue;  // none stamped: stat as before
    l.stamps.resize(kind.size());
    for (size_t k = 0; k < kind.size(); ++k)
      l.stamps[k] = size_of[k] < 0 || mtime_of[k] <= 0 ? std::pair<uint64_t, int64_t>{0, 0}
                                                       : std::pair{static_cast<uint64_t>(size_of[k]), mtime_of[k]};
  }
}

Status EpisodeIndex::SaveListings(FileSystem* fs, const std::string& root) {
  arrow::StringBuilder dir, kinds;
  arrow::Int64Builder mtime;
  arrow::ListBuilder names(arrow::default_memory_pool(), std::make_shared<arrow::StringBuilder>());
  auto* name = static_cast<arrow::StringBuilder*>(names.value_builder());
  arrow::ListBuilder sizes(arrow::default_memory_pool(), std::make_shared<arrow::Int64Builder>());
  arrow::ListBuilder mtimes(arrow::default_memory_pool(), std::make_shared<arrow::Int64Builder>());
  auto* size = static_cast<arrow::Int64Builder*>(sizes.value_builder());
  auto* file_mtime = static_cast<arrow::Int64Builder*>(mtimes.value_builder());
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!listings_changed_) return Status::OK();
    listings_changed_ = false;
    const bool any_used = std::any_of(listings_.begin(), listings_.end(), [](const auto& l) { return l.second.used; });
    for (const auto& [path, listing] : listings_) {
      if (any_used && !listing.used) continue;
      (void)names.Append(), (void)sizes.Append(), (void)mtimes.Append();
      for (size_t k = 0; k < listing.size(); ++k) {
        (void)name->Append(listing.Name(k));
        const auto stamp = k < listing.stamps.size() ? listing.stamps[k] : std::pair<uint64_t, int64_t>{0, 0};
        (void)size->Append(static_cast<int64_t>(stamp.first)), (void)file_mtime->Append(stamp.second);
      }
      (void)dir.Append(path);
      (void)mtime.Append(listing.mtime_ns);
      (void)kinds.Append(listing.kinds);
    }
  }
  std::shared_ptr<arrow::Array> a_dir, a_mtime, a_names, a_kinds, a_sizes, a_mtimes;
  auto st = dir.Finish(&a_dir);
  if (st.ok()) st = mtime.Finish(&a_mtime);
  if (st.ok()) st = names.Finish(&a_names);
  if (st.ok()) st = kinds.Finish(&a_kinds);
  if (st.ok()) st = sizes.Finish(&a_sizes);
  if (st.ok()) st = mtimes.Finish(&a_mtimes);
  if (!st.ok()) return Status::IOError(std::string("episode index listings: ") + st.ToString());
  auto schema = arrow::schema({arrow::field("dir", arrow::utf8()), arrow::field("mtime_ns", arrow::int64()),
                               arrow::field("names", a_names->type()), arrow::field("kinds", arrow::utf8()),
                               arrow::field("sizes", a_sizes->type()), arrow::field("mtimes", a_mtimes->type())},
                              arrow::key_value_metadata({kVersionKey}, {kVersion}));
  return ReplaceFile(fs, root, kListingIndexPath,
                     *arrow::Table::Make(schema, {a_dir, a_mtime, a_names, a_kinds, a_sizes, a_mtimes}));
}

namespace {

Result<std::shared_ptr<arrow::Table>> BuildTable(const std::map<int64_t, EpisodeIndex::Entry>& entries);

}  // namespace

Status EpisodeIndex::SaveIfChanged(FileSystem* fs, const std::string& root) {
  std::shared_ptr<arrow::Table> table;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (changed_) {
      REEL_ASSIGN_OR_RETURN(table, BuildTable(MergedLocked()));
      changed_ = false;
    }
  }
  if (table) REEL_RETURN_IF_ERROR(ReplaceFile(fs, root, kEpisodeIndexPath, *table));
  return SaveListings(fs, root);
}

namespace {

// Serialised schemas by schema object: entries loaded from one serialisation share one.
using SchemaBytes = std::unordered_map<const arrow::Schema*, std::shared_ptr<arrow::Buffer>>;

void AppendEntry(Columns& c, int64_t n, const EpisodeIndex::Entry& e, SchemaBytes& serialised) {
  (void)c.n.Append(n);
  const bool row = e.row_file && e.row;
  const EpisodeRow blank;
  const EpisodeRow& r = row ? *e.row : blank;
  AppendOr(c.row_path, row, row ? e.row_file->path : "");
  (void)c.row_size.Append(row ? static_cast<int64_t>(e.row_file->size) : 0);
  (void)c.row_mtime.Append(row ? e.row_file->mtime_ns : 0);
  (void)c.task_index.Append(r.task_index);
  (void)c.start.Append(r.start_frame_index);
  (void)c.end.Append(r.end_frame_index);
  (void)c.length.Append(r.length);
  (void)c.created_at.Append(r.created_at);
  (void)c.duration.Append(r.duration_sec);
  (void)c.drop_stats.Append(r.drop_stats);
  (void)c.video_codec.Append(r.video_codec);
  (void)c.calibration.Append(r.calibration);
  (void)c.fm_specs.Append(r.force_matrix_specs);
  (void)c.slam_specs.Append(r.slam_specs);
  (void)c.missing.Append(JoinLines(r.missing_columns));
  std::shared_ptr<arrow::Buffer> bytes;
  if (e.data_file && e.data_schema) {
    std::shared_ptr<arrow::Buffer>& memo = serialised[e.data_schema.get()];
    if (!memo) memo = arrow::ipc::SerializeSchema(*e.data_schema).ValueOr(nullptr);
    bytes = memo;
  }
  AppendOr(c.data_path, bytes != nullptr, bytes ? e.data_file->path : "");
  (void)c.data_size.Append(bytes ? static_cast<int64_t>(e.data_file->size) : 0);
  (void)c.data_mtime.Append(bytes ? e.data_file->mtime_ns : 0);
  if (bytes) (void)c.data_schema.Append(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
  else (void)c.data_schema.AppendNull();
}

Result<std::shared_ptr<arrow::Table>> BuildTable(const std::map<int64_t, EpisodeIndex::Entry>& entries) {
  Columns c;
  SchemaBytes serialised;
  for (const auto& [n, e] : entries) AppendEntry(c, n, e, serialised);
  std::vector<std::pair<const char*, arrow::ArrayBuilder*>> cols = {
      {"episode_index", &c.n},          {"row_path", &c.row_path},
      {"row_size", &c.row_size},        {"row_mtime_ns", &c.row_mtime},
      {"task_index", &c.task_index},    {"start_frame_index", &c.start},
      {"end_frame_index", &c.end},      {"length", &c.length},
      {"created_at", &c.created_at},    {"duration_sec", &c.duration},
      {"drop_stats", &c.drop_stats},    {"video_codec", &c.video_codec},
      {"calibration", &c.calibration},  {"force_matrix_specs", &c.fm_specs},
      {"slam_specs", &c.slam_specs},    {"missing_columns", &c.missing},
      {"data_path", &c.data_path},      {"data_size", &c.data_size},
      {"data_mtime_ns", &c.data_mtime}, {"data_schema", &c.data_schema}};
  arrow::FieldVector fields;
  arrow::ArrayVector arrays;
  for (auto& [name, builder] : cols) {
    std::shared_ptr<arrow::Array> array;
    auto st = builder->Finish(&array);
    if (!st.ok()) return Status::IOError(std::string("episode index: ") + st.ToString());
    fields.push_back(arrow::field(name, array->type()));
    arrays.push_back(std::move(array));
  }
  auto schema = arrow::schema(fields, arrow::key_value_metadata({kVersionKey}, {kVersion}));
  return arrow::Table::Make(schema, arrays);
}

}  // namespace

}  // namespace reel::internal
