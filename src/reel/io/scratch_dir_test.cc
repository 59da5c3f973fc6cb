// Scratch directories: what an interrupted process removes before it ends.
#include "io/scratch_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace reel {
namespace {

TEST(ScratchDir, RemoveOpenScratchDirsTakesEveryOpenOneAndOnlyThose) {
  auto parent = internal::ScratchDir::Create("reel-scratch-test");
  ASSERT_TRUE(parent.ok()) << parent.status().ToString();
  const std::string base = (*parent)->path();
  std::string gone;
  {
    auto closed = internal::ScratchDir::Create("closed", base);
    ASSERT_TRUE(closed.ok());
    gone = (*closed)->path();
  }
  auto open = internal::ScratchDir::Create("open", base);
  ASSERT_TRUE(open.ok());
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

}  // namespace
}  // namespace reel
