// InspectSlice / ExtractSlice on hostile zips: each is refused with its rule id, and
// extraction never writes outside its directory. Most zips are written byte by byte
// here (independently of libzip's writer), since libzip refuses to write many of them.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <zip.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "pack/slice_rules.h"
#include "reel/pack.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

uint32_t Crc32(const std::string& data) {
  uint32_t crc = 0xffffffffu;
  for (unsigned char c : data) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

// One entry of a hand-written zip (APPNOTE 4.3). Stored unless `method` says
// otherwise; `declared` overrides the uncompressed size in both headers.
struct RawEntry {
  std::string name;
  std::string data;
  uint16_t flags = 0x0800;  // UTF-8 names
  uint16_t method = 0;
  int64_t declared = -1;
  uint32_t unix_mode = 0100644;
  bool share_first_local = false;  // central entry points at entry 0's local header
};

void Put16(std::string& s, uint32_t v) {
  s.push_back(static_cast<char>(v & 0xff));
  s.push_back(static_cast<char>((v >> 8) & 0xff));
}
void Put32(std::string& s, uint32_t v) {
  Put16(s, v & 0xffff);
  Put16(s, v >> 16);
}

std::string BuildZip(const std::vector<RawEntry>& entries) {
  std::string out, central;
  std::vector<uint32_t> offsets;
  for (const RawEntry& e : entries) {
    const uint32_t size = e.declared >= 0 ? static_cast<uint32_t>(e.declared) : e.data.size();
    if (e.share_first_local) {
      offsets.push_back(0);
    } else {
      offsets.push_back(static_cast<uint32_t>(out.size()));
      Put32(out, 0x04034b50);
      Put16(out, 20), Put16(out, e.flags), Put16(out, e.method), Put16(out, 0), Put16(out, 0x21);
      Put32(out, Crc32(e.data)), Put32(out, e.data.size()), Put32(out, size);
      Put16(out, e.name.size()), Put16(out, 0);
      out += e.name + e.data;
    }
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    const RawEntry& e = entries[i];
    const RawEntry& local = e.share_first_local ? entries[0] : e;
    const uint32_t size = e.declared >= 0 ? static_cast<uint32_t>(e.declared) : local.data.size();
    Put32(central, 0x02014b50);
    Put16(central, (3 << 8) | 20), Put16(central, 20), Put16(central, e.flags), Put16(central, e.method);
    Put16(central, 0), Put16(central, 0x21);
    Put32(central, Crc32(local.data)), Put32(central, local.data.size()), Put32(central, size);
    Put16(central, e.name.size()), Put16(central, 0), Put16(central, 0), Put16(central, 0);
    Put16(central, 0), Put32(central, e.unix_mode << 16), Put32(central, offsets[i]);
    central += e.name;
  }
  const uint32_t cd_offset = out.size();
  out += central;
  Put32(out, 0x06054b50);
  Put16(out, 0), Put16(out, 0), Put16(out, entries.size()), Put16(out, entries.size());
  Put32(out, central.size()), Put32(out, cd_offset), Put16(out, 0);
  return out;
}

constexpr const char* kInfo = R"({"format": "pooled_episodes_v1", "chunks_size": 1000})";

// A valid slice of N=5 (chunk 0, file 4).
std::vector<RawEntry> GoodEntries() {
  return {{"videos/chunk-000/cam_rgb/episode-004.mp4", "rgb video bytes"},
          {"videos/chunk-000/cam_depth/episode-004.mkv", std::string("depth\0\x01\x02", 8)},
          {"data/chunk-000/episode-004.parquet", "PAR1 data PAR1"},
          {"meta/episodes/chunk-000/episode-004.parquet", "PAR1 row PAR1"},
          {"meta/info.json", kInfo},
          {"meta/stats.json", "{}"},
          {"meta/tasks.jsonl", "{\"task_index\": 0, \"task\": \"t\"}\n"}};
}

// Writes `entries` with libzip's own writer (names, data and, when not the default,
// the Unix mode), each entry compressed with `method`.
void WriteWithLibzip(const std::string& path, const std::vector<RawEntry>& entries, int32_t method) {
  int err = 0;
  zip_t* za = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  ASSERT_NE(za, nullptr);
  for (const RawEntry& e : entries) {
    zip_source_t* src = zip_source_buffer(za, e.data.data(), e.data.size(), 0);
    const zip_int64_t idx = zip_file_add(za, e.name.c_str(), src, ZIP_FL_ENC_UTF_8);
    ASSERT_GE(idx, 0) << e.name;
    ASSERT_EQ(zip_set_file_compression(za, idx, method, 9), 0);
    if (e.unix_mode != RawEntry{}.unix_mode) {
      ASSERT_EQ(zip_file_set_external_attributes(za, idx, 0, ZIP_OPSYS_UNIX, e.unix_mode << 16), 0);
    }
  }
  ASSERT_EQ(zip_close(za), 0);
}

class SliceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = JoinPath(::testing::TempDir(), "reel_slice_test.XXXXXX");
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    tmp_ = tmpl;
    // Extraction goes two levels down, so "../x" and "../../x" would still land in tmp_.
    ASSERT_OK(DefaultFileSystem()->CreateDirs(JoinPath(tmp_, "srv/in")));
    zip_ = JoinPath(tmp_, "slice.zip");
    dir_ = JoinPath(tmp_, "srv/in/x");
  }
  void TearDown() override { std::filesystem::remove_all(tmp_); }

  void Write(const std::string& bytes) {
    ASSERT_OK(WriteFileAtomic(DefaultFileSystem(), zip_, bytes));
  }
  // Every file under tmp_ other than the zip itself.
  std::vector<std::string> FilesOutsideZip() {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::recursive_directory_iterator(tmp_))
      if (!e.is_directory() && e.path() != zip_)
        out.push_back(std::filesystem::relative(e.path(), tmp_).string());
    std::sort(out.begin(), out.end());
    return out;
  }
  // Asserts both InspectSlice and ExtractSlice refuse with `rule`, and that the
  // refused extraction wrote no file anywhere.
  void ExpectRefused(const std::string& rule, const SliceLimits& limits = {},
                     StatusCode code = StatusCode::kInvalid) {
    auto inspected = InspectSlice(zip_, limits);
    ASSERT_FALSE(inspected.ok()) << "accepted, expected " << rule;
    EXPECT_EQ(RuleOf(inspected.status()), rule) << inspected.status().ToString();
    EXPECT_EQ(inspected.status().code(), code) << inspected.status().ToString();
    auto extracted = ExtractSlice(zip_, dir_, limits);
    ASSERT_FALSE(extracted.ok());
    EXPECT_EQ(RuleOf(extracted.status()), rule) << extracted.status().ToString();
    EXPECT_EQ(FilesOutsideZip(), std::vector<std::string>{});
  }
  void ExpectRefused(const std::vector<RawEntry>& entries, const std::string& rule,
                     const SliceLimits& limits = {}, StatusCode code = StatusCode::kInvalid) {
    Write(BuildZip(entries));
    ExpectRefused(rule, limits, code);
  }

  std::string tmp_, zip_, dir_;
};

