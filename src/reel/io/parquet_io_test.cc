// ReadListLengths against Arrow's own list reader: the same per-row counts (null rows
// -1) for nullable and non-nullable lists, null elements, empty cells, 187,500-value
// cells, cells split across data pages and row groups, and every leaf type it admits.
#include <arrow/api.h>
#include <arrow/array/concatenate.h>
#include <arrow/io/file.h>
#include <gtest/gtest.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/writer.h>
#include <parquet/properties.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "io/bounded_pool.h"
#include "io/parquet_io.h"
#include "io/scratch_dir.h"
#include "testing/status_matchers.h"

namespace reel::internal {
namespace {

// A list column of `value_type` with the given rows (-1 = null row; n = n values, every
// 7th value null when `null_elements`).
std::shared_ptr<arrow::Array> ListColumn(const std::shared_ptr<arrow::DataType>& value_type,
                                         const std::vector<int64_t>& rows, bool null_elements) {
  auto values = arrow::MakeBuilder(value_type).ValueOrDie();
  arrow::ListBuilder list(arrow::default_memory_pool(), std::move(values));
  for (int64_t n : rows) {
    if (n < 0) {
      EXPECT_OK(list.AppendNull());
      continue;
    }
    EXPECT_OK(list.Append());
    for (int64_t i = 0; i < n; ++i) {
      if (null_elements && i % 7 == 3) {
        EXPECT_OK(list.value_builder()->AppendNull());
      } else {
        EXPECT_OK(list.value_builder()->AppendScalar(*arrow::MakeScalar(value_type, i % 5).ValueOrDie()));
      }
    }
  }
  return list.Finish().ValueOrDie();
}

std::shared_ptr<arrow::Array> Int64s(int64_t n) {
  arrow::Int64Builder b;
  for (int64_t i = 0; i < n; ++i) EXPECT_TRUE(b.Append(i).ok());
  return b.Finish().ValueOrDie();
}

// Writes one table and returns what ReadListLengths and Arrow's reader say of `column`.
struct Both {
  std::vector<int64_t> fast, arrow;
};
Both ReadBoth(const std::string& path, const std::shared_ptr<arrow::Table>& table, const std::string& column,
              int64_t row_group_rows) {
  auto props = parquet::WriterProperties::Builder().data_pagesize(4096)->compression(parquet::Compression::ZSTD)->build();
  auto sink = arrow::io::FileOutputStream::Open(path).ValueOrDie();
  EXPECT_OK(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), sink, row_group_rows, props));
  EXPECT_OK(sink->Close());
  Both out;
  auto reader = OpenParquet(DefaultFileSystem(), path, false);
  EXPECT_OK(reader);
  auto fast = ReadListLengths(**reader, column, path);
  EXPECT_OK(fast);
  if (fast.ok()) out.fast = *fast;
  auto whole = ReadParquetTable(DefaultFileSystem(), path, {column}, false);
  EXPECT_OK(whole);
  for (const auto& chunk : (*whole)->column(0)->chunks()) {
    const auto& list = static_cast<const arrow::ListArray&>(*chunk);
    for (int64_t i = 0; i < list.length(); ++i) out.arrow.push_back(list.IsNull(i) ? -1 : list.value_length(i));
  }
  return out;
}

TEST(ReadListLengths, AgreesWithArrowsListReader) {
  auto dir = ScratchDir::Create("parquet_io_test", "/tmp");
  ASSERT_OK(dir);
  const std::vector<int64_t> rows = {0, -1, 3, 187500, 0, 0, 2, -1, 187500, 1, 5000, 0};
  for (const auto& type : {arrow::int16(), arrow::float32(), arrow::int64(), arrow::float64()}) {
    for (bool nullable : {true, false}) {
      for (bool null_elements : {false, true}) {
        std::vector<int64_t> shape = rows;
        if (!nullable)
          for (int64_t& n : shape) n = n < 0 ? 0 : n;
        auto field = arrow::field("observation.x_force_matrix", arrow::list(type), nullable);
        auto table = arrow::Table::Make(arrow::schema({arrow::field("frame_index", arrow::int64()), field}),
                                        {Int64s(12), ListColumn(type, shape, null_elements)});
        for (int64_t group : {int64_t{5}, int64_t{64 * 1024}}) {
          Both got = ReadBoth((*dir)->path() + "/t.parquet", table, field->name(), group);
          EXPECT_EQ(got.fast, got.arrow) << type->ToString() << " nullable " << nullable << " null elements "
                                         << null_elements << " row groups of " << group;
          EXPECT_EQ(got.fast, shape);
        }
      }
    }
  }
}

