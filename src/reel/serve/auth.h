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

  // From "Authorization: Bearer <token>" or "Cookie: reel_session=<id>"; nullopt when
  // neither names a valid credential.
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

// The value of cookie `name` in a Cookie header, or "".
std::string CookieValue(const std::string& header, const std::string& name);

}  // namespace reel::serve
