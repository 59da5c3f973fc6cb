#include "read/episode_index.h"

#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/reader.h>
#include <arrow/ipc/writer.h>

#include <functional>
#include <unordered_map>

#include "io/parquet_io.h"
#include "layout/journal.h"

namespace reel::internal {
namespace {

// Bumped when the columns change; an index of another version loads empty.
constexpr const char* kVersionKey = "reel.episode_index";
constexpr const char* kVersion = "1";

// The index's columns, in file order.
struct Columns {
  arrow::Int64Builder n, row_size, row_mtime, data_size, data_mtime;
  arrow::Int64Builder task_index, start, end, length;
  arrow::DoubleBuilder created_at, duration;
  arrow::StringBuilder row_path, data_path, drop_stats, video_codec, calibration, fm_specs, slam_specs, missing;
  arrow::BinaryBuilder data_schema;
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

Result<std::shared_ptr<arrow::Schema>> SchemaFromBytes(std::string_view bytes) {
  arrow::io::BufferReader reader(std::make_shared<arrow::Buffer>(
      reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<int64_t>(bytes.size())));
  arrow::ipc::DictionaryMemo memo;
  auto schema = arrow::ipc::ReadSchema(&reader, &memo);
  if (!schema.ok()) return Status::Corruption(schema.status().ToString());
  return *schema;
}

}  // namespace

std::optional<FileStamp> StampOf(FileSystem* fs, const std::string& root, const std::string& relative) {
  auto info = fs->Stat(JoinPath(root, relative));
  if (!info.ok() || info->type != FileType::kFile) return std::nullopt;
  return FileStamp{relative, info->size, info->mtime_ns};
}

std::unique_ptr<EpisodeIndex> EpisodeIndex::Load(FileSystem* fs, const std::string& root) {
  auto index = std::make_unique<EpisodeIndex>();
  // A cache is never worth more memory than this (about 200 bytes per episode remembered;
  // a file past it is damaged or not ours): it loads empty and is rebuilt by use.
  constexpr uint64_t kMaxIndexBytes = uint64_t{512} << 20;
  const std::string path = JoinPath(root, kEpisodeIndexPath);
  auto stat = fs->Stat(path);
  if (!stat.ok() || stat->type != FileType::kFile || stat->size > kMaxIndexBytes) return index;
  auto read = ReadParquetTable(fs, path, {}, false);
  if (!read.ok()) return index;
  auto table = (*read)->CombineChunks();
  if (!table.ok()) return index;
  const arrow::Table& t = **table;
  auto meta = t.schema()->metadata();
  if (!meta || meta->Get(kVersionKey).ValueOr("") != kVersion) return index;
  auto n = Col<arrow::Int64Array>(t, "episode_index");
  auto row_path = Col<arrow::StringArray>(t, "row_path"), data_path = Col<arrow::StringArray>(t, "data_path");
  auto row_size = Col<arrow::Int64Array>(t, "row_size"), row_mtime = Col<arrow::Int64Array>(t, "row_mtime_ns");
  auto data_size = Col<arrow::Int64Array>(t, "data_size"), data_mtime = Col<arrow::Int64Array>(t, "data_mtime_ns");
  auto task_index = Col<arrow::Int64Array>(t, "task_index"), start = Col<arrow::Int64Array>(t, "start_frame_index");
  auto end = Col<arrow::Int64Array>(t, "end_frame_index"), length = Col<arrow::Int64Array>(t, "length");
  auto created = Col<arrow::DoubleArray>(t, "created_at"), duration = Col<arrow::DoubleArray>(t, "duration_sec");
  auto drop = Col<arrow::StringArray>(t, "drop_stats"), codec = Col<arrow::StringArray>(t, "video_codec");
  auto calib = Col<arrow::StringArray>(t, "calibration"), fm = Col<arrow::StringArray>(t, "force_matrix_specs");
  auto slam = Col<arrow::StringArray>(t, "slam_specs"), missing = Col<arrow::StringArray>(t, "missing_columns");
  auto schema = Col<arrow::BinaryArray>(t, "data_schema");
  for (const void* c : {(const void*)n.get(), (const void*)row_path.get(), (const void*)data_path.get(),
                        (const void*)row_size.get(), (const void*)row_mtime.get(), (const void*)data_size.get(),
                        (const void*)data_mtime.get(), (const void*)task_index.get(), (const void*)start.get(),
                        (const void*)end.get(), (const void*)length.get(), (const void*)created.get(),
                        (const void*)duration.get(), (const void*)drop.get(), (const void*)codec.get(),
                        (const void*)calib.get(), (const void*)fm.get(), (const void*)slam.get(),
                        (const void*)missing.get(), (const void*)schema.get()})
    if (c == nullptr) return index;  // another layout: rebuilt by use
  std::unordered_map<std::string_view, std::shared_ptr<arrow::Schema>> schemas;  // most episodes share one
  for (int64_t i = 0; i < t.num_rows(); ++i) {
    if (n->IsNull(i)) continue;
    Entry& e = index->entries_[n->Value(i)];
    if (row_path->IsValid(i)) {
      e.row_file = FileStamp{std::string(row_path->GetView(i)), static_cast<uint64_t>(row_size->Value(i)),
                             row_mtime->Value(i)};
      EpisodeRow r;
      r.episode_index = n->Value(i);
      r.task_index = task_index->Value(i);
      r.start_frame_index = start->Value(i);
      r.end_frame_index = end->Value(i);
      r.length = length->Value(i);
      r.created_at = created->Value(i);
      r.duration_sec = duration->Value(i);
      r.drop_stats = drop->GetString(i);
      r.video_codec = codec->GetString(i);
      r.calibration = calib->GetString(i);
      r.force_matrix_specs = fm->GetString(i);
      r.slam_specs = slam->GetString(i);
      r.missing_columns = SplitLines(missing->GetView(i));
      e.row = std::move(r);
    }
    if (data_path->IsValid(i) && schema->IsValid(i)) {
      auto& memo = schemas[schema->GetView(i)];
      if (!memo) memo = SchemaFromBytes(schema->GetView(i)).ValueOr(nullptr);
      if (!memo) continue;
      e.data_file = FileStamp{std::string(data_path->GetView(i)), static_cast<uint64_t>(data_size->Value(i)),
                              data_mtime->Value(i)};
      e.data_schema = memo;
    }
  }
  return index;
}

std::optional<EpisodeRow> EpisodeIndex::Row(int64_t n, const FileStamp& now) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(n);
  if (it == entries_.end() || !it->second.row || it->second.row_file != now) return std::nullopt;
  return it->second.row;
}

std::shared_ptr<arrow::Schema> EpisodeIndex::DataSchema(int64_t n, const FileStamp& now) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(n);
  if (it == entries_.end() || !it->second.data_schema || it->second.data_file != now) return nullptr;
  return it->second.data_schema;
}