std::vector<RawEntry> GoodWith(RawEntry extra) {
  auto e = GoodEntries();
  e.push_back(std::move(extra));
  return e;
}

TEST_F(SliceTest, GoodSliceExtractsByteIdentically) {
  Write(BuildZip(GoodEntries()));
  auto manifest = InspectSlice(zip_);
  ASSERT_OK(manifest);
  EXPECT_EQ(manifest->chunk, 0);
  EXPECT_EQ(manifest->file, 4);
  ASSERT_EQ(manifest->entries.size(), GoodEntries().size());
  auto extracted = ExtractSlice(zip_, dir_);
  ASSERT_OK(extracted);
  for (const RawEntry& e : GoodEntries()) {
    auto bytes = DefaultFileSystem()->ReadFile(JoinPath(dir_, e.name));
    ASSERT_OK(bytes) << e.name;
    EXPECT_EQ(*bytes, e.data) << e.name;
  }
  EXPECT_EQ(FilesOutsideZip().size(), GoodEntries().size());
  // The directory must be new: a second extraction into it is refused.
  EXPECT_EQ(ExtractSlice(zip_, dir_).status().code(), StatusCode::kAlreadyExists);
}

TEST_F(SliceTest, LibzipWrittenDeflatedSliceIsAccepted) {
  WriteWithLibzip(zip_, GoodEntries(), ZIP_CM_DEFLATE);
  auto extracted = ExtractSlice(zip_, dir_);
  ASSERT_OK(extracted);
  for (const RawEntry& e : GoodEntries())
    EXPECT_EQ(*DefaultFileSystem()->ReadFile(JoinPath(dir_, e.name)), e.data);
}

TEST_F(SliceTest, NotAZip) {
  Write("this is not a zip file at all");
  ExpectRefused("zip.unreadable");
}

