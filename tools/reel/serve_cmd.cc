// reel serve: the import server (serve.h), plus helpers that hash credentials for
// its config file.

#include <signal.h>

#include <iostream>
#include <memory>
#include <thread>

#include "cli.h"
#include "reel/serve.h"

namespace reel::cli {
namespace {

struct ServeArgs {
  std::string root;
  std::string config;
  std::string host;
  int port = -1;
  int workers = 0;
  bool no_check = false;
  std::string hash_token;
  bool hash_password_stdin = false;
  bool json = false;
};

Server* g_server = nullptr;

void OnSignal(int) {
  if (g_server) g_server->Stop();
}

int RunServe(const ServeArgs& a) {
  if (!a.hash_token.empty()) {
    if (a.json) PrintJson({{"token_sha256", Sha256Hex(a.hash_token)}});
    else std::cout << Sha256Hex(a.hash_token) << "\n";
    return kExitOk;
  }
  if (a.hash_password_stdin) {
    std::string password;
    std::getline(std::cin, password);
    if (!password.empty() && password.back() == '\r') password.pop_back();
    // An empty password would let anyone log in as the user it is configured for.
    if (password.empty()) return Fail(Status::Invalid("--hash-password: the password read from stdin is empty"));
    if (a.json) PrintJson({{"password_hash", HashPassword(password)}});
    else std::cout << HashPassword(password) << "\n";
    return kExitOk;
  }
  ServeConfig config;
  if (!a.config.empty()) {
    auto loaded = LoadServeConfig(a.config);
    if (!loaded.ok()) return Fail(loaded.status());
    config = std::move(*loaded);
  }
  if (!a.root.empty()) config.root = a.root;
  if (!a.host.empty()) config.host = a.host;
  if (a.port >= 0) config.port = a.port;
  if (a.workers > 0) config.workers = a.workers;
  if (a.no_check) config.check = false;
  if (config.tokens.empty() && config.users.empty())
    std::cerr << "reel serve: warning: the config has no tokens or users, so every request will be refused "
                 "(there are no default credentials)\n";
  auto server = Server::Create(config);
  if (!server.ok()) return Fail(server.status());
  g_server = server->get();
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // A client that hangs up while its answer is being written must cost one request,
  // not the server: cpp-httplib's writes can raise SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  std::thread announce([&] {
    if (!(*server)->WaitUntilListening(30)) return;
    std::cerr << "reel serve: listening on http://" << config.host << ":" << (*server)->port() << " (root "
              << config.root << ")" << std::endl;
    if (a.json)
      std::cout << Json{{"listening", "http://" + config.host + ":" + std::to_string((*server)->port())},
                        {"host", config.host},
                        {"port", (*server)->port()},
                        {"root", config.root}}
                       .dump()
                << std::endl;
  });
  Status st = (*server)->Listen();
  announce.join();
  g_server = nullptr;
  if (!st.ok()) return Fail(st);
  return kExitOk;
}

}  // namespace

void AddServeCommand(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ServeArgs>();
  auto* cmd = app.add_subcommand("serve", "Run the import server: receives episode zip slices over HTTP (§9)");
  cmd->add_option("--root", args->root, "directory of task directories (one per project)");
  cmd->add_option("--config", args->config, "JSON config: tokens, users, limits (docs/serve.md)");
  cmd->add_option("--host", args->host, "address to bind (default 127.0.0.1: loopback only)");
  cmd->add_option("--port", args->port, "port (default 8765; 0 = any free port, printed on stderr)");
  cmd->add_option("--workers", args->workers, "requests processed at once (default 8)");
  cmd->add_flag("--no-check", args->no_check, "skip the conformance checker on received slices");
  cmd->add_option("--hash-token", args->hash_token, "print the SHA-256 of a token for the config, and exit");
  cmd->add_flag("--hash-password", args->hash_password_stdin,
                "read a password from stdin, print its pbkdf2-sha256 hash for the config, and exit");
  cmd->add_flag("--json", args->json,
                "one JSON line on stdout once listening ({\"listening\", \"host\", \"port\", \"root\"}); "
                "with --hash-*: the hash as JSON");
  cmd->callback([args, &exit_code] { exit_code = RunServe(*args); });
}

}  // namespace reel::cli
