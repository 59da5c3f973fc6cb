// Some rows of a list column, reading only the data pages that hold them (ReadListRows).
#include <arrow/api.h>
#include <arrow/array/concatenate.h>
#include <arrow/util/bitmap_builders.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/schema.h>
#include <parquet/column_reader.h>
#include <parquet/exception.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/page_index.h>
#include <parquet/properties.h>
#include <arrow/io/memory.h>

#include <algorithm>
#include <string>
#include <vector>

#include "io/parquet_io.h"

namespace reel::internal {

namespace {

// The data pages of one column chunk that hold a wanted row, as its offset index places them:
// runs of adjacent kept pages, each read with one ReadAt.
struct PageRun {
  int64_t offset = 0, bytes = 0;
  std::vector<std::pair<int64_t, int64_t>> rows;  // per page: [first row, end row)
};

// Where a chunk's dictionary page lies: [dictionary_page_offset, data_page_offset), read
// before each run; {0, 0} without one, {-1, -1} when its offsets make no sense.
std::pair<int64_t, int64_t> DictionaryRange(const parquet::ColumnChunkMetaData& chunk) {
  if (!chunk.has_dictionary_page()) return {0, 0};
  const int64_t begin = chunk.dictionary_page_offset(), end = chunk.data_page_offset();
  if (begin <= 0 || end <= begin || end - begin > chunk.total_compressed_size()) return {-1, -1};
  return {begin, end};
}

// Empty when the index cannot be trusted (rows out of order or out of the row group, pages
// outside the chunk or overlapping, a dictionary page that is not where the chunk begins):
// the caller then reads the chunk whole.
std::vector<PageRun> PlanPages(const parquet::OffsetIndex& index, const parquet::ColumnChunkMetaData& chunk,
                               int64_t rows, const std::vector<int64_t>& wanted) {
  const auto& pages = index.page_locations();
  const auto dictionary = DictionaryRange(chunk);
  const int64_t chunk_end = (dictionary.first > 0 ? dictionary.first : chunk.data_page_offset()) +
                            chunk.total_compressed_size();
  if (pages.empty() || dictionary.first < 0 || pages[0].first_row_index != 0) return {};
  for (size_t p = 0; p < pages.size(); ++p) {
    const bool last = p + 1 == pages.size();
    if (pages[p].offset < chunk.data_page_offset() || pages[p].compressed_page_size <= 0 ||
        pages[p].offset + pages[p].compressed_page_size > chunk_end || pages[p].first_row_index >= rows ||
        (!last && (pages[p + 1].first_row_index <= pages[p].first_row_index ||
                   pages[p + 1].offset < pages[p].offset + pages[p].compressed_page_size)))
      return {};
  }
  std::vector<PageRun> runs;
  size_t p = 0, last_kept = pages.size();
  for (int64_t row : wanted) {
    while (p + 1 < pages.size() && pages[p + 1].first_row_index <= row) ++p;
    if (p == last_kept) continue;
    const int64_t end_row = p + 1 < pages.size() ? pages[p + 1].first_row_index : rows;
    const bool adjacent = !runs.empty() && last_kept + 1 == p && runs.back().offset + runs.back().bytes == pages[p].offset;
    if (!adjacent) runs.push_back({pages[p].offset, 0, {}});
    runs.back().bytes = pages[p].offset + pages[p].compressed_page_size - runs.back().offset;
    runs.back().rows.push_back({pages[p].first_row_index, end_row});
    last_kept = p;
  }
  return runs;
}

// A list column's rows gathered as Arrow's list reader builds them: per row, null, empty or
// its elements (a null element included).
template <typename CType>
struct GatheredRows {
  std::vector<int32_t> offsets{0};
  std::vector<uint8_t> row_valid;
  std::vector<CType> values;
  std::vector<uint8_t> value_valid;  // empty until a null element is met
  int64_t null_values = 0;
};

// What a run's reader carries across runs: the next wanted row.
struct RunCursor {
  const std::vector<int64_t>* wanted;
  size_t next_wanted = 0;
};

// Reads one run of kept pages, gathering its wanted rows. A page must start a row (rep 0) at
// the row the offset index names and hold the rows up to the next page's first: a file
// whose levels disagree is Corruption.
template <typename ParquetType, typename CType>
Status ReadRun(const PageRun& run, const ParquetSource& source, const parquet::ColumnChunkMetaData& chunk,
               const parquet::ColumnDescriptor* descr, const parquet::internal::LevelInfo& list, bool nullable,
               const std::string& where, RunCursor& cursor, GatheredRows<CType>& out) {
  // The run's bytes, after the chunk's dictionary page when it has one.
  const auto dictionary = DictionaryRange(chunk);
  const int64_t prefix = dictionary.second - dictionary.first;
  auto buffer = arrow::AllocateBuffer(prefix + run.bytes, source.pool);
  if (!buffer.ok()) return Status::Corruption(where + ": " + buffer.status().message());
  uint8_t* data = (*buffer)->mutable_data();
  auto read = prefix ? source.file->ReadAt(dictionary.first, prefix, data) : arrow::Result<int64_t>(0);
  const bool dictionary_read = read.ok() && *read == prefix;
  if (dictionary_read) read = source.file->ReadAt(run.offset, run.bytes, data + prefix);
  if (!dictionary_read || !read.ok() || *read != run.bytes)
    return Status::Corruption(where + ": cannot read its pages at offset " + std::to_string(run.offset));
  std::shared_ptr<arrow::Buffer> bytes = std::move(*buffer);
  std::vector<int64_t> page_levels;  // filled as the reader reaches each page
  std::unique_ptr<parquet::PageReader> pager =
      parquet::PageReader::Open(std::make_shared<arrow::io::BufferReader>(bytes), chunk.num_values(),
                                chunk.compression(), parquet::ReaderProperties(source.pool), *descr);
  pager->set_data_page_filter([&](const parquet::DataPageStats& stats) {
    page_levels.push_back(stats.num_values);
    return false;
  });
  auto column = parquet::ColumnReader::Make(descr, std::move(pager), source.pool);
  auto& typed = static_cast<parquet::TypedColumnReader<ParquetType>&>(*column);
  const int16_t max_def = descr->max_definition_level();
  const std::vector<int64_t>& wanted = *cursor.wanted;
  size_t& next_wanted = cursor.next_wanted;
  constexpr int64_t kBatch = 64 * 1024;
  std::vector<int16_t> def(kBatch), rep(kBatch);
  std::vector<typename ParquetType::c_type> values(kBatch);
  size_t at = 0;
  int64_t row = -1, page_levels_left = 0;
  bool take = false;
  while (typed.HasNext()) {
    int64_t values_read = 0;
    const int64_t levels = typed.ReadBatch(kBatch, def.data(), rep.data(), values.data(), &values_read);
    if (levels <= 0) break;
    int64_t v = 0;
    for (int64_t i = 0; i < levels;) {
      if (page_levels_left == 0) {  // a page starts
        if (at >= run.rows.size() || at >= page_levels.size() || rep[i] != 0 ||
            (at > 0 && row + 1 != run.rows[at - 1].second))
          return Status::Corruption(where + ": a data page does not start at the row its offset index names");
        row = run.rows[at].first - 1;
        page_levels_left = page_levels[at++];
      }
      if (rep[i] == 0) {
        ++row;
        take = next_wanted < wanted.size() && wanted[next_wanted] == row;
        if (take) {
          ++next_wanted;
          out.offsets.push_back(out.offsets.back());
          out.row_valid.push_back(!(nullable && def[i] < list.def_level - 1));
        }
      }
      // The row's levels up to the next row start, this page's end or the batch's end: a
      // cell of 187,500 values is one run, copied at once when it holds no null.
      const int64_t stop = std::min(levels, i + page_levels_left);
      int64_t end = i + 1;
      while (end < stop && rep[end] != 0) ++end;
      int64_t present = 0, elements = 0;
      for (int64_t k = i; k < end; ++k) {
        present += def[k] == max_def;
        elements += def[k] >= list.def_level;
      }
      if (take && present == elements) {
        out.values.insert(out.values.end(), values.begin() + v, values.begin() + v + present);
        if (!out.value_valid.empty()) out.value_valid.resize(out.values.size(), 1);
        out.offsets.back() += static_cast<int32_t>(present);
      } else if (take) {
        if (out.value_valid.empty()) out.value_valid.assign(out.values.size(), 1);
        for (int64_t k = i, at_value = v; k < end; ++k) {
          if (def[k] < list.def_level) continue;
          const bool is_value = def[k] == max_def;
          out.values.push_back(is_value ? static_cast<CType>(values[at_value++]) : CType{});
          out.value_valid.push_back(is_value);
          out.null_values += !is_value;
          ++out.offsets.back();
        }
      }
      v += present;
      page_levels_left -= end - i;
      i = end;
    }
  }
  if (at != run.rows.size() || row + 1 != run.rows.back().second)
    return Status::Corruption(where + ": its data pages do not hold the rows its offset index names");
  return Status::OK();
}

template <typename ArrowType, typename CType>
Result<std::shared_ptr<arrow::Array>> ToListArray(GatheredRows<CType>& rows, const std::shared_ptr<arrow::DataType>& type) {
  auto value_type = static_cast<const arrow::ListType&>(*type).value_type();
  std::shared_ptr<arrow::Buffer> value_nulls, row_nulls;
  int64_t null_rows = 0;
  for (uint8_t v : rows.row_valid) null_rows += !v;
  auto bitmap = [](const std::vector<uint8_t>& valid) {
    return arrow::internal::BytesToBits(std::span<const uint8_t>(valid)).ValueOr(nullptr);
  };
  if (rows.null_values) value_nulls = bitmap(rows.value_valid);
  if (null_rows) row_nulls = bitmap(rows.row_valid);
  const int64_t count = static_cast<int64_t>(rows.values.size()), length = static_cast<int64_t>(rows.row_valid.size());
  auto values = std::make_shared<arrow::NumericArray<ArrowType>>(
      value_type, count, arrow::Buffer::FromVector(std::move(rows.values)), value_nulls, rows.null_values);
  return std::shared_ptr<arrow::Array>(std::make_shared<arrow::ListArray>(type, length, arrow::Buffer::FromVector(std::move(rows.offsets)), values,
                                            row_nulls, null_rows));
}

// The wanted rows of one row group through its offset index; nullptr when this column's
// physical and Arrow types are not one this path reads (the caller reads the chunk whole).
template <typename ParquetType, typename ArrowType>
Result<std::shared_ptr<arrow::Array>> ReadRowsTyped(const std::vector<PageRun>& runs, const ParquetSource& source,
                                                    const parquet::ColumnChunkMetaData& chunk, int64_t chunk_rows,
                                                    const parquet::ColumnDescriptor* descr,
                                                    const parquet::arrow::SchemaField& field,
                                                    const std::vector<int64_t>& wanted, const std::string& where) {
  GatheredRows<typename ArrowType::c_type> rows;
  // Room for the wanted rows at the chunk's mean row length (capped: the footer is input).
  const double mean = static_cast<double>(chunk.num_values()) / static_cast<double>(std::max<int64_t>(1, chunk_rows));
  rows.values.reserve(static_cast<size_t>(std::clamp(mean * static_cast<double>(wanted.size()), 0.0, 32.0 * (1 << 20))));
  RunCursor cursor{&wanted};
  for (const PageRun& run : runs)
    REEL_RETURN_IF_ERROR((ReadRun<ParquetType, typename ArrowType::c_type>(
        run, source, chunk, descr, field.level_info, field.field->nullable(), where, cursor, rows)));
  if (cursor.next_wanted != wanted.size())
    return Status::Corruption(where + ": its data pages do not hold the rows its offset index names");
  if (rows.offsets.back() < 0 || rows.values.size() > static_cast<size_t>(INT32_MAX))
    return Status::Corruption(where + ": a list of more than 2^31 values");
  return ToListArray<ArrowType>(rows, field.field->type());
}

Result<std::shared_ptr<arrow::Array>> ReadRowsByIndex(const std::vector<PageRun>& runs, const ParquetSource& source,
                                                      const parquet::ColumnChunkMetaData& chunk, int64_t chunk_rows,
                                                      const parquet::ColumnDescriptor* descr,
                                                      const parquet::arrow::SchemaField& field,
                                                      const std::vector<int64_t>& wanted, const std::string& where) {
  const auto value = static_cast<const arrow::ListType&>(*field.field->type()).value_type()->id();
  switch (descr->physical_type()) {
    case parquet::Type::INT32:
      if (value == arrow::Type::INT16)
        return ReadRowsTyped<parquet::Int32Type, arrow::Int16Type>(runs, source, chunk, chunk_rows, descr, field, wanted, where);
      if (value == arrow::Type::INT32)
        return ReadRowsTyped<parquet::Int32Type, arrow::Int32Type>(runs, source, chunk, chunk_rows, descr, field, wanted, where);
      break;
    case parquet::Type::INT64:
      if (value == arrow::Type::INT64)
        return ReadRowsTyped<parquet::Int64Type, arrow::Int64Type>(runs, source, chunk, chunk_rows, descr, field, wanted, where);
      break;
    case parquet::Type::FLOAT:
      if (value == arrow::Type::FLOAT)
        return ReadRowsTyped<parquet::FloatType, arrow::FloatType>(runs, source, chunk, chunk_rows, descr, field, wanted, where);
      break;
    case parquet::Type::DOUBLE:
      if (value == arrow::Type::DOUBLE)
        return ReadRowsTyped<parquet::DoubleType, arrow::DoubleType>(runs, source, chunk, chunk_rows, descr, field, wanted, where);
      break;
    default: break;
  }
  return std::shared_ptr<arrow::Array>();
}

// The wanted rows of one row group read through Arrow whole: the column chunk, then sliced.
Result<std::shared_ptr<arrow::Array>> ReadRowsWhole(parquet::arrow::FileReader& reader, int group, int field_index,
                                                    const std::vector<int64_t>& wanted, const std::string& where) {
  std::shared_ptr<arrow::ChunkedArray> chunk;
  arrow::Status st = reader.RowGroup(group)->Column(field_index)->Read(&chunk);
  if (!st.ok()) return Status::Corruption(where + ": cannot read parquet data (" + st.message() + ")");
  auto whole = arrow::Concatenate(chunk->chunks());
  if (!whole.ok()) return Status::Corruption(where + ": " + whole.status().message());
  arrow::ArrayVector rows;
  for (int64_t r : wanted) {
    if (r >= (*whole)->length()) return Status::Corruption(where + ": fewer rows than its row group declares");
    rows.push_back((*whole)->Slice(r, 1));
  }
  auto out = arrow::Concatenate(rows);
  if (!out.ok()) return Status::Corruption(where + ": " + out.status().message());
  return *out;
}

}  // namespace

Result<std::shared_ptr<arrow::Array>> ReadListRows(parquet::arrow::FileReader& reader, const ParquetSource& source,
                                                   const std::string& column, const std::vector<int64_t>& rows,
                                                   const std::string& path) {
  const auto& fields = reader.manifest().schema_fields;
  int field_index = -1;
  for (size_t i = 0; i < fields.size(); ++i)
    if (fields[i].field->name() == column) field_index = static_cast<int>(i);
  if (field_index < 0) return Status::NotFound(path + ": no column \"" + column + "\" in this episode");
  const parquet::arrow::SchemaField& field = fields[static_cast<size_t>(field_index)];
  const std::string where = path + ": column \"" + column + "\"";
  if (field.field->type()->id() != arrow::Type::LIST)
    return Status::Invalid(where + " is not a list column");
  for (size_t i = 1; i < rows.size(); ++i)
    if (rows[i] <= rows[i - 1]) return Status::Invalid(where + ": rows to read must ascend, without repeats");
  try {
    parquet::ParquetFileReader& file = *reader.parquet_reader();
    const auto meta = file.metadata();
    if (!rows.empty() && (rows.front() < 0 || rows.back() >= meta->num_rows()))
      return Status::Invalid(where + ": row " + std::to_string(rows.front() < 0 ? rows.front() : rows.back()) +
                                " outside its " + std::to_string(meta->num_rows()) + " rows");
    const bool one_leaf = field.children.size() == 1 && field.children[0].column_index >= 0 &&
                          field.level_info.rep_level == 1 && field.children[0].level_info.rep_level == 1;
    const int leaf = one_leaf ? field.children[0].column_index : -1;
    std::shared_ptr<parquet::PageIndexReader> index = one_leaf ? file.GetPageIndexReader() : nullptr;
    arrow::ArrayVector parts;
    int64_t group_first = 0;
    size_t next = 0;
    for (int g = 0; g < meta->num_row_groups() && next < rows.size(); ++g) {
      const int64_t group_rows = meta->RowGroup(g)->num_rows();
      std::vector<int64_t> wanted;
      for (; next < rows.size() && rows[next] < group_first + group_rows; ++next) wanted.push_back(rows[next] - group_first);
      group_first += group_rows;
      if (wanted.empty()) continue;
      const std::string at = where + " row group " + std::to_string(g);
      std::shared_ptr<arrow::Array> part;
      auto group_index = index ? index->RowGroup(g) : nullptr;
      auto offsets = group_index ? group_index->GetOffsetIndex(leaf) : nullptr;
      auto chunk = meta->RowGroup(g)->ColumnChunk(leaf);
      const auto runs = offsets ? PlanPages(*offsets, *chunk, group_rows, wanted) : std::vector<PageRun>{};
      if (!runs.empty()) {
        REEL_ASSIGN_OR_RETURN(part, ReadRowsByIndex(runs, source, *chunk, group_rows, meta->schema()->Column(leaf), field, wanted, at));
      }
      if (!part) {
        REEL_ASSIGN_OR_RETURN(part, ReadRowsWhole(reader, g, field_index, wanted, at));
      }
      parts.push_back(std::move(part));
    }
    if (next != rows.size()) return Status::Corruption(where + ": fewer rows than its footer declares");
    if (parts.empty()) return arrow::MakeEmptyArray(field.field->type()).ValueOr(nullptr);
    auto out = parts.size() == 1 ? arrow::Result<std::shared_ptr<arrow::Array>>(parts[0]) : arrow::Concatenate(parts);
    if (!out.ok()) return Status::Corruption(where + ": " + out.status().message());
    return *out;
  } catch (const std::exception& e) {
    return Status::Corruption(where + ": cannot read parquet data (" + e.what() + ")");
  }
}

}  // namespace reel::internal
