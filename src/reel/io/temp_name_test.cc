// Temp names: the writer they name (host id beside the pid) and when it is gone.
#include "io/temp_name.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "layout/journal.h"

namespace reel::internal {
namespace {

// A pid above Linux's pid_max (at most 2^22): no process has it.
constexpr int64_t kDeadPid = 99999999;
constexpr int64_t kMinuteNs = int64_t{60} * 1000000000;
constexpr int64_t kHourNs = 60 * kMinuteNs;

// Another host's id: this one with its first digit changed.
std::string OtherHostId() {
  std::string id = HostId();
  id[0] = id[0] == '0' ? '1' : '0';
  return id;
}

TEST(TempName, TheHostIdIsEightHexDigitsAndStable) {
  const std::string id = HostId();
  ASSERT_EQ(id.size(), 8u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
  EXPECT_EQ(HostId(), id);
  const std::string tag = UniqueWriterTag();
  EXPECT_TRUE(tag.starts_with(id + "-" + std::to_string(::getpid()) + "-")) << tag;
  EXPECT_NE(UniqueWriterTag(), tag);
}

TEST(TempName, ReadsThisVersionsNamesAndTheEarlierOnes) {
  const TempWriter mine = ReadTempWriter(HostId() + "-1234-7");
  EXPECT_EQ(mine.kind, TempWriter::Kind::kThisHost);
  EXPECT_EQ(mine.pid, 1234);
  const TempWriter other = ReadTempWriter(OtherHostId() + "-1234-7");
  EXPECT_EQ(other.kind, TempWriter::Kind::kOtherHost);
  EXPECT_EQ(other.pid, 1234);
  const TempWriter old = ReadTempWriter("1234-7");  // "reel-<pid>-<k>" before host ids
  EXPECT_EQ(old.kind, TempWriter::Kind::kOldFormat);
  EXPECT_EQ(old.pid, 1234);
  const TempWriter scratch = ReadTempWriter(OtherHostId() + "-1234-aB3xYz");  // mkdtemp's suffix
  EXPECT_EQ(scratch.kind, TempWriter::Kind::kOtherHost);
  for (const std::string& junk : {std::string(""), std::string("x"), std::string("12-"), std::string("0-1"),
                                  std::string("ABCDEF12-1-1"), std::string("abc-1-1"), std::string("1-2-3-4"),
                                  std::string("1234567890-1"), HostId() + "-x-1"})
    EXPECT_EQ(ReadTempWriter(junk).kind, TempWriter::Kind::kUnknown) << junk;
}

TEST(TempName, AnotherHostsWriterIsGoneOnlyByAge) {
  const int64_t now = UnixNowNs();
  const TempWriter mine_dead{TempWriter::Kind::kThisHost, kDeadPid};
  const TempWriter mine_live{TempWriter::Kind::kThisHost, ::getpid()};
  const TempWriter other_dead{TempWriter::Kind::kOtherHost, kDeadPid};
  const TempWriter old_dead{TempWriter::Kind::kOldFormat, kDeadPid};
  const TempWriter old_live{TempWriter::Kind::kOldFormat, ::getppid()};
  const TempWriter unknown{TempWriter::Kind::kUnknown, 0};
  // This host: the pid decides, whatever the age.
  EXPECT_TRUE(TempWriterGone(mine_dead, now, now));
  EXPECT_FALSE(TempWriterGone(mine_live, now - 48 * kHourNs, now));
  // Another host: a pid that is not one here says nothing; 24 hours untouched does.
  EXPECT_FALSE(TempWriterGone(other_dead, now, now));
  EXPECT_FALSE(TempWriterGone(other_dead, now - 23 * kHourNs, now));
  EXPECT_TRUE(TempWriterGone(other_dead, now - 25 * kHourNs, now));
  EXPECT_FALSE(TempWriterGone(other_dead, 0, now)) << "no modification time: never";
  EXPECT_FALSE(TempWriterGone(unknown, now - 23 * kHourNs, now));
  EXPECT_TRUE(TempWriterGone(unknown, now - 25 * kHourNs, now));
  // An earlier version's name: its pid gone and 10 minutes untouched, or 24 hours.
  EXPECT_FALSE(TempWriterGone(old_dead, now - 9 * kMinuteNs, now));
  EXPECT_TRUE(TempWriterGone(old_dead, now - 11 * kMinuteNs, now));
  EXPECT_FALSE(TempWriterGone(old_live, now - 11 * kMinuteNs, now));
  EXPECT_TRUE(TempWriterGone(old_live, now - 25 * kHourNs, now));
}

TEST(TempName, TempPathsNameTheHostAndAreReadBack) {
  const std::string temp = TempPathFor("/t/data/chunk-000/episode_000001.parquet", "commit");
  const std::string prefix = "/t/data/chunk-000/.episode_000001.parquet.commit.reel-" + HostId() + "-" +
                             std::to_string(::getpid()) + "-";
  EXPECT_TRUE(temp.starts_with(prefix) && temp.ends_with(".tmp")) << temp;
  const auto writer = ReelTempWriter(BaseName(temp));
  ASSERT_TRUE(writer.has_value());
  EXPECT_EQ(writer->kind, TempWriter::Kind::kThisHost);
  EXPECT_EQ(writer->pid, ::getpid());
  EXPECT_FALSE(ReelTempWriter("episode_000001.parquet").has_value());
  EXPECT_FALSE(ReelTempWriter(".episode_000001.parquet.tmp").has_value());
  EXPECT_FALSE(ReelTempWriter("x.reel-1-2.tmp").has_value()) << "not a dotfile";
  EXPECT_EQ(ReelTempWriter(".a.reel-1-2.tmp")->kind, TempWriter::Kind::kOldFormat);
}

}  // namespace
}  // namespace reel::internal
