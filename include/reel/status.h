// Status and Result<T>: how every fallible reel call reports failure.
//
// reel never throws inside the library. A failing call returns a Status whose
// message names the file, the contract rule and the value that was wrong; the
// three edges (CLI exit codes, Python exceptions, HTTP status codes) translate
// the StatusCode in one table each.
//
// Thread safety: Status and Result are values; distinct objects may be used
// from distinct threads.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace reel {

enum class StatusCode {
  kOk = 0,
  kInvalid,           // input violates the contract (bad value, bad type, bad JSON)
  kNotFound,          // a file, episode or column that must exist does not
  kCorruption,        // a file exists but cannot be decoded (truncated parquet, ...)
  kIOError,           // the operating system refused an operation
  kPermissionDenied,  // the operating system refused access
  kNotSupported,      // a known but unsupported format or feature
  kAlreadyExists,     // a write would replace something it must not
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status OK() { return Status(); }
  static Status Invalid(std::string m) { return {StatusCode::kInvalid, std::move(m)}; }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status Corruption(std::string m) { return {StatusCode::kCorruption, std::move(m)}; }
  static Status IOError(std::string m) { return {StatusCode::kIOError, std::move(m)}; }
  static Status PermissionDenied(std::string m) {
    return {StatusCode::kPermissionDenied, std::move(m)};
  }
  static Status NotSupported(std::string m) { return {StatusCode::kNotSupported, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // The stable id of the contract or service rule that was broken ("zip.traversal",
  // "slice.layout"; docs/serve.md, docs/check-rules.md), or "" when the failure is not a
  // rule's (an I/O error). A field, never parsed back out of the message, so it survives
  // WithContext() and any rewording.
  const std::string& rule() const { return rule_; }
  // "Invalid: <message>", or "OK".
  std::string ToString() const;
  // Returns a copy whose message is "<context>: <message>" (the rule id is kept).
  Status WithContext(const std::string& context) const;
  // Returns a copy carrying the rule id `rule`. An OK Status stays OK and carries none.
  Status WithRule(std::string rule) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string rule_;
};

namespace internal {
// Prints `message` to stderr and aborts: for a broken invariant of the caller's (a
// programming error), never for bad input, which is a Status.
[[noreturn]] void DieWithMessage(const std::string& message);
}  // namespace internal

// Either a value or a non-OK Status (Arrow's Result, as strict): constructing one from an OK
// Status, and reading the value of an error, are programming errors that abort with a
// message naming the Status, in every build type (not undefined behaviour).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}               // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {        // NOLINT: implicit by design
    if (status_.ok()) internal::DieWithMessage("reel::Result constructed from an OK Status: it needs a value or an error");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *CheckedValue(); }
  const T& value() const& { return *CheckedValue(); }
  T&& value() && { return std::move(*CheckedValue()); }
  T* operator->() { return &*CheckedValue(); }
  const T* operator->() const { return &*CheckedValue(); }
  T& operator*() & { return *CheckedValue(); }
  const T& operator*() const& { return *CheckedValue(); }
  T ValueOr(T fallback) const { return ok() ? *value_ : std::move(fallback); }

 private:
  std::optional<T>& CheckedValue() {
    if (!value_) internal::DieWithMessage("reel::Result: value of an error: " + status_.ToString());
    return value_;
  }
  const std::optional<T>& CheckedValue() const {
    if (!value_) internal::DieWithMessage("reel::Result: value of an error: " + status_.ToString());
    return value_;
  }

  std::optional<T> value_;
  Status status_;
};

}  // namespace reel

#define REEL_CONCAT_INNER(a, b) a##b
#define REEL_CONCAT(a, b) REEL_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function when `expr` is not OK.
#define REEL_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::reel::Status _reel_st = (expr);            \
    if (!_reel_st.ok()) return _reel_st;         \
  } while (0)

#define REEL_ASSIGN_OR_RETURN_IMPL(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                               \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()

// `lhs = value of rexpr`, or return its Status from the enclosing function.
#define REEL_ASSIGN_OR_RETURN(lhs, rexpr) \
  REEL_ASSIGN_OR_RETURN_IMPL(REEL_CONCAT(_reel_res_, __LINE__), lhs, rexpr)
