#include <gtest/gtest.h>

#include "reel/layout.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

TEST(Numbering, ContractExamples) {
  // contract §2: N=1 -> chunk-000/episode-000, N=1000 -> 000/999, N=1001 -> 001/000.
  EXPECT_EQ(LocateEpisode(1, 1000).chunk, 0);
  EXPECT_EQ(LocateEpisode(1, 1000).file, 0);
  EXPECT_EQ(LocateEpisode(1000, 1000).chunk, 0);
  EXPECT_EQ(LocateEpisode(1000, 1000).file, 999);
  EXPECT_EQ(LocateEpisode(1001, 1000).chunk, 1);
  EXPECT_EQ(LocateEpisode(1001, 1000).file, 0);
  // N=0 is clamped onto the same files as N=1 (reference behaviour).
  EXPECT_EQ(LocateEpisode(0, 1000).file, 0);
  EXPECT_EQ(EpisodeIndexOf({1, 0}, 1000), 1001);
  EXPECT_EQ(EpisodeIndexOf({0, 999}, 1000), 1000);
  // Upload suffix: N=1 and N=1001 share 0; _ep000011 is episode-011.
  EXPECT_EQ(EpisodeFileSuffix(1001, 1000), 0);
  EXPECT_EQ(EpisodeFileSuffix(12, 1000), 11);
  // chunks_size comes from info.json, never hard-coded.
  EXPECT_EQ(LocateEpisode(11, 10).chunk, 1);
  EXPECT_EQ(LocateEpisode(11, 10).file, 0);
}

TEST(PathTemplate, RendersContractTemplates) {
  auto t = PathTemplate::Parse("videos/chunk-{c:03d}/{image_key}/episode-{f:03d}.{ext}");
  ASSERT_OK(t);
  PathVars v;
  v.chunk = 1;
  v.file = 7;
  v.image_key = "stereo_depth";
  v.ext = "mkv";
  EXPECT_EQ(*t->Render(v), "videos/chunk-001/stereo_depth/episode-007.mkv");
  v.chunk = 1234;
  EXPECT_EQ(*t->Render(v), "videos/chunk-1234/stereo_depth/episode-007.mkv");
  v.image_key = "../x";
  EXPECT_FALSE(t->Render(v).ok());
}

TEST(PathTemplate, MatchesAndRejects) {
  auto t = *PathTemplate::Parse("videos/chunk-{c:03d}/{image_key}/episode-{f:03d}.{ext}");
  auto m = t.Match("videos/chunk-002/D435_head_rgb/episode-042.mp4");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(*m->chunk, 2);
  EXPECT_EQ(*m->file, 42);
  EXPECT_EQ(*m->image_key, "D435_head_rgb");
  EXPECT_EQ(*m->ext, "mp4");
  EXPECT_FALSE(t.Match("videos/chunk-02/x/episode-042.mp4").has_value());   // too narrow
  EXPECT_FALSE(t.Match("videos/chunk-0002/x/episode-042.mp4").has_value()); // padded too wide
  EXPECT_FALSE(t.Match("videos/chunk-002/x/episode-042").has_value());
  EXPECT_FALSE(t.Match("data/chunk-002/episode-042.parquet").has_value());
  auto legacy = *PathTemplate::Parse("data/chunk-{c:03d}/episode-{f:03d}.parquet");
  EXPECT_FALSE(legacy.Match("data/chunk-000/file-000.parquet").has_value());
}

TEST(PathTemplate, LeRobotPlaceholders) {
  auto t = PathTemplate::Parse(
      "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4");
  ASSERT_OK(t);
  PathVars v;
  v.chunk = 1;
  v.episode_index = 1000;
  v.image_key = "observation.images.top";
  EXPECT_EQ(*t->Render(v), "videos/chunk-001/observation.images.top/episode_001000.mp4");
}

TEST(PathTemplate, ParseErrors) {
  EXPECT_FALSE(PathTemplate::Parse("data/{nope}.parquet").ok());
  EXPECT_FALSE(PathTemplate::Parse("data/{c:03x}.parquet").ok());
  EXPECT_FALSE(PathTemplate::Parse("data/{c:03d.parquet").ok());
  EXPECT_FALSE(PathTemplate::Parse("/abs/{c}.parquet").ok());
  EXPECT_FALSE(PathTemplate::Parse("../{c}.parquet").ok());
  EXPECT_FALSE(PathTemplate::Parse("data/{image_key}{ext}").ok());
}

