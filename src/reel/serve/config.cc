// Server configuration and credential hashing (serve.h). Hashes come from the system
// OpenSSL (libcrypto): SHA-256 for bearer tokens (high-entropy secrets, so a plain
// digest suffices) and PBKDF2-HMAC-SHA256 for passwords (low-entropy, so slow).
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <cstdio>
#include <cmath>
#include <limits>
#include <set>

#include "util/json_util.h"
#include "reel/serve.h"
#include "serve/serve_internal.h"

namespace reel {

namespace {

using internal::Json;

constexpr int kPbkdf2Iterations = 200000;

bool FromHex(const std::string& hex, std::string* out) {
  if (hex.size() % 2) return false;
  out->clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    unsigned v = 0;
    if (std::sscanf(hex.substr(i, 2).c_str(), "%2x", &v) != 1) return false;
    out->push_back(static_cast<char>(v));
  }
  return true;
}

std::string Pbkdf2(const std::string& password, const std::string& salt, int iterations) {
  unsigned char out[32];
  PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()),
                    reinterpret_cast<const unsigned char*>(salt.data()), static_cast<int>(salt.size()),
                    iterations, EVP_sha256(), sizeof out, out);
  return HexOf(out, sizeof out);
}

Status Unknown(const Json& obj, const std::set<std::string>& known, const std::string& where) {
  for (const auto& [key, value] : obj.items())
    if (!known.count(key)) return Status::Invalid(where + ": unknown key \"" + key + "\"");
  return Status::OK();
}

Status ReadProjects(const Json& entry, const std::string& where, std::vector<std::string>* out) {
  if (!entry.contains("projects") || !entry["projects"].is_array() || entry["projects"].empty())
    return Status::Invalid(where + ": \"projects\" must be a non-empty list (use [\"*\"] for all)");
  for (const Json& p : entry["projects"]) {
    if (!p.is_string() || p.get<std::string>().empty())
      return Status::Invalid(where + ": \"projects\" holds a non-string or empty entry");
    out->push_back(p.get<std::string>());
  }
  return Status::OK();
}

template <typename T>
Status ReadNumber(const Json& obj, const char* key, const std::string& where, T* out) {
  if (!obj.contains(key)) return Status::OK();
  const Json& v = obj[key];
  // Range-checked as a double first: get<T>() of a value T cannot hold is undefined.
  // 2^digits is exact as a double, unlike max() itself for 64-bit types.
  if (!v.is_number() || !(v.get<double>() >= 0) ||
      v.get<double>() >= std::ldexp(1.0, std::numeric_limits<T>::digits))
    return Status::Invalid(where + ": \"" + key + "\" must be a non-negative number that fits");
  *out = v.get<T>();
  return Status::OK();
}

}  // namespace

std::string RandomHex(size_t bytes) {
  std::string raw(bytes, '\0');
  RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes));
  return HexOf(reinterpret_cast<const unsigned char*>(raw.data()), bytes);
}

std::string HashPassword(const std::string& password) {
  unsigned char salt[16];
  RAND_bytes(salt, sizeof salt);
  const std::string salt_bytes(reinterpret_cast<const char*>(salt), sizeof salt);
  return "pbkdf2-sha256$" + std::to_string(kPbkdf2Iterations) + "$" + HexOf(salt, sizeof salt) + "$" +
         Pbkdf2(password, salt_bytes, kPbkdf2Iterations);
}

bool VerifyPassword(const std::string& password, const std::string& hash) {
  // pbkdf2-sha256$<iterations>$<salt hex>$<hash hex>
  const size_t a = hash.find('$'), b = hash.find('$', a + 1), c = hash.find('$', b + 1);
  if (a == std::string::npos || b == std::string::npos || c == std::string::npos) return false;
  if (hash.substr(0, a) != "pbkdf2-sha256") return false;
  const int iterations = std::atoi(hash.substr(a + 1, b - a - 1).c_str());
  std::string salt;
  if (iterations <= 0 || !FromHex(hash.substr(b + 1, c - b - 1), &salt)) return false;
  const std::string want = hash.substr(c + 1), got = Pbkdf2(password, salt, iterations);
  return want.size() == got.size() && CRYPTO_memcmp(want.data(), got.data(), got.size()) == 0;
}