TEST(ReadListLengths, RefusesWhatIsNotAListOfOnePrimitive) {
  auto dir = ScratchDir::Create("parquet_io_test", "/tmp");
  ASSERT_OK(dir);
  const std::string path = (*dir)->path() + "/t.parquet";
  auto nested_values = std::make_shared<arrow::ListBuilder>(arrow::default_memory_pool(),
                                                             std::make_shared<arrow::Int16Builder>());
  arrow::ListBuilder nested(arrow::default_memory_pool(), nested_values);
  ASSERT_OK(nested.Append());
  ASSERT_OK(nested_values->Append());
  ASSERT_OK(static_cast<arrow::Int16Builder*>(nested_values->value_builder())->Append(1));
  ASSERT_OK(nested.Append());
  auto nested_array = nested.Finish().ValueOrDie();
  auto table = arrow::Table::Make(
      arrow::schema({arrow::field("plain", arrow::int64()), arrow::field("nested", nested_array->type())}),
      {Int64s(2), nested_array});
  auto sink = arrow::io::FileOutputStream::Open(path).ValueOrDie();
  ASSERT_OK(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), sink, 10));
  ASSERT_OK(sink->Close());
  auto reader = OpenParquet(DefaultFileSystem(), path, false);
  ASSERT_OK(reader);
  EXPECT_EQ(ReadListLengths(**reader, "plain", path).status().code(), StatusCode::kNotSupported);
  EXPECT_EQ(ReadListLengths(**reader, "nested", path).status().code(), StatusCode::kNotSupported);
  EXPECT_EQ(ReadListLengths(**reader, "absent", path).status().code(), StatusCode::kNotFound);
}

// ReadListRows against Arrow's whole-column read, row for row: with and without an offset
// index (the page path and the whole-row-group path), small pages (a cell over many pages,
// many cells a page), several row groups, null rows, empty cells and null elements, each leaf
// type, and subsets from one row to every row.
TEST(ReadListRows, EqualsTheRowsOfArrowsWholeRead) {
  auto dir = ScratchDir::Create("parquet_io_test", "/tmp");
  ASSERT_OK(dir);
  const std::string path = (*dir)->path() + "/rows.parquet";
  const std::vector<int64_t> shape = {3, -1, 0, 2000, 1, 0, 7, 187500, -1, 5, 0, 40, 2, 9000, 1};
  const std::vector<std::vector<int64_t>> subsets = {
      {}, {0}, {7}, {14}, {1, 2}, {3, 7, 8, 13}, {0, 5, 6, 9, 10, 11, 12, 14}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}};
  for (const auto& type : {arrow::int16(), arrow::int32(), arrow::float32(), arrow::int64(), arrow::float64()}) {
    for (bool null_elements : {false, true}) {
      auto field = arrow::field("observation.x_force_matrix", arrow::list(type), true);
      auto table = arrow::Table::Make(arrow::schema({arrow::field("frame_index", arrow::int64()), field}),
                                      {Int64s(15), ListColumn(type, shape, null_elements)});
      for (bool index : {true, false}) {
        for (int64_t group : {int64_t{4}, int64_t{64 * 1024}}) {
          parquet::WriterProperties::Builder b;
          b.data_pagesize(4096)->max_rows_per_page(2)->compression(parquet::Compression::ZSTD);
          if (index) b.enable_write_page_index(); else b.disable_write_page_index();
          auto sink = arrow::io::FileOutputStream::Open(path).ValueOrDie();
          ASSERT_OK(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), sink, group, b.build()));
          ASSERT_OK(sink->Close());
          ParquetSource source;
          auto reader = OpenParquet(DefaultFileSystem(), path, false, &source);
          ASSERT_OK(reader);
          const auto whole = arrow::Concatenate((*ReadParquetTable(DefaultFileSystem(), path, {field->name()}, false))
                                                    ->column(0)->chunks()).ValueOrDie();
          for (const auto& rows : subsets) {
            auto got = ReadListRows(**reader, source, field->name(), rows, path);
            ASSERT_TRUE(got.ok()) << got.status().ToString() << " " << type->ToString() << " index " << index
                                  << " groups of " << group << " rows " << rows.size();
            ASSERT_EQ((*got)->length(), static_cast<int64_t>(rows.size()));
            for (size_t i = 0; i < rows.size(); ++i)
              EXPECT_TRUE((*got)->Slice(static_cast<int64_t>(i), 1)->Equals(whole->Slice(rows[i], 1)))
                  << type->ToString() << " index " << index << " row groups of " << group << " row " << rows[i]
                  << " null elements " << null_elements;
          }
        }
      }
    }
  }
}