TEST(PathTemplate, HostileTemplatesAreBounded) {
  // A width of 999999999 took `reel show` 17 s and 4.9 GB; 20 digits threw from std::stoi.
  for (const char* t : {"data/chunk-{c:999999999d}/episode-{f:03d}.parquet",
                        "data/chunk-{c:99999999999999999999d}/x.parquet", "data/{c:019d}.parquet"}) {
    auto p = PathTemplate::Parse(t);
    ASSERT_FALSE(p.ok()) << t;
    EXPECT_THAT(p.status().message(), ::testing::HasSubstr("width")) << p.status().message();
  }
  EXPECT_OK(PathTemplate::Parse("data/{c:018d}.parquet"));
  EXPECT_FALSE(PathTemplate::Parse("data/" + std::string(600, 'x') + "/{f:03d}.parquet").ok());
  // Three string placeholders in a component would make matching cubic and more.
  EXPECT_FALSE(PathTemplate::Parse("v/{image_key}a{ext}b{image_key}.mp4").ok());
  auto two = PathTemplate::Parse("v/{image_key}.{ext}");
  ASSERT_OK(two);
  auto m = two->Match("v/" + std::string(250, 'a') + ".mp4");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->ext, "mp4");
}

TEST(NonData, ContractSection11) {
  for (const char* name : {".lock", ".episode-001.parquet.tmp", "recycled_episode.json", "_trash",
                           "_migrate_backup_20250101", "_episodes_task_3.parquet",
                           ".stats_state.json"})
    EXPECT_TRUE(IsNonDataName(name)) << name;
  for (const char* name : {"info.json", "episode-000.parquet", "file-000.parquet"})
    EXPECT_FALSE(IsNonDataName(name)) << name;
}

}  // namespace
}  // namespace reel

namespace reel {
namespace {

TEST(PathTemplateGlob, AListerStandsInForListDirByRelativePath) {
  auto tmpl = PathTemplate::Parse("data/chunk-{c:03d}/episode-{f:03d}.parquet");
  ASSERT_OK(tmpl);
  // No file exists: every listing comes from the lister, keyed by the path under the root.
  std::vector<std::string> asked;
  PathTemplate::DirLister list = [&](const std::string& rel) -> Result<std::shared_ptr<const std::vector<DirEntry>>> {
    asked.push_back(rel);
    if (rel == "data")
      return std::make_shared<const std::vector<DirEntry>>(std::vector<DirEntry>{
          {"chunk-000", FileType::kDirectory}, {"chunk-001", FileType::kDirectory}, {".hidden", FileType::kDirectory},
          {"chunk-002", FileType::kFile}});
    if (rel == "data/chunk-000")
      return std::make_shared<const std::vector<DirEntry>>(std::vector<DirEntry>{
          {"episode-000.parquet", FileType::kFile}, {"episode-001.parquet", FileType::kDirectory},
          {"notes.txt", FileType::kFile}, {"episode-002.parquet", FileType::kFile}});
    return Status::NotFound(rel);
  };
  // "data" is a literal component: probed with a stat, which must find a directory.
  const std::string root = ::testing::TempDir() + "/reel_glob_lister_test";
  ASSERT_OK(DefaultFileSystem()->CreateDirs(root + "/data"));
  auto found = tmpl->Glob(DefaultFileSystem(), root, {}, list);
  ASSERT_OK(found);
  std::vector<std::string> paths;
  for (const auto& [path, vars] : *found) paths.push_back(path);
  EXPECT_EQ(paths, (std::vector<std::string>{"data/chunk-000/episode-000.parquet", "data/chunk-000/episode-002.parquet"}));
  EXPECT_EQ(asked, (std::vector<std::string>{"data", "data/chunk-000", "data/chunk-001"}));
  EXPECT_EQ(*(*found)[1].second.file, 2);
}

}  // namespace
}  // namespace reel

#include "layout/journal.h"

