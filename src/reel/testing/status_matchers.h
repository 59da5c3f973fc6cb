// Test kit: assertions and gmock matchers for Status and Result<T>, so that a failing test
// prints the Status it got (code, message and rule), never just "false".
//
//   ASSERT_OK(task);                             // a Status or Result<T>, reel's or Arrow's
//   EXPECT_OK(WriteFile(...)) << "while ...";     // more context streams as for any assertion
//   ASSERT_OK_AND_ASSIGN(auto task, Task::Open(root));
//   EXPECT_THAT(Task::Open(bad), StatusIs(StatusCode::kInvalid, HasSubstr("info.json")));
//   EXPECT_THAT(result, IsOk());
//
// Test-only: included by *_test.cc files, never by the library.
#pragma once

#include <arrow/result.h>
#include <arrow/status.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "reel/status.h"

namespace reel::testing {

inline const Status& StatusOf(const Status& status) { return status; }
template <typename T>
const Status& StatusOf(const Result<T>& result) {
  return result.status();
}
// Arrow's own (the parquet and builder calls tests make directly), as an IOError naming Arrow.
inline Status StatusOf(const arrow::Status& status) {
  return status.ok() ? Status::OK() : Status::IOError("Arrow " + status.ToString());
}
template <typename T>
Status StatusOf(const arrow::Result<T>& result) {
  return StatusOf(result.status());
}

// For ASSERT_PRED_FORMAT1: success when `value` (a Status or Result<T>) is OK, else a
// failure naming the expression and the Status.
template <typename S>
::testing::AssertionResult IsOkFormat(const char* expression, const S& value) {
  const Status& status = StatusOf(value);
  if (status.ok()) return ::testing::AssertionSuccess();
  ::testing::AssertionResult failure = ::testing::AssertionFailure();
  failure << expression << " is not OK: " << status.ToString();
  if (!status.rule().empty()) failure << " [rule " << status.rule() << "]";
  return failure;
}

// Matches an OK Status or Result<T>.
MATCHER(IsOk, negation ? "is not OK" : "is OK") {
  const Status& status = ::reel::testing::StatusOf(arg);
  if (!status.ok()) *result_listener << "which is " << status.ToString();
  return status.ok();
}

// Matches a Status or Result<T> whose code is `code` and, in the second form, whose message
// matches `message` (a string or a matcher, e.g. HasSubstr).
MATCHER_P(StatusIs, code, std::string("has code ") + StatusCodeName(code)) {
  const Status& status = ::reel::testing::StatusOf(arg);
  *result_listener << "which is " << status.ToString();
  return status.code() == code;
}
MATCHER_P2(StatusIs, code, message,
           std::string("has code ") + StatusCodeName(code) + " and a message that " +
               ::testing::DescribeMatcher<std::string>(message)) {
  const Status& status = ::reel::testing::StatusOf(arg);
  *result_listener << "which is " << status.ToString();
  return status.code() == code &&
         ::testing::ExplainMatchResult(::testing::MatcherCast<std::string>(message), status.message(),
                                       result_listener);
}

}  // namespace reel::testing

#define ASSERT_OK(expr) ASSERT_PRED_FORMAT1(::reel::testing::IsOkFormat, expr)
#define EXPECT_OK(expr) EXPECT_PRED_FORMAT1(::reel::testing::IsOkFormat, expr)

// (The failure names `rexpr` as written, not the temporary that holds it.)
#define REEL_ASSERT_OK_AND_ASSIGN_IMPL(tmp, lhs, rexpr)                                            \
  auto tmp = (rexpr);                                                                             \
  if (!::reel::testing::StatusOf(tmp).ok()) FAIL() << ::reel::testing::IsOkFormat(#rexpr, tmp).message(); \
  lhs = std::move(tmp).value()

// `lhs = value of rexpr`, or a fatal failure naming rexpr and its Status.
#define ASSERT_OK_AND_ASSIGN(lhs, rexpr) \
  REEL_ASSERT_OK_AND_ASSIGN_IMPL(REEL_CONCAT(_reel_assert_, __LINE__), lhs, rexpr)