// Bytes this process has read through read(2)/pread(2) so far (/proc/self/io rchar).
int64_t BytesReadSoFar() {
  std::ifstream io("/proc/self/io");
  std::string key;
  int64_t value = 0;
  while (io >> key >> value)
    if (key == "rchar:") return value;
  return -1;
}

// The cost claim: one force-matrix-sized row of a 40-row file reads about one row's pages,
// not the column (noise values, so ZSTD cannot shrink the file to nothing).
TEST(ReadListRows, ReadsOnlyThePagesOfTheRowsAskedFor) {
  auto dir = ScratchDir::Create("parquet_io_test", "/tmp");
  ASSERT_OK(dir);
  const std::string path = (*dir)->path() + "/matrix.parquet";
  constexpr int64_t kRows = 40, kWidth = 187500;
  arrow::Int16Builder values;
  uint32_t state = 29;
  for (int64_t i = 0; i < kRows * kWidth; ++i) {
    state = state * 1664525u + 1013904223u;
    ASSERT_OK(values.Append(static_cast<int16_t>(state >> 16)));
  }
  arrow::Int32Builder offsets;
  for (int64_t r = 0; r <= kRows; ++r) ASSERT_TRUE(offsets.Append(static_cast<int32_t>(r * kWidth)).ok());
  auto lists = arrow::ListArray::FromArrays(*offsets.Finish().ValueOrDie(), *values.Finish().ValueOrDie()).ValueOrDie();
  auto table = arrow::Table::Make(arrow::schema({arrow::field("observation.x_force_matrix", lists->type())}), {lists});
  auto sink = arrow::io::FileOutputStream::Open(path).ValueOrDie();
  ASSERT_TRUE(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), sink, kRows,
                                         parquet::WriterProperties::Builder().compression(parquet::Compression::ZSTD)->build())
                  .ok());
  ASSERT_OK(sink->Close());
  const int64_t size = static_cast<int64_t>(std::filesystem::file_size(path));
  ParquetSource source;
  auto reader = OpenParquet(DefaultFileSystem(), path, false, &source);
  ASSERT_OK(reader);
  const int64_t before = BytesReadSoFar();
  auto got = ReadListRows(**reader, source, "observation.x_force_matrix", {27}, path);
  const int64_t read = BytesReadSoFar() - before;
  ASSERT_OK(got);
  EXPECT_TRUE((*got)->Equals(lists->Slice(27, 1)));
  EXPECT_LT(read, size / 8) << "read " << read << " bytes of a " << size << "-byte file for one of its 40 rows";
}

