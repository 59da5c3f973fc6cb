// Test-only: runs a shell command (the ffmpeg / ffprobe CLI making or inspecting fixtures).
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace reel::testing {

// Runs `cmd` through /bin/sh; returns its stdout, and fails the test on a non-zero exit.
inline std::string Shell(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) {
    ADD_FAILURE() << "popen failed: " << cmd;
    return out;
  }
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int rc = ::pclose(p);
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << "command failed: " << cmd;
  return out;
}

}  // namespace reel::testing
