// Internal: who is asking, and may they touch this project (serve.h "Authentication").
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "reel/serve.h"

namespace reel::serve {

struct Principal {
  std::string name;                   // "token:<name>" or "user:<name>"
  std::vector<std::string> projects;  // "*" = all
  bool Allows(const std::string& project) const;
};

// Thread safe. Tokens are compared by SHA-256 digest in constant time; login sessions
// are random 256-bit ids held in memory (a restart logs everyone out).
class Authenticator {
 public:
  Authenticator(std::vector<ServeToken> tokens, std::vector<ServeUser> users, int session_ttl_s)
      : tokens_(std::move(tokens)), users_(std::move(users)), ttl_(session_ttl_s) {}

  // From the raw (never %-decoded) values of "Authorization: Bearer <token>" or "Cookie:
  // reel_session=<id>"; nullopt when neither names a valid credential. A token is
  // compared only when it is plain visible ASCII (request_parse.h BearerToken), a
  // session id only when it is the 64 hex digits the server hands out.
  std::optional<Principal> Authenticate(const std::string& authorization, const std::string& cookie);

  // Checks a password and opens a session; nullopt on a wrong name or password.
  std::optional<std::string> Login(const std::string& user, const std::string& password);

 private:
  struct Session {
    Principal principal;
    std::chrono::steady_clock::time_point expires;
  };
  std::vector<ServeToken> tokens_;
  std::vector<ServeUser> users_;
  int ttl_;
  std::mutex mu_;
  std::map<std::string, Session> sessions_;
};

// Per-address token buckets for login attempts (each one costs a PBKDF2 of ~70 ms of
// CPU): an address may try `burst` logins at once and one more every `refill_s`
// seconds. At most `max_addresses` buckets are kept: when the table is full, buckets
// that have refilled (the same as a fresh one) are dropped, then the one idle longest.
// Thread safe.
class LoginLimiter {
 public:
  LoginLimiter(int burst, double refill_s, size_t max_addresses)
      : burst_(burst), refill_s_(refill_s), max_(max_addresses) {}

  // True when `address` may try at `now` (a token is taken). Otherwise false, with the
  // seconds until it may in `retry_after_s`.
  bool Take(const std::string& address, std::chrono::steady_clock::time_point now, double* retry_after_s);
  size_t size() const;

 private:
  struct Bucket {
    double tokens = 0;
    std::chrono::steady_clock::time_point last;
  };
  double Refilled(const Bucket& b, std::chrono::steady_clock::time_point now) const;

  int burst_;
  double refill_s_;
  size_t max_;
  mutable std::mutex mu_;
  std::map<std::string, Bucket> buckets_;
};

}  // namespace reel::serve
