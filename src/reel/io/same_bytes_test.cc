#include "io/same_bytes.h"

#include <gtest/gtest.h>

#include <fstream>

#include "io/scratch_dir.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

TEST(SameBytes, EqualOnlyForTheSameBytesOfRegularFiles) {
  auto dir = internal::ScratchDir::Create("reel-same-bytes-test");
  ASSERT_OK(dir);
  auto write = [&](const std::string& name, const std::string& bytes) {
    const std::string path = (*dir)->path() + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  };
  const std::string big((3 << 20) + 5, 'x');  // more than one block
  std::string other = big;
  other.back() = 'y';
  FileSystem* fs = DefaultFileSystem();
  EXPECT_TRUE(*internal::SameBytes(fs, write("a", big), write("b", big)));
  EXPECT_FALSE(*internal::SameBytes(fs, write("c", big), write("d", other)));
  EXPECT_FALSE(*internal::SameBytes(fs, write("e", "abc"), write("f", "abcd")));
  EXPECT_FALSE(*internal::SameBytes(fs, write("g", "abc"), (*dir)->path()));
  EXPECT_FALSE(*internal::SameBytes(fs, write("h", "abc"), (*dir)->path() + "/missing"));
}

}  // namespace
}  // namespace reel
