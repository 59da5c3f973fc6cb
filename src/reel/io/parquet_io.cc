// Parquet files read through the FileSystem interface, with errors that name the file.
#include <arrow/api.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/schema.h>
#include <parquet/arrow/writer.h>
#include <parquet/column_reader.h>
#include <parquet/exception.h>
#include <parquet/file_reader.h>
#include <parquet/level_conversion.h>
#include <parquet/metadata.h>

#include <algorithm>
#include <limits>
#include <string>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <set>

#include "io/bounded_pool.h"
#include "io/parquet_io.h"

namespace reel::internal {

namespace {

void CollectLeaves(const parquet::arrow::SchemaField& field, std::vector<int>& out) {
  if (field.column_index >= 0) out.push_back(field.column_index);
  for (const auto& child : field.children) CollectLeaves(child, out);
}

// What reading a parquet file may hold at once, page buffers and decoded arrays
// together: 32,768 times its size (ZSTD's largest expansion: an RLE block of 128 KiB
// from a 4-byte header and byte) plus 256 MiB, plus what its footer declares
// (DeclaredBytes). A page header or dictionary that claims more (a 4 KB file declaring a
// 4.8 GB dictionary for 6 values, KEYPOINTS-PAGE-ALLOC) is refused before it is allocated.
constexpr int64_t kDecodedFloor = int64_t{256} << 20;
constexpr int64_t kMaxExpansion = 32768;

int64_t DecodedBudget(int64_t file_bytes) {
  constexpr int64_t kMost = std::numeric_limits<int64_t>::max() / 2;
  const int64_t scaled = file_bytes > kMost / kMaxExpansion ? kMost : file_bytes * kMaxExpansion;
  return kDecodedFloor + std::max<int64_t>(scaled, 0);
}

// What the file's footer declares it holds, decoded: each column chunk's value count times
// its physical width, plus 4 bytes a value for the levels decoded beside it, four times
// (saturating).
// Byte arrays count their levels only: their bytes are held to the expansion bound. A
// constant column (a glove's all-zero force matrix, dictionary- and RLE-encoded by pyarrow)
// decodes past 32,768 times its bytes honestly, and its footer says so; a page or a
// dictionary claiming more than its chunk declares (the fuzz find) is still refused.
int64_t DeclaredBytes(const parquet::FileMetaData& meta) {
  constexpr int64_t kMost = int64_t{1} << 60;
  int64_t sum = 0;
  for (int g = 0; g < meta.num_row_groups() && sum < kMost; ++g) {
    const auto group = meta.RowGroup(g);
    for (int c = 0; c < group->num_columns() && sum < kMost; ++c) {
      const parquet::ColumnDescriptor* column = meta.schema()->Column(c);
      int64_t width = 4;  // levels
      switch (column->physical_type()) {
        case parquet::Type::BOOLEAN: width += 1; break;
        case parquet::Type::INT32: case parquet::Type::FLOAT: width += 4; break;
        case parquet::Type::INT64: case parquet::Type::DOUBLE: width += 8; break;
        case parquet::Type::INT96: width += 12; break;
        case parquet::Type::FIXED_LEN_BYTE_ARRAY: width += std::max(column->type_length(), 0); break;
        default: break;
      }
      const int64_t values = std::clamp<int64_t>(group->ColumnChunk(c)->num_values(), 0, kMost / width);
      sum += values * width;
    }
  }
  // Four times over: Arrow's list reader holds the levels and values in buffers that grow
  // by doubling and copies them once more at the end (measured: 3.67 GB held at once to
  // read 384 MB of int16 list values, 19 bytes a value, 2.4 times values x (width + 4)).
  return std::min(sum, kMost) * 4;
}

// The reader and the pool its buffers come from; the reader goes first.
struct BoundedReader {
  BoundedPool::Owner pool;
  std::unique_ptr<parquet::arrow::FileReader> reader;
};

}  // namespace

Result<std::shared_ptr<parquet::arrow::FileReader>> OpenParquet(FileSystem* fs,
                                                               const std::string& path,
                                                               bool use_threads, ParquetSource* source) {
  REEL_ASSIGN_OR_RETURN(auto file, fs->OpenRandomAccess(path));
  return OpenParquetFile(std::move(file), path, use_threads, source);
}

Result<std::shared_ptr<parquet::arrow::FileReader>> OpenParquetFile(std::shared_ptr<arrow::io::RandomAccessFile> file,
                                                                   const std::string& path, bool use_threads,
                                                                   ParquetSource* source) {
  try {
    // A parquet reader sizes buffers from the file's own headers: they come from a pool
    // with a budget derived from the file's size, so a forged header is refused.
    auto size = file->GetSize();
    if (!size.ok()) return Status::IOError(path + ": cannot size (" + size.status().message() + ")");
    auto held = std::make_shared<BoundedReader>();
    held->pool = BoundedPool::Make(DecodedBudget(*size), "that reel lets a parquet file of " +
                                                             std::to_string(*size) +
                                                             " bytes decode to (32768 times its size plus 256 MiB, "
                                                             "plus what its footer declares)");
    parquet::arrow::FileReaderBuilder builder;
    arrow::Status opened = builder.Open(file, parquet::ReaderProperties(held->pool.get()));
    if (opened.ok()) opened = builder.memory_pool(held->pool.get())->Build(&held->reader);
    if (!opened.ok())
      return Status::Corruption(path + ": not a readable parquet file (" + opened.message() + ")");
    held->pool->Raise(DeclaredBytes(*held->reader->parquet_reader()->metadata()));
    std::shared_ptr<parquet::arrow::FileReader> shared(held, held->reader.get());
    if (source) *source = {file, held->pool.get()};
    shared->set_use_threads(use_threads);
    // Columns are found by name everywhere; a second column of one name would be
    // ambiguous, and Arrow's by-name lookup answers it with no column at all.
    std::set<std::string> names;
    for (const auto& field : shared->manifest().schema_fields)
      if (!names.insert(field.field->name()).second)
        return Status::Corruption(path + ": the column \"" + field.field->name() +
                                  "\" appears more than once");
    return shared;
  } catch (const std::exception& e) {
    return Status::Corruption(path + ": not a readable parquet file (" + e.what() + ")");
  }
}

Result<std::vector<int>> LeafIndices(const parquet::arrow::FileReader& reader,
                                     const std::vector<std::string>& columns,
                                     const std::string& path) {
  std::shared_ptr<arrow::Schema> schema;
  const auto& fields = reader.manifest().schema_fields;
  std::vector<int> leaves;
  for (const std::string& name : columns) {
    bool found = false;
    for (const auto& field : fields) {
      if (field.field->name() != name) continue;
      CollectLeaves(field, leaves);
      found = true;
      break;
    }
    if (!found) return Status::NotFound(path + ": no column \"" + name + "\" in this episode");
  }
  return leaves;
}

namespace {

// From `begin`, the levels up to the next row start (rep 0) or `levels`: returns where
// the run ends and adds its elements (def >= def_level) to *elements. A cell of 187,500
// values is one long run; SSE2 (part of x86-64) takes it 8 levels a step.
int64_t CountRun(const int16_t* def, const int16_t* rep, int64_t begin, int64_t levels, int16_t def_level,
                 int64_t* elements) {
  int64_t i = begin, n = 0;
#if defined(__SSE2__)
  const __m128i zero = _mm_setzero_si128();
  const __m128i below = _mm_set1_epi16(static_cast<int16_t>(def_level - 1));
  for (; i + 8 <= levels; i += 8) {
    const __m128i r = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rep + i));
    if (_mm_movemask_epi8(_mm_cmpeq_epi16(r, zero)) != 0) break;  // a row starts in this step
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(def + i));
    n += __builtin_popcount(static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpgt_epi16(d, below)))) / 2;
  }