TEST_F(SliceTest, CrcMismatchIsUnreadable) {
  std::string bytes = BuildZip(GoodEntries());
  const size_t at = bytes.find("rgb video bytes");
  ASSERT_NE(at, std::string::npos);
  bytes[at] = 'R';  // data no longer matches the CRC in both headers
  Write(bytes);
  ASSERT_OK(InspectSlice(zip_));  // headers alone are fine
  auto extracted = ExtractSlice(zip_, dir_);
  ASSERT_FALSE(extracted.ok());
  EXPECT_EQ(RuleOf(extracted.status()), "zip.unreadable") << extracted.status().ToString();
  EXPECT_THAT(extracted.status().message(), ::testing::HasSubstr("cam_rgb"));
}

TEST_F(SliceTest, TooManyEntries) {
  SliceLimits limits;
  limits.max_entries = 3;
  ExpectRefused(GoodEntries(), "zip.entry_count", limits);
}

TEST_F(SliceTest, BadNames) {
  ExpectRefused(GoodWith({"", "x"}), "zip.name");
  ExpectRefused(GoodWith({"meta\\info.json", "x"}), "zip.name");
  // Not UTF-8, without the UTF-8 flag (libzip hands the raw bytes out) ...
  ExpectRefused(GoodWith({"meta/\xff\xfe.json", "x", /*flags=*/0}), "zip.name");
  // ... and with it (libzip itself refuses the archive as inconsistent).
  ExpectRefused(GoodWith({"meta/\xff\xfe.json", "x"}), "zip.unreadable");
  ExpectRefused(GoodWith({"meta//info.json", "x"}), "zip.name");
  ExpectRefused(GoodWith({"meta/./info.json", "x"}), "zip.name");
  ExpectRefused(GoodWith({"meta/", ""}), "zip.name");
  ExpectRefused(GoodWith({"/etc/passwd", "x"}), "zip.absolute");
  ExpectRefused(GoodWith({"C:/evil", "x"}), "zip.absolute");
  ExpectRefused(GoodWith({"../evil", "x"}), "zip.traversal");
  ExpectRefused(GoodWith({"../../evil", "x"}), "zip.traversal");
  ExpectRefused(GoodWith({"videos/../../../evil", "x"}), "zip.traversal");
}

TEST_F(SliceTest, SymlinkAndOtherTypes) {
  auto link = GoodEntries();
  link[0].unix_mode = 0120777;  // the "video" is a symlink to anywhere
  link[0].data = "/etc/passwd";
  ExpectRefused(link, "zip.symlink");
  auto fifo = GoodEntries();
  fifo[2].unix_mode = 0010644;
  ExpectRefused(fifo, "zip.symlink");
}

TEST_F(SliceTest, LibzipWrittenSymlinkAttributes) {
  auto entries = GoodEntries();
  entries[3].unix_mode = 0120777;
  WriteWithLibzip(zip_, entries, ZIP_CM_STORE);
  ExpectRefused("zip.symlink");
}

TEST_F(SliceTest, Duplicates) {
  // Byte-identical names (libzip will not write these).
  ExpectRefused(GoodWith({"meta/info.json", kInfo}), "zip.duplicate");
  // Equal after case folding: one file on a case-insensitive disk.
  ExpectRefused(GoodWith({"meta/INFO.json", kInfo}), "zip.duplicate");
}

TEST_F(SliceTest, Encrypted) {
  auto entries = GoodEntries();
  entries[2].flags |= 0x0001;  // traditional PKWARE encryption
  ExpectRefused(entries, "zip.encrypted");
}

TEST_F(SliceTest, UnknownMethodIsNotSupported) {
  auto entries = GoodEntries();
  entries[2].method = 12;  // bzip2
  ExpectRefused(entries, "zip.method", {}, StatusCode::kNotSupported);
}

TEST_F(SliceTest, DeclaredSizesOverLimits) {
  SliceLimits entry;
  entry.max_entry_bytes = 10;
  ExpectRefused(GoodEntries(), "zip.entry_size", entry);
  SliceLimits meta;
  meta.max_meta_bytes = 20;  // meta/info.json is longer
  ExpectRefused(GoodEntries(), "zip.entry_size", meta);
  SliceLimits total;
  total.max_total_bytes = 60;
  ExpectRefused(GoodEntries(), "zip.total_size", total);
}

TEST_F(SliceTest, Ratio) {
  // A stored entry claiming 1 MB from 15 bytes (a header lie, but a ratio first).
  auto entries = GoodEntries();
  entries[0].declared = 1 << 20;
  ExpectRefused(entries, "zip.ratio");
}