void EpisodeIndex::PutRow(int64_t n, const FileStamp& read, EpisodeRow row) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = entries_[n];
  e.row_file = read;
  e.row = std::move(row);
  changed_ = true;
}

void EpisodeIndex::PutDataSchema(int64_t n, const FileStamp& read, std::shared_ptr<arrow::Schema> schema) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = entries_[n];
  e.data_file = read;
  e.data_schema = std::move(schema);
  changed_ = true;
}

size_t EpisodeIndex::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

namespace {

Result<std::shared_ptr<arrow::Table>> BuildTable(const std::map<int64_t, EpisodeIndex::Entry>& entries);

}  // namespace

Status EpisodeIndex::SaveIfChanged(FileSystem* fs, const std::string& root) {
  std::shared_ptr<arrow::Table> table;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!changed_) return Status::OK();
    REEL_ASSIGN_OR_RETURN(table, BuildTable(entries_));
    changed_ = false;
  }
  const std::string path = JoinPath(root, kEpisodeIndexPath);
  const std::string temp = TempPathFor(path, "index");
  if (Status probe = fs->Rename(temp, temp + ".probe"); probe.code() == StatusCode::kNotSupported) return probe;
  Status st = WriteParquet(fs, temp, *table);
  if (st.ok()) st = fs->Rename(temp, path);
  if (!st.ok()) (void)fs->RemoveFile(temp);
  return st;
}

namespace {

void AppendEntry(Columns& c, int64_t n, const EpisodeIndex::Entry& e) {
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
  if (e.data_file && e.data_schema)
    bytes = arrow::ipc::SerializeSchema(*e.data_schema).ValueOr(nullptr);
  AppendOr(c.data_path, bytes != nullptr, bytes ? e.data_file->path : "");
  (void)c.data_size.Append(bytes ? static_cast<int64_t>(e.data_file->size) : 0);
  (void)c.data_mtime.Append(bytes ? e.data_file->mtime_ns : 0);
  if (bytes) (void)c.data_schema.Append(bytes->data(), bytes->size());
  else (void)c.data_schema.AppendNull();
}

Result<std::shared_ptr<arrow::Table>> BuildTable(const std::map<int64_t, EpisodeIndex::Entry>& entries) {
  Columns c;
  for (const auto& [n, e] : entries) AppendEntry(c, n, e);
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
