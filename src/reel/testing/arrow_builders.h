// Test-only helpers: small Arrow arrays from initializer lists.
#pragma once

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace reel::testing {

template <typename Builder, typename T>
std::shared_ptr<arrow::Array> ArrayOf(const std::vector<T>& values) {
  Builder b;
  EXPECT_TRUE(b.AppendValues(values).ok());
  return b.Finish().ValueOrDie();
}

inline std::shared_ptr<arrow::Array> Int64s(const std::vector<int64_t>& v) {
  return ArrayOf<arrow::Int64Builder>(v);
}
inline std::shared_ptr<arrow::Array> Doubles(const std::vector<double>& v) {
  return ArrayOf<arrow::DoubleBuilder>(v);
}
inline std::shared_ptr<arrow::Array> Strings(const std::vector<std::string>& v) {
  return ArrayOf<arrow::StringBuilder>(v);
}

}  // namespace reel::testing