#endif
  for (; i < levels && rep[i] != 0; ++i) n += def[i] >= def_level;
  *elements += n;
  return i;
}

// Counts one row group's list lengths into `out` (appended; -1 = null row), following
// parquet/level_conversion.cc DefRepLevelsToListInfo for a top-level list: a level with
// rep 0 starts a row; it is null below def_level - 1 (a nullable list), empty below
// def_level; every level at or above def_level is one element (a null element included).
template <typename ParquetType>
Status CountListLevels(parquet::ColumnReader& column, const parquet::internal::LevelInfo& list, bool nullable,
                       int64_t rows, const std::string& where, std::vector<int64_t>& out) {
  auto& typed = static_cast<parquet::TypedColumnReader<ParquetType>&>(column);
  constexpr int64_t kBatch = 16 * 1024;
  std::vector<int16_t> def(kBatch), rep(kBatch);
  std::vector<typename ParquetType::c_type> values(kBatch);  // decoded and dropped
  const size_t first = out.size();
  while (typed.HasNext()) {
    int64_t values_read = 0;
    const int64_t levels = typed.ReadBatch(kBatch, def.data(), rep.data(), values.data(), &values_read);
    if (levels <= 0) break;
    // rep is 0 (a row starts) or 1 (the row's list continues): ReadListLengths admits
    // only lists whose leaf repeats once. A cell of 187,500 values is one row start and a
    // long run of continuations (CountRun).
    for (int64_t i = 0; i < levels;) {
      if (rep[i] == 0) {
        if (def[i] < list.repeated_ancestor_def_level) {
          ++i;
          continue;
        }
        out.push_back(nullable && def[i] < list.def_level - 1 ? -1 : 0);
      } else if (out.size() == first) {
        return Status::Corruption(where + ": a list continues before any row starts");
      }
      int64_t elements = def[i] >= list.def_level;
      int64_t end = CountRun(def.data(), rep.data(), i + 1, levels, list.def_level, &elements);
      if (elements > 0) out.back() = std::max<int64_t>(out.back(), 0) + elements;
      i = end;
    }
  }
  if (static_cast<int64_t>(out.size() - first) != rows)
    return Status::Corruption(where + ": its levels hold " + std::to_string(out.size() - first) +
                              " rows, the row group says " + std::to_string(rows));
  return Status::OK();
}

}  // namespace

