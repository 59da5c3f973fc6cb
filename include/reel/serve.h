// The import server (contract §9 "服务器导入器"): receives episode slices over HTTP and
// commits them into pooled task directories under one root, one task per project.
//
// Endpoints (docs/openapi.yaml):
//   POST /api/v1/session/upload        multipart: file, name, episode_index, project_id
//   POST /api/v1/uploads               resumable (tus 1.0.0 core + creation)
//   HEAD/PATCH /api/v1/uploads/<id>
//   POST /api/v1/uploads/<id>/import
//   POST /api/v1/auth/login            {"username","password"} -> session cookie
//   GET  /api/v1/sessions?name=<task>  episodes the server holds
//   GET  /health, GET /metrics
//
// Authentication happens before any body byte is read: 401 without a valid bearer
// token or session cookie, 403 when the credential is not allowed on the project. There
// are no default credentials: a config without tokens or users lets nobody in.
//
// Thread safety: one Server per root; ImportSlice serialises per task through the
// task's lock file, so several servers (or threads) may import into the same root.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "reel/fs.h"
#include "reel/pack.h"
#include "reel/status.h"

namespace reel {

// ---- import (usable without HTTP) ------------------------------------------------

// ImportSlice's options (the import server's). ImportDataset's are ImportOptions
// (reel/interop.h): one name per struct in namespace reel (tools/check_odr.py).
struct ImportSliceOptions {
  FileSystem* fs = nullptr;  // null = DefaultFileSystem()
  SliceLimits limits;
  bool check = true;         // run the conformance checker on the staged slice
  std::string staging_dir;   // empty = <root>/.staging
};

struct ImportRequest {
  std::string project;            // task directory name under the root
  int64_t form_episode_index = -1;  // the form field ((N-1) % 1000); -1 = not sent
  std::string zip_path;           // the received slice
};

// What happened, in HTTP terms so the server can answer directly.
struct ImportOutcome {
  int http_status = 500;     // 201 imported, 200 identical re-upload, 4xx refused, 500
  std::string rule;          // stable rule id on refusal (pack.h SliceRules, serve rules)
  std::string message;       // what was found, naming the entry and value
  int64_t episode_index = -1;  // N on the server; -1 when refused before the slice's N was read
  bool already_present = false;
  std::string session_id;    // "<project>/<N>"
};

// Extracts the slice into a staging directory, validates it (slice rules, info.json
// format, episode_index in the data parquet and the episodes row against each other and
// against the form field, the checker), then commits it into <root>/<project>: the
// episode's files by the recorder's journaled commit, info.json and stats.json merged
// by merge.h's rules, tasks.jsonl created when absent. Identical files already at N:
// 200, nothing written. Different files at N: 409. Never leaves a partial episode.
ImportOutcome ImportSlice(const std::string& root, const ImportRequest& request,
                          const ImportSliceOptions& options = {});

// ---- configuration --------------------------------------------------------------

struct ServeToken {
  std::string name;                   // who; used in logs
  std::string sha256;                 // hex SHA-256 of the token (the token is never stored)
  std::vector<std::string> projects;  // allowed projects; "*" = all
};

struct ServeUser {                    // for the login-cookie flow
  std::string name;
  std::string password_hash;          // "pbkdf2-sha256$<iterations>$<salt hex>$<hash hex>"
  std::vector<std::string> projects;
};

struct ServeConfig {
  std::string root;                   // directory of task directories
  std::string host = "127.0.0.1";     // loopback by default
  int port = 8765;                    // 0 = any free port (see Server::port)
  std::vector<ServeToken> tokens;
  std::vector<ServeUser> users;
  uint64_t max_request_bytes = 8ull << 30;  // 413 above this
  size_t max_field_bytes = 4096;             // form fields other than `file`
  SliceLimits slice_limits;
  int read_timeout_s = 30;            // per socket read
  int write_timeout_s = 30;
  int request_timeout_s = 3600;       // whole request body (408 after), against slow trickles
  int head_timeout_s = 10;            // request line + headers, and the small bodies of
                                      // non-upload endpoints (408 / connection closed after)
  int workers = 8;                    // requests processed at once (imports, logins, ...)
  int max_connections = 128;          // connections read at once (one thread each; heads
                                      // are read before a request takes a worker)
  int max_connections_per_address = 32;  // 503 limit.connections past this, per client address
  int session_ttl_s = 12 * 3600;      // login cookie lifetime
  // Resumable uploads one token or user may have pending (created, not yet imported) at
  // once, and their declared Upload-Lengths together: 429 limit.pending_uploads past either.
  int max_pending_uploads = 16;
  uint64_t max_pending_bytes = 64ull << 30;
  bool check = true;                  // run the checker on each slice
  std::string log_path;               // JSON lines; empty = stderr
};

// Reads a JSON config (docs/serve.md). The root may also come from the command line.
Result<ServeConfig> LoadServeConfig(const std::string& path);

// Hex SHA-256, for token entries ("reel serve --hash-token").
std::string Sha256Hex(const std::string& data);
// A new "pbkdf2-sha256$..." password hash with a random salt.
std::string HashPassword(const std::string& password);
bool VerifyPassword(const std::string& password, const std::string& hash);

// ---- the HTTP server ---------------------------------------------------------------

class Server {
 public:
  // Validates the config and prepares the root (made absolute; creates it, rolls forward
  // interrupted commits, removes stale staging files). Does not bind.
  static Result<std::unique_ptr<Server>> Create(const ServeConfig& config);
  ~Server();

  // Binds host:port and serves until Stop(). Returns an error if it cannot bind. The
  // program should ignore SIGPIPE (`reel serve` does): a client that hangs up while its
  // answer is written would otherwise end the process.
  Status Listen();
  // The bound port once listening (useful with port 0), else 0.
  int port() const;
  // Waits until Listen() has bound (or failed); false after `timeout_s`.
  bool WaitUntilListening(double timeout_s) const;
  // Stops accepting and returns from Listen() after in-flight requests finish.
  void Stop();

 private:
  Server() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace reel
