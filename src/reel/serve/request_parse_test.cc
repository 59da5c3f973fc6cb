// The import server's request parsing (request_parse.h): expected values come from the
// RFCs (4648 base64, 6750 bearer, 6265 cookies), the tus 1.0.0 spec and Unicode's
// normalization and bidi rules, not from the code.
#include "serve/request_parse.h"

#include <gtest/gtest.h>

namespace reel::serve {
namespace {

TEST(ServeParse, UintTakesDigitsOnly) {
  uint64_t v = 7;
  EXPECT_TRUE(ParseUint("0", &v));
  EXPECT_EQ(v, 0u);
  EXPECT_TRUE(ParseUint("9999999999999999999", &v));
  EXPECT_EQ(v, 9999999999999999999ull);
  for (const char* bad : {"", "-1", "+1", " 1", "1 ", "1e3", "0x10", "12345678901234567890"}) {
    v = 7;
    EXPECT_FALSE(ParseUint(bad, &v)) << bad;
    EXPECT_EQ(v, 7u) << bad;
  }
}

TEST(ServeParse, Base64IsStrict) {
  std::string out;
  EXPECT_TRUE(Base64Decode("", &out));
  EXPECT_EQ(out, "");
  EXPECT_TRUE(Base64Decode("dGFza19h", &out));
  EXPECT_EQ(out, "task_a");
  EXPECT_TRUE(Base64Decode("MQ==", &out));
  EXPECT_EQ(out, "1");
  EXPECT_TRUE(Base64Decode("MTI=", &out));
  EXPECT_EQ(out, "12");
  EXPECT_TRUE(Base64Decode("AA==", &out));
  EXPECT_EQ(out, std::string(1, '\0'));
  for (const char* bad : {"M", "MQ=", "MQ===", "====", "M===", "MR==", "MQ=A", "dGFz a19h", "dGFz\n19h", "-_8="})
    EXPECT_FALSE(Base64Decode(bad, &out)) << bad;
}

TEST(ServeParse, TusMetadataPairs) {
  std::map<std::string, std::string> f;
  ASSERT_FALSE(ParseTusMetadata("name dGFza19h,episode_index MQ==,project_id", 4096, &f));
  EXPECT_EQ(f.at("name"), "task_a");
  EXPECT_EQ(f.at("episode_index"), "1");
  EXPECT_EQ(f.at("project_id"), "");
  ASSERT_FALSE(ParseTusMetadata("", 4096, &f));
  EXPECT_TRUE(f.empty());
  auto dup = ParseTusMetadata("name dGFza19h,name dGFza19h", 4096, &f);
  ASSERT_TRUE(dup);
  EXPECT_EQ(dup->rule, "tus.metadata");
  EXPECT_EQ(ParseTusMetadata("name !!!!", 4096, &f)->rule, "tus.metadata");
  EXPECT_EQ(ParseTusMetadata(",", 4096, &f)->rule, "tus.metadata");
  EXPECT_EQ(ParseTusMetadata("name dGFza19h", 3, &f)->rule, "form.field_size");
  std::string many;
  for (int i = 0; i < 17; ++i) many += (i ? ",k" : "k") + std::to_string(i);
  EXPECT_EQ(ParseTusMetadata(many, 4096, &f)->rule, "form.parts");
}

TEST(ServeParse, UploadFieldsNeedNameAndEpisodeIndex) {
  UploadFields u;
  EXPECT_FALSE(CheckUploadFields({{"name", "task_a"}, {"episode_index", "0"}}, &u));
  EXPECT_EQ(u.project, "task_a");
  EXPECT_EQ(u.form_episode_index, 0);
  EXPECT_FALSE(CheckUploadFields({{"name", "t"}, {"episode_index", "999"}, {"project_id", "p"}}, &u));
  EXPECT_EQ(u.project, "p");
  EXPECT_EQ(u.name, "t");
  // The contract's clients always send episode_index; an upload without it is refused.
  auto missing = CheckUploadFields({{"name", "task_a"}}, &u);
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->rule, "form.episode_index");
  EXPECT_EQ(CheckUploadFields({{"name", "task_a"}, {"episode_index", "-1"}}, &u)->rule, "form.episode_index");
  EXPECT_EQ(CheckUploadFields({{"name", "task_a"}, {"episode_index", "9999999999999999999"}}, &u)->rule,
            "form.episode_index");
  EXPECT_EQ(CheckUploadFields({{"episode_index", "0"}}, &u)->rule, "form.name");
  EXPECT_EQ(CheckUploadFields({{"name", "task_a "}, {"episode_index", "0"}}, &u)->rule, "form.name");
  EXPECT_EQ(CheckUploadFields({{"name", "ok"}, {"project_id", "../x"}, {"episode_index", "0"}}, &u)->rule,
            "form.name");
}

TEST(ServeParse, ProjectNamesThatCannotSpoof) {
  for (const char* ok : {"task_a", "pick cup", "抓取杯子", "caf\xc3\xa9", "T-01.v2", "a"})
    EXPECT_EQ(ProjectNameProblem(ok), "") << ok;
  const char* bad[] = {
      "",                        // empty
      ".hidden", "..", "a/b", "a\\b",
      " task", "task ", "\ttask", "task\xc2\xa0",   // edge spaces (incl. NBSP)
      "\xe3\x80\x80task",        // ideographic space at the start
      "task\x01", "task\x7f", "a\xc2\x85" "b",      // C0, DEL, C1
      "pick\xe2\x80\xae" "puc",  // U+202E RIGHT-TO-LEFT OVERRIDE
      "pick\xe2\x81\xa6x",       // U+2066 LEFT-TO-RIGHT ISOLATE
      "pi\xe2\x80\x8b" "ck",     // U+200B ZERO WIDTH SPACE
      "\xef\xbb\xbftask",        // U+FEFF BOM
      "ta\xef\xb8\x8fsk",        // U+FE0F variation selector
      "cafe\xcc\x81",            // e + U+0301: the NFD form of café
      "\xe2\x84\xab",            // U+212B ANGSTROM SIGN (NFC is U+00C5)
      "\xef\xa4\x80",            // U+F900 CJK compatibility ideograph
      "a\xd6\x91\xd6\xb0",       // U+0591 (ccc 220) before U+05B0 (ccc 10): not canonical order
      "\xee\x80\x80",            // U+E000 private use
      "\xc0\xaf", "\xed\xa0\x80", "\xff", "a\xe4\xb8",  // overlong, surrogate, bad byte, cut
  };
  for (const char* b : bad) EXPECT_NE(ProjectNameProblem(b), "") << b;
  // Combining marks in canonical order are NFC; reversed they are not.
  EXPECT_EQ(ProjectNameProblem("a\xd6\xb0\xd6\x91"), "") << "U+05B0 (ccc 10) then U+0591 (ccc 220)";
}

TEST(ServeParse, CookieValue) {
  EXPECT_EQ(CookieValue("reel_session=abc; other=1", "reel_session"), "abc");
  EXPECT_EQ(CookieValue("other=1;reel_session=abc", "reel_session"), "abc");
  EXPECT_EQ(CookieValue("xreel_session=abc", "reel_session"), "");
  EXPECT_EQ(CookieValue("reel_session", "reel_session"), "");
  EXPECT_EQ(CookieValue("", "reel_session"), "");
}

TEST(ServeParse, BearerTokenIsExact) {
  EXPECT_EQ(BearerToken("Bearer tok-all.0123~+/="), "tok-all.0123~+/=");
  EXPECT_EQ(BearerToken("bearer abc"), "abc");
  EXPECT_FALSE(BearerToken("Basic abc"));
  EXPECT_FALSE(BearerToken("Bearer "));
  EXPECT_FALSE(BearerToken("Bearer  abc"));
  EXPECT_FALSE(BearerToken(std::string("Bearer abc\0def", 14)));
  EXPECT_FALSE(BearerToken("Bearer abc\x01"));
  EXPECT_FALSE(BearerToken("Bearer ab c"));
  EXPECT_FALSE(BearerToken("Bearer t\xc3\xa9"));
  EXPECT_FALSE(BearerToken("Bearer " + std::string(4097, 'a')));
}

TEST(ServeParse, RawHeaderValuesAreNotDecoded) {
  const std::string head =
      "POST /x HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer tok%2Dall\r\n"
      "authorization:\tBearer two \r\nCookie: reel_session=ab%00cd\r\n\r\nbody: no\r\n";
  EXPECT_EQ(RawHeaderValues(head, "Authorization"), (std::vector<std::string>{"Bearer tok%2Dall", "Bearer two"}));
  EXPECT_EQ(RawHeaderValues(head, "cookie"), (std::vector<std::string>{"reel_session=ab%00cd"}));
  EXPECT_TRUE(RawHeaderValues(head, "body").empty());
  static const char kNul[] = "GET / HTTP/1.1\r\nAuthorization: Bearer a\0b\r\n\r\n";
  const std::string nul(kNul, sizeof kNul - 1);
  EXPECT_EQ(RawHeaderValues(nul, "Authorization"), (std::vector<std::string>{std::string("Bearer a\0b", 10)}));
  EXPECT_TRUE(RawHeaderValues("", "Host").empty());
  EXPECT_TRUE(RawHeaderValues("GET / HTTP/1.1", "Host").empty());
}

TEST(ServeParse, OnlyIdentityContentEncoding) {
  EXPECT_TRUE(IsIdentityEncoding(""));
  EXPECT_TRUE(IsIdentityEncoding(" Identity "));
  EXPECT_FALSE(IsIdentityEncoding("gzip"));
  EXPECT_FALSE(IsIdentityEncoding("br"));
  EXPECT_FALSE(IsIdentityEncoding("identity, gzip"));
}

}  // namespace
}  // namespace reel::serve