TEST_F(SliceTest, DeflateBombByRatio) {
  auto entries = GoodEntries();
  entries[0].data = std::string(4 << 20, '\0');  // ~4 KB deflated: ratio ~1000
  WriteWithLibzip(zip_, entries, ZIP_CM_DEFLATE);
  ExpectRefused("zip.ratio");
}

TEST_F(SliceTest, LyingUncompressedSizeIsCaughtWhileExtracting) {
  // A deflated entry whose headers claim 100 bytes but which inflates to 64 KiB.
  auto entries = GoodEntries();
  entries[2].data = std::string(64 << 10, 'a');
  WriteWithLibzip(zip_, entries, ZIP_CM_DEFLATE);
  std::string bytes = *DefaultFileSystem()->ReadFile(zip_);
  // Patch the uncompressed size of the data entry in its local (offset 22) and
  // central (offset 24) headers.
  const std::string name = entries[2].name;
  int patched = 0;
  for (size_t at = 0; (at = bytes.find(name, at)) != std::string::npos; at += name.size()) {
    for (auto [sig, header, field] : {std::tuple{"PK\3\4", size_t{30}, size_t{22}},
                                      std::tuple{"PK\1\2", size_t{46}, size_t{24}}}) {
      if (at >= header && bytes.compare(at - header, 4, sig) == 0) {
        std::string le;
        Put32(le, 100);
        bytes.replace(at - header + field, 4, le);
        ++patched;
      }
    }
  }
  ASSERT_EQ(patched, 2);
  Write(bytes);
  ASSERT_OK(InspectSlice(zip_));  // headers are consistent with each other
  auto extracted = ExtractSlice(zip_, dir_);
  ASSERT_FALSE(extracted.ok());
  EXPECT_EQ(RuleOf(extracted.status()), "zip.entry_size") << extracted.status().ToString();
  // Partial extraction stays inside dir_, and no more than the declared 100 bytes
  // of the lying entry reach the disk.
  for (const std::string& f : FilesOutsideZip()) EXPECT_EQ(f.rfind("srv/in/x/", 0), 0u) << f;
  auto partial = std::filesystem::path(JoinPath(dir_, name));
  if (std::filesystem::exists(partial)) {
    EXPECT_LE(std::filesystem::file_size(partial), 100u);
  }
}

TEST_F(SliceTest, OverlappingEntries) {
  // Eight central entries share one local header and its 4 KiB of data.
  std::vector<RawEntry> entries = {
      {"videos/chunk-000/k0/episode-004.mp4", std::string(4096, 'v')}};
  for (int k = 1; k < 8; ++k) {
    RawEntry e{"videos/chunk-000/k" + std::to_string(k) + "/episode-004.mp4", ""};
    e.share_first_local = true;
    entries.push_back(e);
  }
  for (const RawEntry& e : GoodEntries())
    if (e.name.rfind("videos/", 0) != 0) entries.push_back(e);
  ExpectRefused(entries, "zip.overlap");
}

TEST_F(SliceTest, NotAllowedNames) {
  ExpectRefused(GoodWith({"meta/episodes/.lock", ""}), "zip.not_allowed");
  ExpectRefused(GoodWith({"videos/chunk-000/.cam/episode-004.mp4", "x"}), "zip.not_allowed");
  ExpectRefused(GoodWith({"meta/recycled_episode.json", "{}"}), "zip.not_allowed");
  ExpectRefused(GoodWith({"run.sh", "x"}), "zip.not_allowed");
  ExpectRefused(GoodWith({"videos/chunk-000/cam_rgb/episode-004.avi", "x"}), "zip.not_allowed");
  ExpectRefused(GoodWith({"data/chunk-00/episode-004.parquet", "x"}), "zip.not_allowed");
  ExpectRefused(GoodWith({"data/chunk-0000/episode-004.parquet", "x"}), "zip.not_allowed");
  ExpectRefused(GoodWith({"meta/episodes/chunk-000/file-000.parquet", "x"}), "zip.not_allowed");
}

TEST_F(SliceTest, MixedEpisodes) {
  ExpectRefused(GoodWith({"videos/chunk-000/cam2/episode-005.mp4", "x"}), "zip.mixed_episode");
  ExpectRefused(GoodWith({"videos/chunk-001/cam2/episode-004.mp4", "x"}), "zip.mixed_episode");
}

