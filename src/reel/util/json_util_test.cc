// The one JSON entry point: bounded depth and size, numbers out of range, never a throw.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "util/json_util.h"
#include "reel/metadata.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

std::string Nested(int levels, char open = '[', char close = ']') {
  return std::string(levels, open) + std::string(levels, close);
}

TEST(JsonBounds, DepthUpToTheLimitParses) {
  auto j = internal::ParseJson(Nested(64), "x.json");
  ASSERT_OK(j);
}

TEST(JsonBounds, OneLevelPastTheLimitIsRefusedNamingFileRuleAndValue) {
  auto j = internal::ParseJson(Nested(65), "meta/info.json");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), StatusCode::kInvalid);
  const std::string& m = j.status().message();
  EXPECT_THAT(m, ::testing::HasSubstr("meta/info.json: json.depth: ")) << m;
  EXPECT_THAT(m, ::testing::HasSubstr("64 levels")) << m;
  EXPECT_THAT(m, ::testing::HasSubstr("at byte 64")) << m;
  EXPECT_EQ(j.status().rule(), "json.depth");  // a field, kept through context
  EXPECT_EQ(j.status().WithContext("task t").rule(), "json.depth");
}

TEST(JsonBounds, HundredThousandLevelsAreRefusedWithoutRecursion) {
  // Before the bound this crashed every command: nlohmann's copy and dump recurse.
  auto j = internal::ParseJson("{\"a\": " + Nested(100000) + "}", "calibration");
  ASSERT_FALSE(j.ok());
  EXPECT_THAT(j.status().message(), ::testing::HasSubstr("json.depth"));
}

TEST(JsonBounds, BracketsInsideStringsDoNotCount) {
  const std::string text = "{\"k\": \"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"}";
  auto j = internal::ParseJson(text, "x.json");
  ASSERT_OK(j);
  EXPECT_EQ((*j)["k"].get<std::string>().size(), 2001u);
}

TEST(JsonBounds, UnbalancedClosersDoNotBuyExtraDepth) {
  // "]]]]" first must not let the openers that follow go deeper than the limit.
  auto st = CheckJsonBounds(std::string(100, ']') + Nested(65), "x");
  EXPECT_FALSE(st.ok());
}

TEST(JsonBounds, SizeLimit) {
  JsonLimits limits;
  limits.max_bytes = 10;
  auto j = internal::ParseJson("[1,2,3,4,5,6]", "tasks.jsonl", limits);
  ASSERT_FALSE(j.ok());
  EXPECT_THAT(j.status().message(), ::testing::HasSubstr("tasks.jsonl: json.size: 13 bytes"))
      << j.status().message();
}

TEST(JsonBounds, NumberOutOfRangeIsInvalidNotAnAbort) {
  for (const char* text : {"1e999", "[-1e999]", "{\"fps\": 1E400}"}) {
    auto j = internal::ParseJson(text, "stats.json");
    ASSERT_FALSE(j.ok()) << text;
    EXPECT_EQ(j.status().code(), StatusCode::kInvalid);
    EXPECT_THAT(j.status().message(), ::testing::HasSubstr("stats.json: json.number: "))
        << j.status().message();
  }
  // Large but finite numbers and big integers still parse.
  EXPECT_OK(internal::ParseJson("[1e308, -1e308, 18446744073709551615, 1e-400]", "x"));
}

TEST(JsonBounds, MalformedStaysMalformed) {
  auto j = internal::ParseJson("{\"a\": ", "x.json");
  ASSERT_FALSE(j.ok());
  EXPECT_THAT(j.status().message(), ::testing::HasSubstr("x.json: malformed JSON"));
}

TEST(JsonBounds, EveryMetadataParserIsBounded) {
  const std::string deep = Nested(1000);
  EXPECT_THAT(ParseInfoJson("{\"format\": \"pooled_episodes_v1\", \"calibration\": " + deep + "}", "info.json")
                .status()
                .message()
                , ::testing::HasSubstr("json.depth"));
  EXPECT_THAT(ParseStatsJson("{\"a\": " + deep + "}", "stats.json").status().message(), ::testing::HasSubstr("json.depth"));
  EXPECT_THAT(ParseTasksJsonl("{\"task_index\": 0, \"task\": " + deep + "}\n", "tasks.jsonl")
                .status()
                .message()
                , ::testing::HasSubstr("json.depth"));
  EXPECT_THAT(ParseTasksJsonl("{\"task_index\": 1e999, \"task\": \"t\"}\n", "tasks.jsonl")
                .status()
                .message()
                , ::testing::HasSubstr("json.number"));
}

}  // namespace
}  // namespace reel

namespace reel {
namespace {

TEST(JsonGetInt, ValuesAnInt64CannotHoldAreWrongTypeNotUndefined) {
  // {"chunks_size": 1e22} cast 1e22 to int64 before checking (UBSan: float-cast-overflow;
  // in practice INT64_MIN, a negative chunks_size).
  for (const char* text : {R"({"k": 1e22})", R"({"k": -1e19})", R"({"k": 9223372036854775808.0})",
                           R"({"k": 18446744073709551615})"}) {
    auto j = internal::ParseJson(text, "x");
    ASSERT_OK(j) << text;
    int64_t out = 7;
    Status st = internal::GetInt(*j, "k", "info.json", out);
    EXPECT_FALSE(st.ok()) << text;
    EXPECT_EQ(out, 7) << text;
  }
  int64_t out = 0;
  ASSERT_TRUE(internal::GetInt(*internal::ParseJson(R"({"k": 1000.0})", "x"), "k", "x", out).ok());
  EXPECT_EQ(out, 1000);
  ASSERT_TRUE(internal::GetInt(*internal::ParseJson(R"({"k": -9223372036854775808})", "x"), "k", "x", out).ok());
  EXPECT_EQ(out, std::numeric_limits<int64_t>::min());
}

}  // namespace
}  // namespace reel
