// Findings: what a judgement of a task or dataset reports, one problem at a time.
//
// The vocabulary shared by the checker (reel/check.h) and the foreign-dataset
// validators (reel/dataset.h), which sit in different layers; it depends on nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace reel {

enum class Severity { kInfo, kWarning, kError };
const char* SeverityName(Severity severity);  // "info", "warning", "error"

struct Finding {
  std::string rule;  // a stable rule id, listed by Rules() (reel/check.h)
  Severity severity = Severity::kError;
  std::string path;  // relative to the task root; "" for the task itself
  std::string message;
};

// The findings about one task or dataset.
struct TaskReport {
  std::string path;      // the task root as given
  std::string format;    // DatasetFormatName, or "" when unreadable
  int64_t episodes = 0;  // episodes found
  std::vector<Finding> findings;
  int64_t Count(Severity severity) const;
};

}  // namespace reel