namespace reel {
namespace {

TEST(PendingCommits, AWholeChangeJournalShowsItsEpisodesWhileTheirJournalsRemain) {
  FileSystem* fs = DefaultFileSystem();
  const std::string root = ::testing::TempDir() + "/reel_pending_commits_test";
  (void)RemoveAll(fs, root);
  ASSERT_OK(fs->CreateDirs(root + "/meta"));
  for (const char* journal : {".push-2.json", ".push-3.json", ".commit-5.json"})
    ASSERT_OK(WriteFileAtomic(fs, root + "/meta/" + journal, "{}"));
  auto sorted = [&] {
    std::vector<int64_t> v = internal::PendingCommits(fs, root).ValueOr({-1});
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(sorted(), (std::vector<int64_t>{2, 3, 5}));
  // Past the commit point: the change's episode 2 is shown, 3 (not in it) stays hidden.
  ASSERT_TRUE(WriteFileAtomic(fs, internal::ChangeJournalPath(root), R"({"episodes": [2], "files": {}})").ok());
  EXPECT_EQ(sorted(), (std::vector<int64_t>{3, 5}));
  // A torn change journal never reached its commit point: nothing is shown early.
  ASSERT_TRUE(WriteFileAtomic(fs, internal::ChangeJournalPath(root), R"({"episodes": [2)").ok());
  EXPECT_EQ(sorted(), (std::vector<int64_t>{2, 3, 5}));
  (void)RemoveAll(fs, root);
}

// Episode numbers of a call that returns them, or a Result of them.
template <typename T>
std::vector<int64_t> Numbers(const T& r) {
  if constexpr (requires { r.ok(); }) {
    return r.ok() ? *r : std::vector<int64_t>{-999};
  } else {
    return r;
  }
}

// A journal name reel never writes (a leading zero) is no journal (found with fuzz_journal):
// before, meta/.commit-01.json hid episode 1 and every recovery failed naming
// meta/.commit-1.json, which does not exist, so no writer could take the task's lock.
TEST(PendingCommits, AJournalNameWithALeadingZeroIsNotReels) {
  FileSystem* fs = DefaultFileSystem();
  const std::string root = ::testing::TempDir() + "/reel_journal_names_test";
  (void)RemoveAll(fs, root);
  ASSERT_OK(fs->CreateDirs(root + "/meta"));
  for (const char* journal : {".commit-01.json", ".push-007.json", ".commit-00.json"})
    ASSERT_TRUE(WriteFileAtomic(fs, root + "/meta/" + journal, R"({"renames": []})").ok());
  EXPECT_EQ(Numbers(internal::PendingCommits(fs, root)), std::vector<int64_t>{});
  EXPECT_EQ(Numbers(internal::CommitJournals(fs, root)), std::vector<int64_t>{});
  EXPECT_EQ(Numbers(internal::PushJournals(fs, root)), std::vector<int64_t>{});
  Status recovered = internal::RecoverCommits(fs, root);
  EXPECT_OK(recovered);
  // reel's own names still count: N = 0 and N = 10.
  for (const char* journal : {".commit-0.json", ".push-10.json"})
    ASSERT_OK(WriteFileAtomic(fs, root + "/meta/" + journal, "{}"));
  std::vector<int64_t> pending = Numbers(internal::PendingCommits(fs, root));
  std::sort(pending.begin(), pending.end());
  EXPECT_EQ(pending, (std::vector<int64_t>{0, 10}));
  (void)RemoveAll(fs, root);
}

}  // namespace
}  // namespace reel

namespace reel {
namespace {

// The reference collector's layout: BASE/data/recordings/<task> and BASE/keypoints_output/<task>.
TEST(KeypointsMirror, FoundBesideTheRecordingsTreeOrGivenExplicitly) {
  FileSystem* fs = DefaultFileSystem();
  const std::string base = ::testing::TempDir() + "/reel_keypoints_mirror_test";
  ASSERT_OK(RemoveAll(fs, base));
  const std::string task = base + "/data/recordings/pick";
  ASSERT_OK(fs->CreateDirs(task + "/meta"));
  auto missing = FindKeypointsMirror(fs, task + "/");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), ::testing::HasSubstr(base + "/keypoints_output/pick"));

  ASSERT_OK(fs->CreateDirs(base + "/keypoints_output/pick/episode_000001"));
  auto found = FindKeypointsMirror(fs, task + "/");
  ASSERT_OK(found);
  EXPECT_EQ(*found, base + "/keypoints_output/pick");
  EXPECT_EQ(KeypointsEpisodeDir(*found, 1), base + "/keypoints_output/pick/episode_000001");

  auto given = FindKeypointsMirror(fs, task, base + "/keypoints_output/pick/episode_000001");
  ASSERT_OK(given);
  EXPECT_FALSE(FindKeypointsMirror(fs, task, base + "/nowhere").ok());
}

}  // namespace
}  // namespace reel

