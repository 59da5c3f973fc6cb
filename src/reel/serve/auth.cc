#include "serve/auth.h"

#include <openssl/crypto.h>

#include <algorithm>

#include "serve/serve_internal.h"

namespace reel::serve {

namespace {

bool SameSecret(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

bool Principal::Allows(const std::string& project) const {
  return std::any_of(projects.begin(), projects.end(),
                     [&](const std::string& p) { return p == "*" || p == project; });
}

std::string CookieValue(const std::string& header, const std::string& name) {
  size_t pos = 0;
  while (pos < header.size()) {
    size_t end = header.find(';', pos);
    if (end == std::string::npos) end = header.size();
    std::string part = header.substr(pos, end - pos);
    const size_t first = part.find_first_not_of(' ');
    if (first != std::string::npos) part = part.substr(first);
    if (part.starts_with(name + "=")) return part.substr(name.size() + 1);
    pos = end + 1;
  }
  return "";
}

std::optional<Principal> Authenticator::Authenticate(const std::string& authorization,
                                                     const std::string& cookie) {
  if (authorization.starts_with("Bearer ")) {
    const std::string digest = Sha256Hex(authorization.substr(7));
    for (const ServeToken& t : tokens_)
      if (SameSecret(digest, t.sha256)) return Principal{"token:" + t.name, t.projects};
    return std::nullopt;
  }
  const std::string id = CookieValue(cookie, "reel_session");
  if (id.empty()) return std::nullopt;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return std::nullopt;
  if (it->second.expires < std::chrono::steady_clock::now()) {
    sessions_.erase(it);
    return std::nullopt;
  }
  return it->second.principal;
}

std::optional<std::string> Authenticator::Login(const std::string& user, const std::string& password) {
  for (const ServeUser& u : users_) {
    if (u.name != user) continue;
    if (!VerifyPassword(password, u.password_hash)) return std::nullopt;
    const std::string id = RandomHex(32);
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    std::erase_if(sessions_, [&](const auto& kv) { return kv.second.expires < now; });
    sessions_[id] = {Principal{"user:" + u.name, u.projects}, now + std::chrono::seconds(ttl_)};
    return id;
  }
  // Spend the same time on an unknown name as on a known one.
  (void)VerifyPassword(password, HashPassword("unknown-user"));
  return std::nullopt;
}

}  // namespace reel::serve
