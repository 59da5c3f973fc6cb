// The import server's credential checks and login rate limit (auth.h), with explicit
// clocks and real hashes.
#include "serve/auth.h"

#include <gtest/gtest.h>

namespace reel::serve {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(ServeLoginLimiter, BurstThenOneEveryRefill) {
  LoginLimiter limiter(3, 2.0, 16);
  const auto t0 = std::chrono::steady_clock::time_point{} + seconds(1000);
  double retry = -1;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter.Take("10.0.0.1", t0, &retry)) << i;
  EXPECT_FALSE(limiter.Take("10.0.0.1", t0, &retry));
  EXPECT_NEAR(retry, 2.0, 1e-9);
  EXPECT_TRUE(limiter.Take("10.0.0.2", t0, &retry)) << "another address has its own bucket";
  EXPECT_FALSE(limiter.Take("10.0.0.1", t0 + milliseconds(1500), &retry));
  EXPECT_NEAR(retry, 0.5, 1e-6);
  EXPECT_TRUE(limiter.Take("10.0.0.1", t0 + milliseconds(2000), &retry));
  EXPECT_FALSE(limiter.Take("10.0.0.1", t0 + milliseconds(2000), &retry));
}

TEST(ServeLoginLimiter, TableStaysBounded) {
  LoginLimiter limiter(2, 10.0, 8);
  const auto t0 = std::chrono::steady_clock::time_point{} + seconds(1000);
  double retry = 0;
  ASSERT_TRUE(limiter.Take("victim", t0, &retry));
  ASSERT_TRUE(limiter.Take("victim", t0, &retry));
  for (int i = 0; i < 1000; ++i) limiter.Take("a" + std::to_string(i), t0 + milliseconds(i + 1), &retry);
  EXPECT_LE(limiter.size(), 8u);
}

TEST(ServeAuth, TokensAreComparedExactly) {
  const std::string token = "tok-all-0123456789abcdef";
  Authenticator auth({ServeToken{"rig", Sha256Hex(token), {"*"}}}, {}, 60);
  EXPECT_TRUE(auth.Authenticate("Bearer " + token, ""));
  // What httplib's %-decoding and its cut at NUL would have turned into the token.
  EXPECT_FALSE(auth.Authenticate("Bearer tok%2Dall-0123456789abcdef", ""));
  EXPECT_FALSE(auth.Authenticate("Bearer " + token + std::string("\0junk", 5), ""));
  EXPECT_FALSE(auth.Authenticate("Bearer " + token + " ", ""));
  EXPECT_FALSE(auth.Authenticate("", "reel_session=" + std::string(64, 'a')));
  EXPECT_FALSE(auth.Authenticate("", "reel_session=../../x"));
}

TEST(ServeAuth, LoginOpensASessionCookieCanUse) {
  Authenticator auth({}, {ServeUser{"alice", HashPassword("pw"), {"task_a"}}}, 60);
  EXPECT_FALSE(auth.Login("alice", "wrong"));
  auto id = auth.Login("alice", "pw");
  ASSERT_TRUE(id);
  auto p = auth.Authenticate("", "x=1; reel_session=" + *id);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->name, "user:alice");
  EXPECT_TRUE(p->Allows("task_a"));
  EXPECT_FALSE(p->Allows("task_b"));
}

}  // namespace
}  // namespace reel::serve