Result<std::vector<int64_t>> ReadListLengths(parquet::arrow::FileReader& reader, const std::string& column,
                                             const std::string& path) {
  const parquet::arrow::SchemaField* field = nullptr;
  for (const auto& f : reader.manifest().schema_fields)
    if (f.field->name() == column) field = &f;
  if (!field) return Status::NotFound(path + ": no column \"" + column + "\" in this episode");
  const std::string where = path + ": column \"" + column + "\"";
  if (field->field->type()->id() != arrow::Type::LIST || field->children.size() != 1 ||
      field->children[0].column_index < 0 || field->level_info.rep_level != 1 ||
      field->children[0].level_info.rep_level != 1)
    return Status::NotSupported(where + " is not a list of one primitive column");
  const int leaf = field->children[0].column_index;
  try {
    parquet::ParquetFileReader& file = *reader.parquet_reader();
    const parquet::Type::type physical = file.metadata()->schema()->Column(leaf)->physical_type();
    std::vector<int64_t> out;
    // The footer's row count is not trusted with an allocation (a hostile file may claim any).
    out.reserve(static_cast<size_t>(std::clamp<int64_t>(file.metadata()->num_rows(), 0, 1 << 16)));
    for (int rg = 0; rg < file.metadata()->num_row_groups(); ++rg) {
      const int64_t rows = file.metadata()->RowGroup(rg)->num_rows();
      std::shared_ptr<parquet::ColumnReader> col = file.RowGroup(rg)->Column(leaf);
      const bool nullable = field->field->nullable();
      const std::string at = where + " row group " + std::to_string(rg);
      Status st;
      switch (physical) {
        case parquet::Type::INT32: st = CountListLevels<parquet::Int32Type>(*col, field->level_info, nullable, rows, at, out); break;
        case parquet::Type::INT64: st = CountListLevels<parquet::Int64Type>(*col, field->level_info, nullable, rows, at, out); break;
        case parquet::Type::FLOAT: st = CountListLevels<parquet::FloatType>(*col, field->level_info, nullable, rows, at, out); break;
        case parquet::Type::DOUBLE: st = CountListLevels<parquet::DoubleType>(*col, field->level_info, nullable, rows, at, out); break;
        default: return Status::NotSupported(where + " has a leaf of physical type " + parquet::TypeToString(physical));
      }
      REEL_RETURN_IF_ERROR(st);
    }
    return out;
  } catch (const std::exception& e) {
    return Status::Corruption(where + ": cannot read parquet data (" + e.what() + ")");
  }
}

}  // namespace reel::internal

