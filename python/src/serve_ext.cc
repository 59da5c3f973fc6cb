// reel._core.ServeConfig / ServerThread: the import server (include/reel/serve.h) on a thread
// of the Python process, for reel.serve.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>

#include <memory>
#include <thread>

#include "binding.h"
#include "reel/serve.h"

namespace reel {
namespace py {

using namespace nb::literals;

namespace {

// A Server listening on its own thread: Listen() runs there with no GIL; stop() (or the
// object's destruction) stops it and joins.
class ServerThread {
 public:
  static std::unique_ptr<ServerThread> Start(const ServeConfig& config) {
    auto t = std::unique_ptr<ServerThread>(new ServerThread);
    t->host_ = config.host;
    {
      nb::gil_scoped_release release;
      auto server = Server::Create(config);
      if (!server.ok()) t->result_ = server.status();
      else t->server_ = std::move(*server);
    }
    if (!t->result_.ok()) RaiseStatus(t->result_);
    ServerThread* self = t.get();
    t->thread_ = std::thread([self] { self->result_ = self->server_->Listen(); });
    bool up = false;
    {
      nb::gil_scoped_release release;
      up = t->server_->WaitUntilListening(30);
    }
    if (!up || t->server_->port() == 0) {
      t->Join();
      RaiseStatus(t->result_.ok() ? Status::IOError("reel serve: not listening after 30 s") : t->result_);
    }
    return t;
  }
  ~ServerThread() { Join(); }
  int port() const { return server_ ? server_->port() : 0; }
  const std::string& host() const { return host_; }
  bool running() const { return thread_.joinable(); }
  // Stops and joins; returns how Listen() ended.
  Status Stop() {
    Join();
    return result_;
  }

 private:
  ServerThread() = default;
  void Join() {
    if (!thread_.joinable()) return;
    server_->Stop();
    if (PyGILState_Check()) {
      nb::gil_scoped_release release;
      thread_.join();
    } else {
      thread_.join();
    }
  }
  std::unique_ptr<Server> server_;
  std::thread thread_;
  Status result_;
  std::string host_;
};

}  // namespace

void BindServe(nb::module_& m) {
  nb::class_<ServeConfig>(m, "ServeConfig",
                          "reel::ServeConfig (include/reel/serve.h): `reel serve`. Tokens and users come from "
                          "a JSON config file (docs/serve.md) read by load_serve_config.")
      .def(nb::init<>())
      .def_rw("root", &ServeConfig::root, "Directory of task directories, one per project (CLI --root).")
      .def_rw("host", &ServeConfig::host, "Address to bind; default 127.0.0.1 (CLI --host).")
      .def_rw("port", &ServeConfig::port, "Port; 0 = any free port (CLI --port).")
      .def_rw("max_request_bytes", &ServeConfig::max_request_bytes, "413 above this.")
      .def_rw("max_field_bytes", &ServeConfig::max_field_bytes, "Form fields other than `file`.")
      .def_rw("read_timeout_s", &ServeConfig::read_timeout_s, "Per socket read.")
      .def_rw("write_timeout_s", &ServeConfig::write_timeout_s, "Per socket write.")
      .def_rw("request_timeout_s", &ServeConfig::request_timeout_s, "Whole request body (408 after).")
      .def_rw("head_timeout_s", &ServeConfig::head_timeout_s, "Request line and headers.")
      .def_rw("workers", &ServeConfig::workers, "Requests processed at once (CLI --workers).")
      .def_rw("max_connections", &ServeConfig::max_connections, "Connections read at once.")
      .def_rw("max_connections_per_address", &ServeConfig::max_connections_per_address,
              "503 limit.connections past this, per client address.")
      .def_rw("session_ttl_s", &ServeConfig::session_ttl_s, "Login cookie lifetime.")
      .def_rw("check", &ServeConfig::check, "Run the checker on each slice (CLI --no-check).")
      .def_rw("log_path", &ServeConfig::log_path, "JSON-lines log; \"\" = stderr.");
  m.def("load_serve_config", [](const std::string& path) { return Unwrap(LoadServeConfig(path)); }, "path"_a,
        "Reads a JSON serve config (tokens, users, limits; docs/serve.md).");
  m.def("sha256_hex", &Sha256Hex, "data"_a, "Hex SHA-256, for a config's token entries (reel serve --hash-token).");
  m.def(
      "hash_password",
      [](const std::string& password) {
        // An empty password would let anyone log in as the user it is configured for.
        if (password.empty()) RaiseStatus(Status::Invalid("hash_password: the password is empty"));
        return HashPassword(password);
      },
      "password"_a, "A new pbkdf2-sha256 hash for a config's users (reel serve --hash-password); "
      "an empty password raises InvalidError.");
  nb::class_<ServerThread>(m, "ServerThread", "The import server listening on a thread of this process.")
      .def_static("start", &ServerThread::Start, "config"_a,
                  "Creates the server, binds and serves on a new thread; returns once it listens.")
      .def_prop_ro("port", &ServerThread::port, "The bound port.")
      .def_prop_ro("host", &ServerThread::host, "The bound address.")
      .def_prop_ro("running", &ServerThread::running, "False once stopped.")
      .def("stop", [](ServerThread& t) {
        Status st = t.Stop();
        if (!st.ok()) RaiseStatus(st);
      }, "Stops accepting, waits for in-flight requests, joins the thread.");
}

}  // namespace py
}  // namespace reel