TEST(ReadListRows, RefusesRowsOutOfOrderOrRangeAndWhatIsNotAList) {
  auto dir = ScratchDir::Create("parquet_io_test", "/tmp");
  ASSERT_OK(dir);
  const std::string path = (*dir)->path() + "/rows.parquet";
  auto field = arrow::field("observation.x_force_matrix", arrow::list(arrow::int16()));
  auto table = arrow::Table::Make(arrow::schema({arrow::field("frame_index", arrow::int64()), field}),
                                  {Int64s(4), ListColumn(arrow::int16(), {1, 2, 3, 4}, false)});
  auto sink = arrow::io::FileOutputStream::Open(path).ValueOrDie();
  ASSERT_OK(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), sink, 2));
  ASSERT_OK(sink->Close());
  ParquetSource source;
  auto reader = OpenParquet(DefaultFileSystem(), path, false, &source);
  ASSERT_OK(reader);
  EXPECT_EQ(ReadListRows(**reader, source, field->name(), {2, 1}, path).status().code(), StatusCode::kInvalid);
  EXPECT_EQ(ReadListRows(**reader, source, field->name(), {1, 1}, path).status().code(), StatusCode::kInvalid);
  EXPECT_EQ(ReadListRows(**reader, source, field->name(), {4}, path).status().code(), StatusCode::kInvalid);
  EXPECT_EQ(ReadListRows(**reader, source, field->name(), {-1}, path).status().code(), StatusCode::kInvalid);
  EXPECT_EQ(ReadListRows(**reader, source, "frame_index", {0}, path).status().code(), StatusCode::kInvalid);
  EXPECT_EQ(ReadListRows(**reader, source, "absent", {0}, path).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace reel::internal

namespace reel::internal {
namespace {

TEST(BoundedPool, RefusesPastItsBudgetAndOutlivesItsOwnerWhileABufferLives) {
  auto owner = BoundedPool::Make(1000, "of the test");
  BoundedPool* pool = owner.get();
  uint8_t* a = nullptr;
  ASSERT_OK(pool->Allocate(600, &a));
  uint8_t* b = nullptr;
  const arrow::Status refused = pool->Allocate(600, &b);
  EXPECT_TRUE(refused.IsOutOfMemory());
  EXPECT_THAT(refused.message(), ::testing::HasSubstr("over the 1000 bytes of the test")) << refused.message();
  EXPECT_EQ(pool->bytes_allocated(), 600);
  EXPECT_TRUE(pool->Reallocate(600, 1200, &a).IsOutOfMemory());
  ASSERT_OK(pool->Reallocate(600, 100, &a));
  ASSERT_OK(pool->Allocate(900, &b));
  EXPECT_EQ(pool->bytes_allocated(), 1000);
  owner.reset();  // the owner lets go; the two buffers keep the pool (ASan sees a use after free)
  pool->Free(a, 100);
  EXPECT_EQ(pool->bytes_allocated(), 900);
  pool->Free(b, 900);  // the last one deletes it
}

// fuzz/crashes/keypoints/oom-2204945d...: a 4,251-byte parquet file (after the harness's
// selector byte) whose INT32 dictionary page declares 1,200,561,728 entries, 4,802,246,912
// bytes decoded (KEYPOINTS-PAGE-ALLOC). The reader refuses the dictionary, names the file
// and allocates nothing near its claim.
TEST(OpenParquet, ADictionaryLargerThanTheFileCanDecodeToIsRefusedNotAllocated) {
  std::ifstream in(std::string(REEL_SOURCE_DIR) + "/fuzz/crashes/keypoints/oom-2204945dbad2a64968f6cf953ba613075ba51e4b",
                   std::ios::binary);
  ASSERT_TRUE(in.good());
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto dir = ScratchDir::Create("parquet_io_test", "/tmp");
  ASSERT_OK(dir);
  const std::string path = (*dir)->path() + "/chunk-000.parquet";
  {
    std::ofstream out(path, std::ios::binary);
    out << bytes.substr(1);  // byte 0 picks the harness's keypoints part
  }
  const int64_t before = arrow::default_memory_pool()->max_memory();
  auto table = ReadParquetTable(DefaultFileSystem(), path, {}, false);
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().code(), StatusCode::kCorruption);
  const std::string message = table.status().ToString();
  EXPECT_THAT(message, ::testing::HasSubstr(path)) << message;
  EXPECT_THAT(message, ::testing::HasSubstr("that reel lets a parquet file of 4251 bytes decode to")) << message;
  EXPECT_THAT(message, ::testing::HasSubstr("4802246912")) << message;
  EXPECT_LT(arrow::default_memory_pool()->max_memory(), std::max<int64_t>(before, 0) + (int64_t{1} << 30));
}

// A constant column decodes past 32,768 times its bytes honestly: pyarrow's defaults
// (dictionary, RLE) store an all-zero force matrix in a few bytes a row. Its footer declares
// its values, so it is read: 48 rows of 4,000,000 int16 zeros, 384 MB from a few KB.
TEST(OpenParquet, AConstantColumnTheFooterDeclaresIsReadWhateverItsRatio) {
  constexpr int64_t kRows = 48, kWidth = 4'000'000;
  auto zeros = std::make_shared<arrow::Int16Array>(kRows * kWidth, arrow::AllocateBuffer(kRows * kWidth * 2).ValueOrDie());
  std::memset(zeros->values()->mutable_data(), 0, kRows * kWidth * 2);
  arrow::Int32Builder offsets;
  for (int64_t r = 0; r <= kRows; ++r) ASSERT_TRUE(offsets.Append(static_cast<int32_t>(r * kWidth)).ok());
  auto lists = arrow::ListArray::FromArrays(*offsets.Finish().ValueOrDie(), *zeros).ValueOrDie();
  auto table = arrow::Table::Make(arrow::schema({arrow::field("observation.left_glove_force_matrix", lists->type())}),
                                  {lists});
  auto dir = ScratchDir::Create("parquet_io_test", "/tmp");
  ASSERT_OK(dir);
  const std::string path = (*dir)->path() + "/zeros.parquet";
  auto sink = arrow::io::FileOutputStream::Open(path).ValueOrDie();
  ASSERT_OK(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), sink, kRows));
  ASSERT_OK(sink->Close());
  const int64_t size = static_cast<int64_t>(std::filesystem::file_size(path));
  ASSERT_GT(kRows * kWidth * 2, (int64_t{256} << 20) + size * 32768) << size;  // past the expansion bound
  auto read = ReadParquetTable(DefaultFileSystem(), path, {}, false);
  ASSERT_OK(read);
  EXPECT_EQ((*read)->num_rows(), kRows);
}

}  // namespace
}  // namespace reel::internal