TEST_F(SliceTest, MissingFiles) {
  for (const char* drop : {"data/chunk-000/episode-004.parquet",
                           "meta/episodes/chunk-000/episode-004.parquet", "meta/info.json"}) {
    std::vector<RawEntry> entries;
    for (const RawEntry& e : GoodEntries())
      if (e.name != drop) entries.push_back(e);
    ExpectRefused(entries, "zip.missing");
  }
}

TEST_F(SliceTest, OtherFormatIsNotSupported) {
  auto entries = GoodEntries();
  entries[4].data = R"({"codebase_version": "v2.1"})";
  ExpectRefused(entries, "zip.format", {}, StatusCode::kNotSupported);
  entries[4].data = "[1, 2";
  ExpectRefused(entries, "zip.format");
}

TEST(SliceRulesTest, RuleOfAndTheList) {
  const Status traversal = internal::SliceError("zip.traversal", "entry '../x' leaves the task directory");
  EXPECT_EQ(RuleOf(traversal), "zip.traversal");
  EXPECT_EQ(traversal.message(), "zip.traversal: entry '../x' leaves the task directory");
  // A context prefix keeps the rule (on main it was parsed from the message and lost).
  EXPECT_EQ(RuleOf(traversal.WithContext("upload.zip")), "zip.traversal");
  EXPECT_EQ(RuleOf(internal::SliceNotSupported("zip.method", "m").WithContext("a").WithContext("b")), "zip.method");
  // Text that looks like a rule is not one: only the field counts.
  EXPECT_EQ(RuleOf(Status::Invalid("zip.traversal: typed by hand")), "");
  EXPECT_EQ(RuleOf(Status::Invalid("data/x.parquet: bad")), "");
  EXPECT_EQ(RuleOf(Status::Invalid("no rule here")), "");
  EXPECT_EQ(RuleOf(Status::Invalid("Zip.X: y")), "");
  EXPECT_EQ(RuleOf(Status::OK()), "");
  std::vector<std::string> ids;
  for (const SliceRule& r : SliceRules()) ids.push_back(r.id);
  for (const char* id : {"zip.unreadable", "zip.entry_count", "zip.name", "zip.absolute",
                         "zip.traversal", "zip.symlink", "zip.duplicate", "zip.encrypted",
                         "zip.method", "zip.entry_size", "zip.total_size", "zip.ratio",
                         "zip.overlap", "zip.not_allowed", "zip.mixed_episode", "zip.missing",
                         "zip.format"})
    EXPECT_NE(std::find(ids.begin(), ids.end(), id), ids.end()) << id;
}

TEST(SliceRulesTest, ImageKeys) {
  auto video = [](const std::string& key) {
    return internal::ClassifySlicePath("videos/chunk-000/" + key + "/episode-000.mp4");
  };
  for (const char* ok : {"d435_rgb", "stereo_left", "cam.1-b", "_x", "9", "头部相机_rgb"}) {
    auto p = video(ok);
    ASSERT_OK(p) << ok;
    EXPECT_EQ(p->image_key, ok);
    EXPECT_EQ(p->kind, internal::SlicePath::Kind::kVideo);
  }
  for (const char* bad : {"-x", "a b", "a$b", "a\xc2\x85" "b" /* U+0085 */, "cam\xe2\x80\xaergb" /* U+202E */,
                          "\xe3\x80\x80" /* U+3000 */, "a\xef\xbb\xbf" /* U+FEFF */}) {
    auto p = video(bad);
    ASSERT_FALSE(p.ok()) << internal::QuoteName(bad);
    EXPECT_EQ(RuleOf(p.status()), "zip.not_allowed");
  }
}

// docs/cli.md lists the rules in a table; it must not drift from SliceRules().
TEST(SliceRulesTest, DocumentedInCliMd) {
  const std::string doc_path =
      (std::filesystem::path(REEL_SOURCE_DIR) / "docs/cli.md").lexically_normal();
  auto doc = DefaultFileSystem()->ReadFile(doc_path);
  ASSERT_OK(doc) << doc_path;
  std::vector<std::string> documented;
  for (size_t at = 0; (at = doc->find("\n| `zip.", at)) != std::string::npos; ++at) {
    const size_t start = at + 4, end = doc->find('`', start);
    documented.push_back(doc->substr(start, end - start));
  }
  std::vector<std::string> ids;
  for (const SliceRule& r : SliceRules()) ids.push_back(r.id);
  EXPECT_EQ(documented, ids);
}

}  // namespace
}  // namespace reel
