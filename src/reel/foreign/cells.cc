// Typed access to single Arrow cells of foreign metadata tables, and the sink.
#include <arrow/api.h>
#include <parquet/arrow/reader.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>

#include <cmath>

#include "foreign/internal.h"
#include "io/parquet_io.h"

namespace reel::foreign {

bool Sink::Error(const std::string& rule, const std::string& path,
                                 const std::string& message, StatusCode code) {
  findings_.push_back({rule, Severity::kError, path, message});
  if (first_.ok()) first_ = Status(code, message);
  return !strict_;
}

void Sink::Warning(const std::string& rule, const std::string& path,
                                   const std::string& message) {
  findings_.push_back({rule, Severity::kWarning, path, message});
}

std::string EpisodeName(int64_t episode_index) { return "episode " + std::to_string(episode_index); }

namespace {

Result<std::shared_ptr<arrow::Scalar>> ValidScalar(const arrow::ChunkedArray& column, int64_t row,
                                                   const std::string& what) {
  auto s = column.GetScalar(row);
  if (!s.ok()) return Status::Invalid(what + ": unreadable (" + s.status().message() + ")");
  if (!(*s)->is_valid) return Status::Invalid(what + ": is null");
  return *s;
}

template <typename ScalarT>
int64_t ValueOf(const arrow::Scalar& s) {
  return static_cast<int64_t>(static_cast<const ScalarT&>(s).value);
}

}  // namespace

Result<int64_t> IntAt(const arrow::ChunkedArray& column, int64_t row, const std::string& what) {
  REEL_ASSIGN_OR_RETURN(auto s, ValidScalar(column, row, what));
  switch (s->type->id()) {
    case arrow::Type::INT64: return ValueOf<arrow::Int64Scalar>(*s);
    case arrow::Type::INT32: return ValueOf<arrow::Int32Scalar>(*s);
    case arrow::Type::INT16: return ValueOf<arrow::Int16Scalar>(*s);
    case arrow::Type::INT8: return ValueOf<arrow::Int8Scalar>(*s);
    case arrow::Type::UINT32: return ValueOf<arrow::UInt32Scalar>(*s);
    case arrow::Type::UINT16: return ValueOf<arrow::UInt16Scalar>(*s);
    case arrow::Type::UINT8: return ValueOf<arrow::UInt8Scalar>(*s);
    case arrow::Type::UINT64: return ValueOf<arrow::UInt64Scalar>(*s);
    default: break;
  }
  return Status::Invalid(what + ": must be an integer, found " + s->type->ToString());
}

Result<double> DoubleAt(const arrow::ChunkedArray& column, int64_t row, const std::string& what) {
  REEL_ASSIGN_OR_RETURN(auto s, ValidScalar(column, row, what));
  if (s->type->id() == arrow::Type::DOUBLE) return static_cast<const arrow::DoubleScalar&>(*s).value;
  if (s->type->id() == arrow::Type::FLOAT)
    return static_cast<double>(static_cast<const arrow::FloatScalar&>(*s).value);
  auto i = IntAt(column, row, what);
  if (i.ok()) return static_cast<double>(*i);
  return Status::Invalid(what + ": must be a number, found " + s->type->ToString());
}

Result<std::string> StringAt(const arrow::ChunkedArray& column, int64_t row, const std::string& what) {
  REEL_ASSIGN_OR_RETURN(auto s, ValidScalar(column, row, what));
  const auto id = s->type->id();
  if (id == arrow::Type::STRING || id == arrow::Type::LARGE_STRING || id == arrow::Type::STRING_VIEW)
    return static_cast<const arrow::BaseBinaryScalar&>(*s).ToString();
  return Status::Invalid(what + ": must be a string, found " + s->type->ToString());
}

Result<std::vector<std::string>> StringListAt(const arrow::ChunkedArray& column, int64_t row,
                                              const std::string& what) {
  REEL_ASSIGN_OR_RETURN(auto s, ValidScalar(column, row, what));
  const auto* list = dynamic_cast<const arrow::BaseListScalar*>(s.get());
  if (!list) return Status::Invalid(what + ": must be a list of strings, found " + s->type->ToString());
  arrow::ChunkedArray values(list->value);
  std::vector<std::string> out;
  for (int64_t i = 0; i < values.length(); ++i) {
    REEL_ASSIGN_OR_RETURN(std::string v, StringAt(values, i, what + " item " + std::to_string(i)));
    out.push_back(std::move(v));
  }
  return out;
}

Result<std::shared_ptr<arrow::ChunkedArray>> Column(const arrow::Table& table,
                                                    const std::string& name,
                                                    const std::string& path) {
  auto c = table.GetColumnByName(name);
  if (!c) return Status::Invalid(path + ": no column \"" + name + "\"");
  return c;
}

Result<int64_t> ParquetRows(FileSystem* fs, const std::string& path) {
  REEL_ASSIGN_OR_RETURN(auto reader, internal::OpenParquet(fs, path, false));
  return reader->parquet_reader()->metadata()->num_rows();
}

Result<bool> IsFile(FileSystem* fs, const std::string& path) {
  REEL_ASSIGN_OR_RETURN(FileInfo info, fs->Stat(path));
  return info.type == FileType::kFile;
}

}  // namespace reel::foreign
