// The resumable-upload spool reading its state back (serve/spool.h; found by fuzz_tus_state,
// fuzz/crashes/README.md TUS-STATE-TYPE): <id>.json is a file on disk that survives
// restarts, so a damaged one (a JSON array, a key of another type, a length beyond range)
// is an error naming the file and the key, never an exception out of the server.
#include "serve/spool.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include "testing/status_matchers.h"

namespace reel::serve {
namespace {

class SpoolGet : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = JoinPath(::testing::TempDir(), "reel_spool.XXXXXX");
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // Writes <id>.json (and an empty part file) by hand, as a damaged spool would hold it.
  void WriteState(const std::string& json) {
    std::ofstream(dir_ + "/" + kId + ".json") << json;
    std::ofstream(dir_ + "/" + kId + ".part") << "";
  }
  static constexpr const char* kId = "0123456789abcdef0123456789abcdef";
  std::string dir_;
};

TEST_F(SpoolGet, ReadsBackWhatCreateWrote) {
  Spool spool(dir_);
  SpoolUpload what;
  what.length = 1234;
  what.name = "ep.zip";
  what.project = "task_a";
  what.form_episode_index = 3;
  what.principal = "ci";
  auto made = spool.Create(what, {});
  ASSERT_OK(made);
  ASSERT_TRUE(made->has_value());
  auto up = spool.Get((*made)->id);
  ASSERT_OK(up);
  EXPECT_EQ(up->id, (*made)->id);
  EXPECT_EQ(up->length, 1234u);
  EXPECT_EQ(up->offset, 0u);
  EXPECT_EQ(up->name, "ep.zip");
  EXPECT_EQ(up->project, "task_a");
  EXPECT_EQ(up->form_episode_index, 3);
  EXPECT_EQ(up->principal, "ci");
}

TEST_F(SpoolGet, ADamagedStateIsAnErrorNamingTheFileAndTheKey) {
  const std::string file = std::string(kId) + ".json";
  const std::pair<const char*, const char*> cases[] = {
      {"[1, 2]", "must be a JSON object, found a JSON array"},
      {R"({"length": "5"})", "key \"length\""},
      {R"({"length": 1e30})", "key \"length\""},
      {R"({"length": -1})", "length -1"},
      {R"({"length": 5, "name": 7})", "key \"name\""},
      {R"({"length": 5, "project": null})", "key \"project\""},
      {R"({"length": 5, "form_episode_index": 2.5})", "key \"form_episode_index\""},
      {R"({"length": 5, "principal": ["ci"]})", "key \"principal\""},
  };
  for (const auto& [json, rule] : cases) {
    WriteState(json);
    Spool spool(dir_);
    auto up = spool.Get(kId);
    ASSERT_FALSE(up.ok()) << json;
    EXPECT_THAT(up.status().message(), ::testing::HasSubstr(file)) << up.status().ToString();
    EXPECT_THAT(up.status().message(), ::testing::HasSubstr(rule)) << json << " -> " << up.status().ToString();
  }
}

// Issue 27 (low): a client created 2,000 uploads of 8 GiB each in 17 s, none sent. One
// principal's pending uploads are bounded in count and in declared bytes; an imported one
// (RemovePart) stops counting; another principal is not affected; a restart (Init) counts
// what is on disk again.
TEST_F(SpoolGet, PendingUploadsAreBoundedPerPrincipal) {
  Spool spool(dir_);
  ASSERT_OK(spool.Init(3600));
  const PendingLimits limits{3, 1000};
  auto create = [&](const std::string& who, uint64_t length) {
    SpoolUpload what;
    what.length = length;
    what.principal = who;
    auto made = spool.Create(what, limits);
    EXPECT_OK(made);
    return made.ok() ? *made : std::nullopt;
  };
  auto a = create("rig-1", 100), b = create("rig-1", 100);
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(create("rig-1", 801));  // 1001 bytes declared
  auto c = create("rig-1", 800);
  ASSERT_TRUE(c);
  EXPECT_FALSE(create("rig-1", 0));  // a fourth
  EXPECT_EQ(spool.Pending("rig-1"), std::make_pair(3, uint64_t{1000}));
  EXPECT_TRUE(create("rig-2", 1000));
  spool.RemovePart(a->id);
  EXPECT_EQ(spool.Pending("rig-1"), std::make_pair(2, uint64_t{900}));
  EXPECT_TRUE(create("rig-1", 100));
  Spool restarted(dir_);
  ASSERT_OK(restarted.Init(3600));
  EXPECT_EQ(restarted.Pending("rig-1"), std::make_pair(3, uint64_t{1000}));
  EXPECT_EQ(restarted.Pending("rig-2"), std::make_pair(1, uint64_t{1000}));
}

}  // namespace
}  // namespace reel::serve
