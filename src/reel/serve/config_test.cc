// The serve config is read from outside: numbers that do not fit their field are errors.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "reel/serve.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

Result<ServeConfig> LoadText(const std::string& text) {
  char path[] = "/tmp/reel-config-test-XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path) << text;
  auto config = LoadServeConfig(path);
  ::unlink(path);
  return config;
}

TEST(ServeConfig, NumbersBeyondTheirFieldAreInvalid) {
  // {"port": 1e10} and {"workers": 3e9} were cast to int unchecked (UBSan float-cast-overflow).
  for (const char* text : {R"({"root": "/srv/reel", "port": 1e10})",
                           R"({"root": "/srv/reel", "limits": {"workers": 3e9}})",
                           R"({"root": "/srv/reel", "limits": {"max_request_bytes": 1.8446744073709552e19}})",
                           R"({"root": "/srv/reel", "port": -1})", R"({"root": "/srv/reel", "port": 1e999})"}) {
    auto config = LoadText(text);
    EXPECT_FALSE(config.ok()) << text;
    if (!config.ok()) EXPECT_EQ(config.status().code(), StatusCode::kInvalid) << config.status().ToString();
  }
  auto ok = LoadText(R"({"root": "/srv/reel", "port": 8765, "limits": {"workers": 4}})");
  ASSERT_OK(ok);
  EXPECT_EQ(ok->port, 8765);
}

}  // namespace
}  // namespace reel

namespace reel {
namespace {

// Issue 27 (low): duplicate token names were accepted, and a resumable upload belongs to
// the name that began it, so two tokens of one name shared each other's uploads.
TEST(ServeConfig, PrincipalNamesAreUnique) {
  const std::string hash(64, 'a');
  const std::string token = R"({"name": "rig", "sha256": ")" + hash + R"(", "projects": ["p"]})";
  const std::string user = R"({"name": "rig", "password_hash": "pbkdf2-sha256$1$aa$bb", "projects": ["p"]})";
  for (const std::string& text :
       {R"({"root": "/srv/reel", "tokens": [)" + token + "," + token + "]}",
        R"({"root": "/srv/reel", "tokens": [)" + token + R"(], "users": [)" + user + "]}"}) {
    auto config = LoadText(text);
    ASSERT_FALSE(config.ok()) << text;
    EXPECT_THAT(config.status().message(), ::testing::HasSubstr("\"rig\"")) << config.status().ToString();
  }
  EXPECT_TRUE(LoadText(R"({"root": "/srv/reel", "tokens": [)" + token + "]}").ok());
}

}  // namespace
}  // namespace reel
