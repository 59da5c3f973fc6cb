#include "serve/auth.h"

#include <openssl/crypto.h>

#include <algorithm>

#include "serve/request_parse.h"
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

namespace {

bool IsSessionId(const std::string& id) {
  return id.size() == 64 && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

std::optional<Principal> Authenticator::Authenticate(const std::string& authorization,
                                                     const std::string& cookie) {
  if (!authorization.empty()) {
    const std::optional<std::string> token = BearerToken(authorization);
    if (!token) return std::nullopt;
    const std::string digest = Sha256Hex(*token);
    for (const ServeToken& t : tokens_)
      if (SameSecret(digest, t.sha256)) return Principal{"token:" + t.name, t.projects};
    return std::nullopt;
  }
  const std::string id = CookieValue(cookie, "reel_session");
  if (!IsSessionId(id)) return std::nullopt;
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

double LoginLimiter::Refilled(const Bucket& b, std::chrono::steady_clock::time_point now) const {
  const double elapsed = std::chrono::duration<double>(now - b.last).count();
  return std::min<double>(burst_, b.tokens + std::max(0.0, elapsed) / refill_s_);
}

bool LoginLimiter::Take(const std::string& address, std::chrono::steady_clock::time_point now,
                        double* retry_after_s) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = buckets_.find(address);
  if (it == buckets_.end()) {
    if (buckets_.size() >= max_) {
      std::erase_if(buckets_, [&](const auto& kv) { return Refilled(kv.second, now) >= burst_; });
      if (buckets_.size() >= max_) {
        auto oldest = std::min_element(buckets_.begin(), buckets_.end(),
                                       [](const auto& a, const auto& b) { return a.second.last < b.second.last; });
        buckets_.erase(oldest);
      }
    }
    it = buckets_.emplace(address, Bucket{static_cast<double>(burst_), now}).first;
  }
  Bucket& b = it->second;
  b.tokens = Refilled(b, now);
  b.last = now;
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return true;
  }
  *retry_after_s = (1 - b.tokens) * refill_s_;
  return false;
}

size_t LoginLimiter::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return buckets_.size();
}

}  // namespace reel::serve
