// Internal: a private scratch directory outside the task (under $TMPDIR), for the
// files a pack generates (a single-row episodes slice, re-encoded videos). Removed
// with everything in it when the owner goes out of scope.
#pragma once

#include <memory>
#include <string>

#include "reel/status.h"

namespace reel::internal {

class ScratchDir {
 public:
  // Errors: IOError naming the template when mkdtemp fails.
  static Result<std::unique_ptr<ScratchDir>> Create(const std::string& prefix);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  explicit ScratchDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace reel::internal
