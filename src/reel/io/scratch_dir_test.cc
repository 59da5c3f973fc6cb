// Scratch directories: what an interrupted process removes before it ends.
#include "io/scratch_dir.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "io/temp_name.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

TEST(ScratchDir, RemoveOpenScratchDirsTakesEveryOpenOneAndOnlyThose) {
  auto parent = internal::ScratchDir::Create("reel-scratch-test");
  ASSERT_OK(parent);
  const std::string base = (*parent)->path();
  std::string gone;
  {
    auto closed = internal::ScratchDir::Create("closed", base);
    ASSERT_OK(closed);
    gone = (*closed)->path();
  }
  auto open = internal::ScratchDir::Create("open", base);
  ASSERT_OK(open);
  const std::string keep = base + "/not-scratch";
  std::filesystem::create_directories(keep + "/x");
  const std::string file = (*open)->path() + ".tmp";
  { std::ofstream(file) << "temp"; }
  internal::HoldScratchPath(file);
  EXPECT_EQ(RemoveOpenScratchDirs(), 3);  // `file`, `open`, and `parent` (with `keep` inside it)
  EXPECT_FALSE(std::filesystem::exists(file));
  internal::ReleaseScratchPath(file);
  EXPECT_FALSE(std::filesystem::exists((*open)->path()));
  EXPECT_FALSE(std::filesystem::exists(base));
  EXPECT_FALSE(std::filesystem::exists(gone));
  EXPECT_EQ(RemoveOpenScratchDirs(), 0);  // nothing open is left on disk
}

// A killed owner's scratch directory goes when its pid is gone here; another host's (a
// work directory on NFS, a $TMPDIR shared with another container) only after a day.
TEST(ScratchDir, AnotherHostsScratchDirectoryIsSweptOnlyByAge) {
  auto parent = internal::ScratchDir::Create("reel-scratch-host-test");
  ASSERT_OK(parent);
  const std::string base = (*parent)->path();
  std::string other = internal::HostId();
  other[0] = other[0] == '0' ? '1' : '0';
  const std::string dead = "99999999";  // above pid_max: no process has it
  const auto put = [&](const std::string& name, int hours) {
    const std::filesystem::path dir = std::filesystem::path(base) / name;
    std::filesystem::create_directories(dir / "x");
    std::filesystem::last_write_time(dir, std::filesystem::file_time_type::clock::now() - std::chrono::hours(hours));
  };
  put("work-" + other + "-" + dead + "-aaaaaa", 1);              // another host's, an hour old: kept
  put("work-" + other + "-" + dead + "-bbbbbb", 25);             // another host's, over a day: swept
  put("work-" + internal::HostId() + "-" + dead + "-cccccc", 1);  // this host's, pid gone: swept
  put("work-" + dead + "-dddddd", 1);                            // an earlier version's, pid gone: swept
  auto made = internal::ScratchDir::Create("work", base);
  ASSERT_OK(made);
  EXPECT_TRUE(BaseName((*made)->path()).starts_with("work-" + internal::HostId() + "-" + std::to_string(::getpid()) + "-"))
      << (*made)->path();
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(base)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  std::vector<std::string> expected = {"work-" + other + "-" + dead + "-aaaaaa", BaseName((*made)->path())};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(left, expected);
}

}  // namespace
}  // namespace reel