Result<ServeConfig> LoadServeConfig(const std::string& path) {
  REEL_ASSIGN_OR_RETURN(std::string text, DefaultFileSystem()->ReadFile(path));
  REEL_ASSIGN_OR_RETURN(Json doc, internal::ParseJson(text, path));
  if (!doc.is_object()) return Status::Invalid(path + ": the config must be a JSON object");
  REEL_RETURN_IF_ERROR(Unknown(doc, {"root", "host", "port", "tokens", "users", "limits", "check", "log_path"}, path));
  ServeConfig c;
  if (doc.contains("root")) REEL_RETURN_IF_ERROR(internal::GetString(doc, "root", path, c.root));
  if (doc.contains("host")) REEL_RETURN_IF_ERROR(internal::GetString(doc, "host", path, c.host));
  if (doc.contains("log_path")) REEL_RETURN_IF_ERROR(internal::GetString(doc, "log_path", path, c.log_path));
  REEL_RETURN_IF_ERROR(ReadNumber(doc, "port", path, &c.port));
  if (doc.contains("check")) {
    if (!doc["check"].is_boolean()) return Status::Invalid(path + ": \"check\" must be true or false");
    c.check = doc["check"].get<bool>();
  }
  if (doc.contains("tokens")) {
    if (!doc["tokens"].is_array()) return Status::Invalid(path + ": \"tokens\" must be a list");
    for (size_t i = 0; i < doc["tokens"].size(); ++i) {
      const Json& t = doc["tokens"][i];
      const std::string where = path + ": tokens[" + std::to_string(i) + "]";
      if (!t.is_object()) return Status::Invalid(where + " must be an object");
      REEL_RETURN_IF_ERROR(Unknown(t, {"name", "sha256", "projects"}, where));
      ServeToken token;
      REEL_RETURN_IF_ERROR(internal::GetString(t, "name", where, token.name));
      REEL_RETURN_IF_ERROR(internal::GetString(t, "sha256", where, token.sha256));
      std::string raw;
      if (token.sha256.size() != 64 || !FromHex(token.sha256, &raw))
        return Status::Invalid(where + ": \"sha256\" must be 64 hex digits (reel serve --hash-token)");
      for (char& ch : token.sha256) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      REEL_RETURN_IF_ERROR(ReadProjects(t, where, &token.projects));
      c.tokens.push_back(std::move(token));
    }
  }
  if (doc.contains("users")) {
    if (!doc["users"].is_array()) return Status::Invalid(path + ": \"users\" must be a list");
    for (size_t i = 0; i < doc["users"].size(); ++i) {
      const Json& u = doc["users"][i];
      const std::string where = path + ": users[" + std::to_string(i) + "]";
      if (!u.is_object()) return Status::Invalid(where + " must be an object");
      REEL_RETURN_IF_ERROR(Unknown(u, {"name", "password_hash", "projects"}, where));
      ServeUser user;
      REEL_RETURN_IF_ERROR(internal::GetString(u, "name", where, user.name));
      REEL_RETURN_IF_ERROR(internal::GetString(u, "password_hash", where, user.password_hash));
      if (!user.password_hash.starts_with("pbkdf2-sha256$"))
        return Status::Invalid(where + ": \"password_hash\" must be a pbkdf2-sha256 hash (reel serve --hash-password)");
      REEL_RETURN_IF_ERROR(ReadProjects(u, where, &user.projects));
      c.users.push_back(std::move(user));
    }
  }
  // A principal is known by its name (a resumable upload belongs to the name that began
  // it): two tokens, two users, or a token and a user of one name would share uploads.
  std::set<std::string> names;
  for (const ServeToken& t : c.tokens)
    if (!names.insert(t.name).second)
      return Status::Invalid(path + ": the token name \"" + t.name + "\" is given twice; names must be unique");
  for (const ServeUser& u : c.users)
    if (!names.insert(u.name).second)
      return Status::Invalid(path + ": the user name \"" + u.name +
                             "\" is already a token's or another user's; names must be unique");
  if (doc.contains("limits")) {
    const Json& l = doc["limits"];
    const std::string where = path + ": limits";
    if (!l.is_object()) return Status::Invalid(where + " must be an object");
    REEL_RETURN_IF_ERROR(Unknown(l, {"max_request_bytes", "max_field_bytes", "max_entries", "max_entry_bytes",
                                     "max_total_bytes", "max_ratio", "read_timeout_s", "write_timeout_s", "request_timeout_s",
                                     "head_timeout_s", "workers", "max_connections", "max_connections_per_address",
                                     "session_ttl_s", "max_pending_uploads", "max_pending_bytes"},
                                 where));
    REEL_RETURN_IF_ERROR(ReadNumber(l, "max_request_bytes", where, &c.max_request_bytes));
    REEL_RETURN_IF_ERROR(ReadNumber(l, "max_field_bytes", where, &c.max_field_bytes));
    REEL_RETURN_IF_ERROR(ReadNumber(l, "max_entries", where, &c.slice_limits.max_entries));
    REEL_RETURN_IF_ERROR(ReadNumber(l, "max_entry_bytes", where, &c.slice_limits.max_entry_bytes));
    REEL_RETURN_IF_ERROR(ReadNumber(l, "max_total_bytes", where, &c.slice_limits.max_total_bytes));
    REEL_RETURN_IF_ERROR(ReadNumber(l, "max_ratio", where, &c.slice_limits.max_ratio));
    REEL_RETURN_IF_ERROR(ReadNumber(l, "read_timeout_s", where, &c.read_timeout_s));
    REEL_RETURN_IF_ERROR(ReadNumber(l, "write_timeout_s", where, &c.write_timeout_s));
    REEL_RETURN_IF_ERROR(ReadNumber(l, "request_timeout_s", where, &c.request_timeout_s));
    REEL_RETURN_IF_ERROR(ReadNumber(l, "head_timeout_s", where, &c.head_timeout_s));
    REEL_RETURN_IF_ERROR(ReadNumber(l, "workers", where, &c.workers));
    REEL_RETURN_IF_ERROR(ReadNumber(l, "max_connections", where, &c.max_connections));
    REEL_RETURN_IF_ERROR(ReadNumber(l, "max_connections_per_address", where, &c.max_connections_per_address));
    REEL_RETURN_IF_ERROR(ReadNumber(l, "session_ttl_s", where, &c.session_ttl_s));
    REEL_RETURN_IF_ERROR(ReadNumber(l, "max_pending_uploads", where, &c.max_pending_uploads));
    REEL_RETURN_IF_ERROR(ReadNumber(l, "max_pending_bytes", where, &c.max_pending_bytes));
  }
  return c;
}

}  // namespace reel