namespace reel {
namespace {

// The reference collector's slot_base() (collector/core/device_naming.py:
// re.sub(r"[^0-9A-Za-z_一-鿿]+", "_", name.strip()).strip("_") or fallback), case by case.
TEST(SlotBase, CleansAsTheReferenceDoes) {
  EXPECT_EQ(SlotBase("D405_head", "x"), "D405_head");
  EXPECT_EQ(SlotBase("桌面相机", "x"), "桌面相机");
  EXPECT_EQ(SlotBase("my cam!", "x"), "my_cam");
  EXPECT_EQ(SlotBase("  __Cam-01__ ", "x"), "Cam_01");
  EXPECT_EQ(SlotBase("a_ b", "x"), "a__b");           // a '_' next to a cleaned run stays
  EXPECT_EQ(SlotBase("Caméra", "x"), "Cam_ra");        // é is outside the class
  EXPECT_EQ(SlotBase("頭部 カメラ", "x"), "頭部");       // kana are outside U+4E00-U+9FFF
  EXPECT_EQ(SlotBase("Ｄ４０５", "d405"), "d405");      // full-width letters: nothing left
  EXPECT_EQ(SlotBase("\xF0\x9F\x8E\xA5\xF0\x9F\x8E\xA5", "d405"), "d405");  // emoji
  EXPECT_EQ(SlotBase("", "fallback"), "fallback");
  EXPECT_EQ(SlotBase("cam\xFF\xFE" "1", "x"), "cam_1");  // bytes that are not UTF-8: other characters
  EXPECT_EQ(SlotBase("\xE4\xB8", "x"), "x");            // a truncated ideograph
  EXPECT_EQ(SlotBase("\xC0\xB1", "x"), "x");            // an overlong '1' is not a digit
  EXPECT_EQ(SlotBase("一鿿", "x"), "一鿿");              // both ends of the range
}

TEST(SlotBase, ASlotNameIsAFixedPoint) {
  for (const char* ok : {"head_left_rgb", "D405_head_rgb", "桌面相机_rgb", "a__b", "d435_rgb_2"})
    EXPECT_TRUE(IsSlotName(ok)) << ok;
  for (const char* bad : {"", "_rgb", "rgb_", "my cam", "cam/../x", "Cam-01", "é"}) EXPECT_FALSE(IsSlotName(bad)) << bad;
}

// allocate_slot_names(user_name, model_name, occupied_rgb_slots).
TEST(AllocateSlotNames, NamesAndNumbersAsTheReferenceDoes) {
  auto both = [](const AllocatedSlots& s) { return s.rgb + " " + s.depth; };
  EXPECT_EQ(both(AllocateSlotNames("D405_head", "Intel RealSense D405", {})), "D405_head_rgb D405_head_depth");
  EXPECT_EQ(both(AllocateSlotNames("桌面相机", "Intel RealSense D435", {})), "桌面相机_rgb 桌面相机_depth");
  EXPECT_EQ(both(AllocateSlotNames("", "Intel RealSense D435", {})), "d435_rgb d435_depth");
  EXPECT_EQ(both(AllocateSlotNames("", "Intel RealSense D435", {"d435_rgb"})), "d435_rgb_2 d435_depth_2");
  EXPECT_EQ(both(AllocateSlotNames("", "D435I", {"d435_rgb", "d435_rgb_2"})), "d435_rgb_3 d435_depth_3");
  EXPECT_EQ(both(AllocateSlotNames("D405_depth", "D405", {})), "D405_depth_rgb D405_depth");
  EXPECT_EQ(both(AllocateSlotNames("", "Intel RealSense", {})), "realsense_rgb realsense_depth");
  EXPECT_EQ(both(AllocateSlotNames("\xF0\x9F\x8E\xA5", "D405", {"head_left_rgb"})), "d405_rgb d405_depth");
}

// 000 §8: "RGB 的 _aux 类辅助流归主 key 同一目录": <stem>_aux[_<name>].<mp4|mkv> beside <stem>.<ext>.
TEST(AuxStreamMainStem, NamesBesideTheirVideo) {
  EXPECT_EQ(AuxStreamMainStem("episode-000_aux.mp4"), "episode-000");
  EXPECT_EQ(AuxStreamMainStem("episode-012_aux_heatmap.mkv"), "episode-012");
  EXPECT_EQ(AuxStreamMainStem("episode-000_aux_a_b2.mp4"), "episode-000");
  for (const char* no : {"episode-000.mp4", "episode-000_aux.parquet", "_aux.mp4", "episode-000_aux_.mp4",
                         "episode-000_auxx.mp4", "episode-000_aux-x.mp4", "episode-000_aux", "aux.mp4"})
    EXPECT_EQ(AuxStreamMainStem(no), std::nullopt) << no;
}

}  // namespace
}  // namespace reel