namespace reel {
namespace internal {

Result<std::shared_ptr<arrow::Table>> ReadColumns(parquet::arrow::FileReader& reader,
                                                  const std::vector<std::string>& columns,
                                                  const std::string& path) {
  try {
    arrow::Result<std::shared_ptr<arrow::Table>> table;
    if (columns.empty()) {
      table = reader.ReadTable();
    } else {
      REEL_ASSIGN_OR_RETURN(auto leaves, LeafIndices(reader, columns, path));
      table = reader.ReadTable(leaves);
    }
    if (!table.ok())
      return Status::Corruption(path + ": cannot read parquet data (" + table.status().message() +
                                ")");
    return *table;
  } catch (const std::exception& e) {
    return Status::Corruption(path + ": cannot read parquet data (" + e.what() + ")");
  }
}

Result<std::shared_ptr<arrow::Table>> ReadParquetTable(FileSystem* fs, const std::string& path,
                                                       const std::vector<std::string>& columns,
                                                       bool use_threads) {
  REEL_ASSIGN_OR_RETURN(auto reader, OpenParquet(fs, path, use_threads));
  return ReadColumns(*reader, columns, path);
}

Result<std::shared_ptr<arrow::Table>> ReadParquetColumnsPresent(
    FileSystem* fs, const std::string& path, const std::vector<std::string>& columns) {
  REEL_ASSIGN_OR_RETURN(auto reader, OpenParquet(fs, path, false));
  std::vector<std::string> present;
  for (const auto& field : reader->manifest().schema_fields)
    if (std::find(columns.begin(), columns.end(), field.field->name()) != columns.end())
      present.push_back(field.field->name());
  if (present.empty())
    return Status::Invalid(path + ": has none of the columns asked for (first: " + columns.front() +
                           ")");
  return ReadColumns(*reader, present, path);
}

std::shared_ptr<parquet::WriterProperties> ParquetWriterProperties(const ParquetWriteOptions& options) {
  parquet::WriterProperties::Builder b;
  b.compression(parquet::Compression::ZSTD);
  if (!options.dictionary) b.disable_dictionary();
  return b.build();
}

std::shared_ptr<parquet::ArrowWriterProperties> ParquetArrowProperties(const ParquetWriteOptions& options) {
  parquet::ArrowWriterProperties::Builder b;
  if (options.store_schema) b.store_schema();
  return b.build();
}

Status WriteParquet(FileSystem* fs, const std::string& path, const arrow::Table& table,
                    const ParquetWriteOptions& options) {
  REEL_RETURN_IF_ERROR(fs->CreateDirs(DirName(path)));
  REEL_ASSIGN_OR_RETURN(auto file, fs->NewWritableFile(path));
  auto sink = std::make_shared<FsOutputStream>(std::move(file), path);
  arrow::Status st = parquet::arrow::WriteTable(table, arrow::default_memory_pool(), sink, options.row_group_rows,
                                                 ParquetWriterProperties(options), ParquetArrowProperties(options));
  if (st.ok()) st = sink->Close();  // Close() fsyncs
  if (!st.ok()) return Status::IOError(path + ": " + st.ToString());
  return Status::OK();
}

}  // namespace internal
}  // namespace reel
