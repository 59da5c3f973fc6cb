// Server (serve.h): prepares the root, then hands requests to the HTTP edge
// (http_edge.cc), which hides cpp-httplib.
#include <filesystem>

#include "reel/serve.h"
#include "serve/http_edge.h"
#include "write/transaction.h"

namespace reel {

using serve::HttpEdge;

struct Server::Impl {
  ServeConfig config;
  std::unique_ptr<HttpEdge> edge;
};

namespace {

// Rolls interrupted commits of every task forward and clears scratch space left by a
// previous run (a kill mid-import leaves staged files, never a partial episode).
Status PrepareRoot(const ServeConfig& config) {
  FileSystem* fs = DefaultFileSystem();
  REEL_RETURN_IF_ERROR(fs->CreateDirs(config.root));
  REEL_ASSIGN_OR_RETURN(auto entries, fs->ListDir(config.root));
  for (const DirEntry& e : entries) {
    if (e.type != FileType::kDirectory || e.name.starts_with(".")) continue;
    const std::string task = JoinPath(config.root, e.name);
    REEL_ASSIGN_OR_RETURN(FileInfo info, fs->Stat(JoinPath(task, "meta")));
    if (info.type != FileType::kDirectory) continue;
    REEL_ASSIGN_OR_RETURN(internal::TaskLock lock, internal::TaskLock::Acquire(fs, task));
    REEL_RETURN_IF_ERROR(lock.RemoveStaleTemps());
  }
  (void)RemoveAll(fs, JoinPath(config.root, ".staging"));
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<Server>> Server::Create(const ServeConfig& given) {
  if (given.root.empty()) return Status::Invalid("serve: no root directory given");
  // An absolute root: every server path in a message then starts with it, so the edge
  // can remove it from answers without touching relative names ("data/...").
  ServeConfig config = given;
  std::error_code ec;
  std::string root = std::filesystem::absolute(given.root, ec).lexically_normal().string();
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (ec || root.empty()) return Status::Invalid("serve: root \"" + given.root + "\" cannot be made absolute");
  config.root = root;
  if (config.port < 0 || config.port > 65535)
    return Status::Invalid("serve: port " + std::to_string(config.port) + " is out of range");
  if (config.workers < 1 || config.max_connections < 1 || config.max_connections_per_address < 1)
    return Status::Invalid("serve: workers, max_connections and max_connections_per_address must be at least 1");
  if (config.head_timeout_s < 1 || config.request_timeout_s < 1 || config.read_timeout_s < 1)
    return Status::Invalid("serve: head_timeout_s, request_timeout_s and read_timeout_s must be at least 1");
  REEL_RETURN_IF_ERROR(PrepareRoot(config));
  std::unique_ptr<Server> server(new Server());
  server->impl_ = std::make_unique<Impl>();
  server->impl_->config = config;
  REEL_ASSIGN_OR_RETURN(server->impl_->edge, HttpEdge::Make(config));
  return server;
}

Server::~Server() {
  if (impl_) Stop();
}

Status Server::Listen() { return impl_->edge->Listen(); }
int Server::port() const { return impl_->edge->port(); }
bool Server::WaitUntilListening(double timeout_s) const { return impl_->edge->WaitUntilListening(timeout_s); }
void Server::Stop() { impl_->edge->Stop(); }

}  // namespace reel
