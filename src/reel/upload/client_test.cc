// The upload client (include/reel/upload.h) against an in-test import server that
// speaks the protocol of docs/serve.md (simple multipart upload, landed check, tus
// 1.0.0 resumable upload, login cookie) with injectable faults, and a TCP proxy that
// can drop a connection part-way through a request. Tasks are recorded with the library.
#include <httplib.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "reel/file_group.h"
#include "reel/fs.h"
#include "reel/pack.h"
#include "reel/recorder.h"
#include "reel/simulate.h"
#include "reel/task.h"
#include "reel/upload.h"
#include "testing/tiny_rig.h"
#include "testing/status_matchers.h"

namespace reel {
namespace {

// Every UploadEpisodes call asks once, before packing, whether the credentials are
// accepted (a landed check): a refusal there stops the batch before any body is sent.
constexpr int kCredentialsCheck = 1;

namespace stdfs = std::filesystem;
using Json = nlohmann::json;

// ---- an import server with faults ------------------------------------------------

std::string Base64Decode(const std::string& in) {
  static const std::string abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    const size_t v = abc.find(c);
    if (v == std::string::npos) break;  // '=' padding
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

// N from the slice itself: the data parquet's arcname names chunk and file number
// (chunks of 1000), which the form's episode_index alone cannot tell apart.
int64_t EpisodeOfZip(const std::string& zip) {
  static const std::regex re(R"(data/chunk-(\d+)/episode-(\d+)\.parquet)");
  std::smatch m;
  if (!std::regex_search(zip, m, re)) return -1;
  return std::stoll(m[1]) * 1000 + std::stoll(m[2]) + 1;
}

struct Upload {  // what one accepted multipart POST carried
  std::map<std::string, std::string> fields;
  std::string filename, content_type, file;
  std::string authorization, cookie;
};

class FakeServer {
 public:
  // Faults and settings; set before the client runs.
  std::string token;                 // required bearer token ("" = none)
  std::string user, password;        // login required when user is set
  int fail_posts = 0;                // answer the next fail_posts upload POSTs with fail_status
  int fail_status = 503;
  bool import_then_fail = false;     // ... after importing the episode all the same
  std::string retry_after;           // Retry-After on the failed answers
  std::string rule = "server.busy", detail = "try later";
  int fail_sessions = 0;             // answer the next fail_sessions landed checks with 500
  int expire_cookies_on_post = 0;    // forget every session at the next N upload POSTs (401)
  int half_patches = 0;              // PATCHes after the first: store half the chunk, answer 500
  int lose_tail_at_patch = 0;        // before PATCH #k: drop the last half of the stored bytes
  int forget_at_patch = 0;           // before PATCH #k: forget the upload (expired: 404)
  bool no_digests = false;           // no GET .../episodes/<N> (the reference server): 404
  std::string corrupt_role;          // a file of that role held with other bytes (digest off)

  // What happened.
  std::mutex mu;
  std::vector<Upload> uploads;
  std::vector<std::string> log;  // "METHOD path" of every request
  int posts = 0, checks = 0, logins = 0, patches = 0;
  std::map<std::pair<std::string, int64_t>, std::string> imported;  // (name, N) -> zip bytes
  std::map<std::string, std::string> tus_bytes;                       // id -> bytes so far
  std::map<std::string, std::map<std::string, std::string>> tus_meta;  // id -> metadata

  FakeServer() {
    srv_.Post("/api/v1/auth/login", [this](const httplib::Request& q, httplib::Response& r) {
      std::lock_guard<std::mutex> lock(mu);
      Note(q);
      ++logins;
      const Json j = Json::parse(q.body, nullptr, false);
      if (!j.is_object() || j.value("username", "") != user || j.value("password", "") != password)
        return Error(r, 401, "auth.login", "bad credentials");
      const std::string cookie = "c0ffee" + std::to_string(logins);
      sessions_.insert(cookie);
      r.set_header("Set-Cookie", "reel_session=" + cookie + "; Path=/; HttpOnly; SameSite=Strict");
      r.set_content("{}", "application/json");
    });
    srv_.Post("/api/v1/session/upload", [this](const httplib::Request& q, httplib::Response& r) {
      std::lock_guard<std::mutex> lock(mu);
      Note(q);
      ++posts;
      if (expire_cookies_on_post > 0) {
        --expire_cookies_on_post;
        sessions_.clear();
      }
      if (!Authorized(q, r)) return;
      if (!q.has_file("file") || !q.has_file("name") || !q.has_file("episode_index"))
        return Error(r, 400, "form.fields", "missing field");
      Upload u;
      for (const auto& [k, v] : q.files) u.fields[k] = v.content;
      const auto file = q.get_file_value("file");
      u.filename = file.filename;
      u.content_type = file.content_type;
      u.file = file.content;
      u.authorization = q.get_header_value("Authorization");
      u.cookie = q.get_header_value("Cookie");
      uploads.push_back(u);
      if (fail_posts > 0) {
        --fail_posts;
        if (import_then_fail) Import(u.fields["name"], u.fields["episode_index"], u.file, r);
        return Fail(r);
      }
      Import(u.fields["name"], u.fields["episode_index"], u.file, r);
    });
    srv_.Get("/api/v1/sessions", [this](const httplib::Request& q, httplib::Response& r) {
      std::lock_guard<std::mutex> lock(mu);
      Note(q);
      ++checks;
      if (!Authorized(q, r)) return;
      if (fail_sessions > 0) {
        --fail_sessions;
        return Error(r, 500, "server.internal", "database locked");
      }
      Json list = Json::array();
      for (const auto& [key, zip] : imported)
        if (key.first == q.get_param_value("name"))
          list.push_back({{"session_id", SessionId(key)}, {"name", key.first}, {"project_id", ""},
                          {"episode_index", key.second}, {"upload_episode_index", (key.second - 1) % 1000}});
      r.set_content(Json{{"sessions", list}}.dump(), "application/json");
    });
    srv_.Post("/api/v1/uploads", [this](const httplib::Request& q, httplib::Response& r) {
      std::lock_guard<std::mutex> lock(mu);
      Note(q);
      if (!Authorized(q, r)) return;
      const std::string id = "u" + std::to_string(tus_meta.size() + 1);
      auto& meta = tus_meta[id];
      meta["length"] = q.get_header_value("Upload-Length");
      meta["tus"] = q.get_header_value("Tus-Resumable");
      std::stringstream items(q.get_header_value("Upload-Metadata"));
      for (std::string item; std::getline(items, item, ',');) {
        const size_t sp = item.find(' ');
        meta[item.substr(0, sp)] = sp == std::string::npos ? "" : Base64Decode(item.substr(sp + 1));
      }
      tus_bytes[id] = "";
      r.status = 201;
      r.set_header("Location", "/api/v1/uploads/" + id);
      r.set_header("Upload-Offset", "0");
      r.set_header("Tus-Resumable", "1.0.0");
    });
    // HEAD is answered by httplib from the GET handler (without the body).
    srv_.Get(R"(/api/v1/uploads/(\w+))", [this](const httplib::Request& q, httplib::Response& r) {
      std::lock_guard<std::mutex> lock(mu);
      Note(q);
      auto it = tus_bytes.find(q.matches[1]);
      if (it == tus_bytes.end()) return Error(r, 404, "tus.expired", "no such upload");
      r.set_header("Upload-Offset", std::to_string(it->second.size()));
      r.set_header("Upload-Length", tus_meta[it->first]["length"]);
      r.set_header("Cache-Control", "no-store");
    });
    srv_.Patch(R"(/api/v1/uploads/(\w+))", [this](const httplib::Request& q, httplib::Response& r) {
      std::lock_guard<std::mutex> lock(mu);
      Note(q);
      ++patches;
      if (patches == forget_at_patch) tus_bytes.erase(q.matches[1]);
      auto it = tus_bytes.find(q.matches[1]);
      if (it == tus_bytes.end()) return Error(r, 404, "tus.expired", "no such upload");
      if (q.get_header_value("Tus-Resumable") != "1.0.0" ||
          q.get_header_value("Content-Type") != "application/offset+octet-stream")
        return Error(r, 400, "tus.headers", "bad headers");
      if (patches == lose_tail_at_patch) it->second.resize(it->second.size() / 2);
      if (q.get_header_value("Upload-Offset") != std::to_string(it->second.size()))
        return Error(r, 409, "tus.offset", "offset mismatch");
      if (patches > 1 && half_patches > 0) {
        --half_patches;
        it->second += q.body.substr(0, q.body.size() / 2);
        return Error(r, 500, "server.internal", "disk hiccup");
      }
      it->second += q.body;
      r.status = 204;
      r.set_header("Upload-Offset", std::to_string(it->second.size()));
    });
    srv_.Post(R"(/api/v1/uploads/(\w+)/import)", [this](const httplib::Request& q, httplib::Response& r) {
      std::lock_guard<std::mutex> lock(mu);
      Note(q);
      auto it = tus_bytes.find(q.matches[1]);
      if (it == tus_bytes.end()) return Error(r, 404, "tus.expired", "no such upload");
      auto& meta = tus_meta[it->first];
      if (std::to_string(it->second.size()) != meta["length"])
        return Error(r, 409, "tus.incomplete", "upload incomplete");
      Import(meta["name"], meta["episode_index"], it->second, r);
    });
    // What the server holds of (project, N), digested as docs/serve.md says: the imported
    // slice extracted (it is a one-episode task) and DigestFileGroup over it.
    srv_.Get(R"(/api/v1/projects/([^/]+)/episodes/(\d+))", [this](const httplib::Request& q, httplib::Response& r) {
      std::lock_guard<std::mutex> lock(mu);
      Note(q);
      if (!Authorized(q, r)) return;
      if (no_digests) return Error(r, 404, "http.not_found", "no such endpoint");
      auto it = imported.find({q.matches[1], std::stoll(q.matches[2])});
      if (it == imported.end()) return Error(r, 404, "episode.not_found", "no such episode");
      Json files = Json::array();
      for (const FileDigest& d : HeldDigests(it->second, it->first.second)) {
        const std::string sha = d.role == corrupt_role ? std::string(64, '0') : d.sha256;
        files.push_back({{"role", d.role}, {"path", d.path}, {"size", d.size}, {"sha256", sha}});
      }
      r.set_content(Json{{"project_id", it->first.first}, {"episode_index", it->first.second}, {"files", files}}.dump(),
                    "application/json");
    });
    port_ = srv_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { srv_.listen_after_bind(); });
    for (int i = 0; i < 500 && !srv_.is_running(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ~FakeServer() {
    srv_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  static std::string SessionId(const std::pair<std::string, int64_t>& key) {
    return key.first + "-" + std::to_string(key.second);
  }
  void Note(const httplib::Request& q) { log.push_back(q.method + " " + q.path); }
  static std::vector<FileDigest> HeldDigests(const std::string& zip, int64_t n) {
    const std::string dir = stdfs::temp_directory_path() / ("reel_held_" + std::to_string(::getpid()) + "_" +
                                                            std::to_string(n) + "_" + std::to_string(zip.size()));
    stdfs::remove_all(dir);
    stdfs::create_directories(dir);
    { std::ofstream(dir + "/s.zip", std::ios::binary) << zip; }
    std::vector<FileDigest> out;
    if (ExtractSlice(dir + "/s.zip", dir + "/task").ok())
      if (auto task = Task::Open(dir + "/task"); task.ok())
        if (auto e = (*task)->FindEpisode(n); e.ok())
          if (auto d = DigestFileGroup(**task, *e); d.ok()) out = *d;
    stdfs::remove_all(dir);
    return out;
  }
  static void Error(httplib::Response& r, int status, const std::string& rule, const std::string& detail) {
    r.status = status;
    r.set_content(Json{{"detail", detail}, {"rule", rule}, {"request_id", "rq-1"}}.dump(), "application/json");
  }
  void Fail(httplib::Response& r) {
    Error(r, fail_status, rule, detail);
    if (!retry_after.empty()) r.set_header("Retry-After", retry_after);
  }
  bool Authorized(const httplib::Request& q, httplib::Response& r) {
    if (!token.empty() && q.get_header_value("Authorization") != "Bearer " + token) {
      Error(r, 401, "auth.token", "bad token");
      return false;
    }
    if (!user.empty()) {
      const std::string c = q.get_header_value("Cookie");
      const std::string prefix = "reel_session=";
      if (c.rfind(prefix, 0) != 0 || !sessions_.count(c.substr(prefix.size()))) {
        Error(r, 401, "auth.session", "not logged in");
        return false;
      }
    }
    return true;
  }
  void Import(const std::string& name, const std::string& form_index, const std::string& zip,
              httplib::Response& r) {
    const int64_t n = EpisodeOfZip(zip);
    if (n < 1 || std::to_string((n - 1) % 1000) != form_index)
      return Error(r, 422, "form.episode_index", "episode_index " + form_index + " does not match the slice");
    const auto key = std::make_pair(name, n);
    auto it = imported.find(key);
    if (it != imported.end() && it->second != zip) return Error(r, 409, "session.conflict", "different bytes");
    const bool present = it != imported.end();
    imported[key] = zip;
    r.status = present ? 200 : 201;
    r.set_content(Json{{"session_id", SessionId(key)}, {"episode_index", n}, {"name", name},
                       {"project_id", ""}, {"already_present", present}}.dump(),
                  "application/json");
  }

  httplib::Server srv_;
  std::thread thread_;
  int port_ = -1;
  std::set<std::string> sessions_;
};

// ---- a TCP proxy that drops one connection part-way -------------------------------

class DropProxy {
 public:
  // Forwards 127.0.0.1:port() to 127.0.0.1:upstream. The first connection that carries
  // more than drop_after client bytes is closed (both sides) at that point; later
  // connections pass through.
  DropProxy(int upstream, size_t drop_after) : upstream_(upstream), drop_after_(drop_after) {
    listen_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(listen_, 16);
    socklen_t len = sizeof a;
    ::getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { Accept(); });
  }
  ~DropProxy() {
    stop_ = true;
    ::shutdown(listen_, SHUT_RDWR);
    acceptor_.join();
    for (auto& t : pumps_) t.join();
    ::close(listen_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  bool dropped() const { return dropped_; }

 private:
  void Accept() {
    for (;;) {
      const int c = ::accept(listen_, nullptr, nullptr);
      if (c < 0 || stop_) {
        if (c >= 0) ::close(c);
        return;
      }
      pumps_.emplace_back([this, c] { Pump(c); });
    }
  }
  void Pump(int client) {
    const int up = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(upstream_));
    if (::connect(up, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(client);
      ::close(up);
      return;
    }
    size_t from_client = 0;
    char buf[16384];
    while (!stop_) {
      pollfd fds[2] = {{client, POLLIN, 0}, {up, POLLIN, 0}};
      if (::poll(fds, 2, 50) <= 0) continue;
      bool closed = false;
      for (int i = 0; i < 2 && !closed; ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const ssize_t n = ::recv(fds[i].fd, buf, sizeof buf, 0);
        if (n <= 0) {
          closed = true;
          break;
        }
        size_t send_n = static_cast<size_t>(n);
        if (i == 0 && !dropped_.load() && from_client + send_n > drop_after_) {
          send_n = drop_after_ - from_client;  // forward up to the cut, then drop both sides
          if (send_n) (void)!::send(up, buf, send_n, MSG_NOSIGNAL);
          dropped_ = true;
          closed = true;
          break;
        }
        if (i == 0) from_client += send_n;
        if (::send(fds[1 - i].fd, buf, send_n, MSG_NOSIGNAL) < 0) closed = true;
      }
      if (closed) break;
    }
    ::close(client);
    ::close(up);
  }

  int upstream_;
  size_t drop_after_;
  int listen_ = -1;
  int port_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<bool> dropped_{false};
  std::thread acceptor_;
  std::vector<std::thread> pumps_;  // touched by the acceptor thread only, joined after it
};

// ---- tasks ---------------------------------------------------------------------------

// Records one episode into the task at `root` (created when new); returns its N.
int64_t Record(const std::string& root, int64_t watermark = 0) {
  TaskWriterOptions options = SimulatedRigOptions("pick", reel::testing::TinyRig());
  options.progress_watermark = watermark;
  auto writer = TaskWriter::Open(root, options);
  EXPECT_OK(writer);
  if (!writer.ok()) return -1;
  auto episode = (*writer)->BeginEpisode();
  EXPECT_OK(episode);
  if (!episode.ok()) return -1;
  const int64_t n = (*episode)->episode_index();
  Status st = SimulateEpisode(**episode, reel::testing::TinyRig(), n);
  EXPECT_OK(st);
  auto done = (*episode)->Commit();
  EXPECT_OK(done);
  return n;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class UploadClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string tmpl = JoinPath(::testing::TempDir(), "reel_upload.XXXXXX");
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = new std::string(tmpl);
    ASSERT_EQ(Record(JoinPath(*dir_, "base/pick")), 1);
    ASSERT_EQ(Record(JoinPath(*dir_, "base/pick")), 2);
    ASSERT_EQ(Record(JoinPath(*dir_, "late/pick"), 1001), 1001);
  }
  static void TearDownTestSuite() {
    if (dir_) stdfs::remove_all(*dir_);
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(dir_, nullptr) << "suite setup failed"; }

  // A private copy of the two-episode task, named "pick".
  std::string Fresh(const std::string& name, const char* source = "base") {
    const std::string root = JoinPath(*dir_, name + "/pick");
    stdfs::remove_all(JoinPath(*dir_, name));
    stdfs::create_directories(JoinPath(*dir_, name));
    stdfs::copy(JoinPath(*dir_, std::string(source) + "/pick"), root, stdfs::copy_options::recursive);
    return root;
  }

  // Fast retries; a work dir inside the test directory so leftovers can be seen.
  UploadOptions Options(const std::string& server) {
    UploadOptions o;
    o.server = server;
    o.backoff_initial_s = 0.01;
    o.backoff_max_s = 0.05;
    o.connect_timeout_s = 2;
    o.io_timeout_s = 5;
    o.work_dir = JoinPath(*dir_, "work");
    return o;
  }

  // The slice PackEpisode makes for N of `root`, packed here independently of the client.
  std::string PackedBytes(const std::string& root, int64_t n) {
    const std::string zip = JoinPath(*dir_, "reference-" + std::to_string(n) + ".zip");
    PackOptions o;
    o.replace_existing = true;  // several tests ask for the same reference slice
    auto packed = PackEpisode(root, n, zip, o);
    EXPECT_OK(packed);
    return ReadAll(zip);
  }

  void ExpectWorkDirEmpty() {
    const std::string work = JoinPath(*dir_, "work");
    if (!stdfs::exists(work)) return;
    EXPECT_TRUE(stdfs::is_empty(work)) << "packed slices left in " << work;
  }

  static std::string* dir_;
};
std::string* UploadClientTest::dir_ = nullptr;

const char* kData1 = "data/chunk-000/episode-000.parquet";
const char* kRow1 = "meta/episodes/chunk-000/episode-000.parquet";

std::vector<std::string> VideosOf1(const std::string& root) {
  std::vector<std::string> out;
  if (!stdfs::exists(JoinPath(root, "videos"))) return out;
  for (const auto& e : stdfs::recursive_directory_iterator(JoinPath(root, "videos")))
    if (e.is_regular_file() && e.path().filename().string().rfind("episode-000.", 0) == 0)
      out.push_back(e.path().string());
  return out;
}

// ---- tests -------------------------------------------------------------------------

TEST_F(UploadClientTest, UploadMultipartFieldsAndBearer) {
  FakeServer server;
  server.token = "t0k";
  const std::string root = JoinPath(*dir_, "base/pick");
  UploadOptions o = Options(server.url());
  o.token = "t0k";
  auto results = UploadEpisodes(root, {1, 2}, o);
  ASSERT_EQ(results.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_OK(results[i]);
    EXPECT_EQ(results[i]->episode_index, static_cast<int64_t>(i + 1));
    EXPECT_EQ(results[i]->session_id, "pick-" + std::to_string(i + 1));
    EXPECT_FALSE(results[i]->already_present);
    EXPECT_EQ(results[i]->attempts, 1);
    EXPECT_FALSE(results[i]->resumable);
    EXPECT_FALSE(results[i]->deleted);
  }
  ASSERT_EQ(server.uploads.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const Upload& u = server.uploads[i];
    EXPECT_EQ(u.filename, "pick.zip");
    EXPECT_EQ(u.content_type, "application/zip");
    EXPECT_EQ(u.authorization, "Bearer t0k");
    EXPECT_EQ(u.fields.at("name"), "pick");
    EXPECT_EQ(u.fields.at("episode_index"), std::to_string(i));  // (N-1) % 1000
    EXPECT_EQ(u.fields.at("project_id"), "");
    EXPECT_EQ(u.fields.size(), 4u);
    EXPECT_EQ(u.file, PackedBytes(root, static_cast<int64_t>(i + 1)));
    EXPECT_EQ(results[i]->bytes, u.file.size());
  }
  EXPECT_EQ(server.checks, kCredentialsCheck);
  ExpectWorkDirEmpty();
  // Identical re-upload: the server's 200 no-op.
  auto again = UploadEpisode(root, 1, o);
  ASSERT_OK(again);
  EXPECT_TRUE(again->already_present);
}

TEST_F(UploadClientTest, RefusedCredentialsStopTheBatchBeforeAnyBodyIsSent) {
  FakeServer server;
  server.token = "t0k";
  UploadOptions o = Options(server.url());
  o.token = "wrong";
  auto results = UploadEpisodes(JoinPath(*dir_, "base/pick"), {1, 2}, o);
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
    EXPECT_THAT(r.status().message(), ::testing::HasSubstr("before any slice was sent")) << r.status().message();
    EXPECT_THAT(r.status().message(), ::testing::HasSubstr("401")) << r.status().message();
  }
  EXPECT_EQ(server.posts, 0);
  EXPECT_EQ(server.checks, kCredentialsCheck);
  ExpectWorkDirEmpty();
}

TEST_F(UploadClientTest, UploadEpisodeIndexWrapsAtThousand) {
  FakeServer server;
  UploadOptions o = Options(server.url());
  o.project_id = "proj-7";
  o.name = "pick_renamed";
  auto r = UploadEpisode(JoinPath(*dir_, "late/pick"), 1001, o);
  ASSERT_OK(r);
  ASSERT_EQ(server.uploads.size(), 1u);
  EXPECT_EQ(server.uploads[0].fields.at("episode_index"), "0");
  EXPECT_EQ(server.uploads[0].fields.at("name"), "pick_renamed");
  EXPECT_EQ(server.uploads[0].fields.at("project_id"), "proj-7");
  EXPECT_EQ(server.uploads[0].filename, "pick_renamed.zip");
  EXPECT_EQ(EpisodeOfZip(server.uploads[0].file), 1001);
  EXPECT_EQ(server.imported.count({"pick_renamed", 1001}), 1u);
}

TEST_F(UploadClientTest, UploadBusyAfterImportAsksSessionsAndDoesNotPostAgain) {
  FakeServer server;
  server.fail_posts = 1;
  server.fail_status = 503;
  server.import_then_fail = true;
  // The credentials check and the first landed check fail too: a landed check must be asked
  // again, not assumed absent (a 500 on the credentials check lets the upload go on).
  server.fail_sessions = kCredentialsCheck + 1;
  auto r = UploadEpisode(JoinPath(*dir_, "base/pick"), 2, Options(server.url()));
  ASSERT_OK(r);
  EXPECT_EQ(server.posts, 1);
  EXPECT_EQ(server.checks, kCredentialsCheck + 2);
  EXPECT_TRUE(r->already_present);
  EXPECT_EQ(r->session_id, "pick-2");
  EXPECT_EQ(r->attempts, 3);
}

TEST_F(UploadClientTest, UploadConnectionDroppedMidBodyIsRetried) {
  FakeServer server;
  DropProxy proxy(server.port(), 20000);  // inside the zip: the slice is far larger
  const std::string root = JoinPath(*dir_, "base/pick");
  auto r = UploadEpisode(root, 1, Options(proxy.url()));
  ASSERT_OK(r);
  EXPECT_TRUE(proxy.dropped());
  EXPECT_GT(r->bytes, 20000u);
  EXPECT_EQ(r->attempts, 2);
  EXPECT_FALSE(r->already_present);
  EXPECT_EQ(server.checks, kCredentialsCheck + 1);  // asked before sending again
  ASSERT_EQ(server.uploads.size(), 1u);  // the cut request never reached a handler
  EXPECT_EQ(server.uploads[0].file, PackedBytes(root, 1));
}

TEST_F(UploadClientTest, UploadFinalErrorNamesRuleAndDetailAfterOneAttempt) {
  FakeServer server;
  server.fail_posts = 5;
  server.fail_status = 400;
  server.rule = "zip.traversal";
  server.detail = "entry '../x' leaves the task directory";
  const std::string root = Fresh("final");
  UploadOptions o = Options(server.url());
  o.delete_after = true;
  auto r = UploadEpisode(root, 1, o);
  ASSERT_FALSE(r.ok());
  const std::string msg = r.status().message();
  EXPECT_THAT(msg, ::testing::HasSubstr("episode 1")) << msg;
  EXPECT_THAT(msg, ::testing::HasSubstr("400")) << msg;
  EXPECT_THAT(msg, ::testing::HasSubstr("zip.traversal")) << msg;
  EXPECT_THAT(msg, ::testing::HasSubstr("entry '../x' leaves the task directory")) << msg;
  EXPECT_EQ(r.status().code(), StatusCode::kInvalid);
  EXPECT_EQ(server.posts, 1);
  EXPECT_EQ(server.checks, kCredentialsCheck);
  // Nothing deleted when the upload failed.
  EXPECT_TRUE(stdfs::exists(JoinPath(root, kData1)));
  EXPECT_FALSE(VideosOf1(root).empty());
  ExpectWorkDirEmpty();
}

TEST_F(UploadClientTest, UploadGivesUpAfterMaxAttemptsAndDeletesNothing) {
  FakeServer server;
  server.fail_posts = 100;
  server.fail_status = 500;
  const std::string root = Fresh("giveup");
  UploadOptions o = Options(server.url());
  o.max_attempts = 3;
  o.delete_after = true;
  auto r = UploadEpisode(root, 1, o);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("3 attempts")) << r.status().message();
  EXPECT_EQ(server.posts, 3);
  EXPECT_EQ(server.checks, kCredentialsCheck + 2);
  EXPECT_TRUE(stdfs::exists(JoinPath(root, kData1)));
  EXPECT_FALSE(VideosOf1(root).empty());
}

TEST_F(UploadClientTest, UploadHonoursRetryAfter) {
  FakeServer server;
  server.fail_posts = 1;
  server.fail_status = 429;
  server.retry_after = "1";
  const auto t0 = std::chrono::steady_clock::now();
  auto r = UploadEpisode(JoinPath(*dir_, "base/pick"), 1, Options(server.url()));
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_OK(r);
  EXPECT_GE(elapsed, 1.0);   // backoff alone would be <= 0.05 s
  EXPECT_EQ(server.posts, 2);
  EXPECT_EQ(server.checks, kCredentialsCheck + 1);
  EXPECT_EQ(r->attempts, 2);
}

TEST_F(UploadClientTest, UploadLoginCookieFlowAndReloginOn401) {
  FakeServer server;
  server.user = "alice";
  server.password = "s3cret";
  server.expire_cookies_on_post = 1;  // the first upload finds its session gone: 401
  UploadOptions o = Options(server.url());
  o.username = "alice";
  o.password = "s3cret";
  auto r = UploadEpisode(JoinPath(*dir_, "base/pick"), 1, o);
  ASSERT_OK(r);
  EXPECT_EQ(server.logins, 2);
  EXPECT_EQ(server.posts, 2);
  ASSERT_EQ(server.uploads.size(), 1u);  // only the authorized one is recorded
  EXPECT_EQ(server.uploads[0].cookie, "reel_session=c0ffee2");
  ASSERT_GE(server.log.size(), 1u);
  EXPECT_EQ(server.log[0], "POST /api/v1/auth/login");

  // A batch shares one session: one login for two episodes.
  FakeServer batch;
  batch.user = "alice";
  batch.password = "s3cret";
  o.server = batch.url();
  auto both = UploadEpisodes(JoinPath(*dir_, "base/pick"), {1, 2}, o);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_TRUE(both[0].ok() && both[1].ok());
  EXPECT_EQ(batch.logins, 1);
  EXPECT_EQ(batch.imported.size(), 2u);

  // Wrong password: a final 401 after one login, no upload.
  FakeServer strict;
  strict.user = "alice";
  strict.password = "other";
  o.server = strict.url();
  auto bad = UploadEpisode(JoinPath(*dir_, "base/pick"), 1, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kPermissionDenied) << bad.status().ToString();
  EXPECT_THAT(bad.status().message(), ::testing::HasSubstr("auth.login")) << bad.status().message();
  EXPECT_EQ(strict.logins, 1);
  EXPECT_EQ(strict.posts, 0);
}

TEST_F(UploadClientTest, UploadResumableResumesFromHeadOffset) {
  FakeServer server;
  server.half_patches = 1;  // the second PATCH stores half its chunk, then answers 500
  const std::string root = JoinPath(*dir_, "base/pick");
  const std::string want = PackedBytes(root, 2);
  ASSERT_GT(want.size(), 4096u);
  UploadOptions o = Options(server.url());
  o.resumable_threshold = 1024;
  o.chunk_bytes = want.size() / 4 + 1;  // four PATCHes when nothing fails
  std::vector<UploadProgress> seen;
  o.progress = [&seen](const UploadProgress& p) { seen.push_back(p); };
  auto r = UploadEpisode(root, 2, o);
  ASSERT_OK(r);
  EXPECT_TRUE(r->resumable);
  EXPECT_EQ(r->attempts, 2);
  EXPECT_EQ(r->session_id, "pick-2");
  ASSERT_EQ(server.tus_meta.size(), 1u);  // resumed, not restarted
  auto& meta = server.tus_meta.begin()->second;
  EXPECT_EQ(meta["tus"], "1.0.0");
  EXPECT_EQ(meta["length"], std::to_string(want.size()));
  EXPECT_EQ(meta["name"], "pick");
  EXPECT_EQ(meta["episode_index"], "1");
  EXPECT_EQ(meta.count("project_id"), 0u);  // omitted when empty
  EXPECT_EQ(server.tus_bytes.begin()->second, want);  // the exact bytes, once
  EXPECT_EQ(server.imported.at({"pick", 2}), want);
  // The resumed PATCH started at the half-chunk offset HEAD reported.
  const uint64_t resume_at = o.chunk_bytes + o.chunk_bytes / 2;
  bool head_seen = false;
  for (const std::string& line : server.log) head_seen = head_seen || line.rfind("HEAD ", 0) == 0;
  EXPECT_TRUE(head_seen);
  // 2 (the second stored half) + 3 for the remaining 2.5 chunks from the resumed offset.
  EXPECT_EQ(server.patches, 5);
  bool resumed_report = false;
  for (const UploadProgress& p : seen) resumed_report = resumed_report || (p.attempt == 2 && p.sent == resume_at);
  EXPECT_TRUE(resumed_report) << "attempt 2 should start at the server's offset " << resume_at;
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().sent, want.size());
}

TEST_F(UploadClientTest, UploadResumableConflictAsksHeadAndExpiredUploadStartsOver) {
  const std::string root = JoinPath(*dir_, "base/pick");
  const std::string want = PackedBytes(root, 1);
  UploadOptions o = Options("");
  o.resumable_threshold = 0;
  o.chunk_bytes = want.size() / 4 + 1;
  {
    // The server lost bytes it had acknowledged: PATCH #3 gets 409, HEAD says where to go on.
    FakeServer server;
    server.lose_tail_at_patch = 3;
    o.server = server.url();
    auto r = UploadEpisode(root, 1, o);
    ASSERT_OK(r);
    EXPECT_EQ(r->attempts, 1);  // a 409 is answered by HEAD within the attempt
    EXPECT_EQ(server.tus_meta.size(), 1u);
    EXPECT_EQ(server.tus_bytes.begin()->second, want);
    EXPECT_EQ(server.checks, kCredentialsCheck);
    EXPECT_NE(std::find(server.log.begin(), server.log.end(), "HEAD /api/v1/uploads/u1"), server.log.end());
  }
  {
    // The upload expired mid-way (404 on PATCH #2): a new upload from offset 0.
    FakeServer server;
    server.forget_at_patch = 2;
    o.server = server.url();
    auto r = UploadEpisode(root, 1, o);
    ASSERT_OK(r);
    EXPECT_EQ(server.tus_meta.size(), 2u);
    ASSERT_EQ(server.tus_bytes.count("u2"), 1u);
    EXPECT_EQ(server.tus_bytes.at("u2"), want);
    EXPECT_EQ(server.imported.at({"pick", 1}), want);
  }
}

TEST_F(UploadClientTest, UploadProgressIsMonotoneAndEndsAtTotal) {
  FakeServer server;
  std::vector<UploadProgress> seen;
  UploadOptions o = Options(server.url());
  o.progress = [&seen](const UploadProgress& p) { seen.push_back(p); };
  auto r = UploadEpisode(JoinPath(*dir_, "base/pick"), 1, o);
  ASSERT_OK(r);
  ASSERT_GE(seen.size(), 2u);
  uint64_t last = 0;
  for (const UploadProgress& p : seen) {
    EXPECT_EQ(p.episode_index, 1);
    EXPECT_EQ(p.total, r->bytes);
    EXPECT_EQ(p.attempt, 1);
    EXPECT_GE(p.sent, last);
    last = p.sent;
  }
  EXPECT_EQ(seen.back().sent, r->bytes);
}

TEST_F(UploadClientTest, UploadDeleteAfterRemovesDataAndVideosKeepsRow) {
  FakeServer server;
  const std::string root = Fresh("delete");
  ASSERT_FALSE(VideosOf1(root).empty());
  UploadOptions o = Options(server.url());
  o.delete_after = true;
  auto r = UploadEpisode(root, 1, o);
  ASSERT_OK(r);
  EXPECT_TRUE(r->deleted);
  EXPECT_FALSE(stdfs::exists(JoinPath(root, kData1)));
  EXPECT_TRUE(VideosOf1(root).empty());
  EXPECT_TRUE(stdfs::exists(JoinPath(root, kRow1)));
  EXPECT_TRUE(stdfs::exists(JoinPath(root, "meta/stats.json")));
  EXPECT_TRUE(stdfs::exists(JoinPath(root, "data/chunk-000/episode-001.parquet")));  // N=2 untouched
  // Every committed episode that still has data: only N=2 is left to upload.
  auto all = UploadEpisodes(root, {}, Options(server.url()));
  ASSERT_EQ(all.size(), 1u);
  ASSERT_OK(all[0]);
  EXPECT_EQ(all[0]->episode_index, 2);
}

// Proof before deletion (issue 28): a server that cannot show it holds the same bytes (no
// digest endpoint, as the reference collector's; or one file's digest differs, as when
// another rig's episode N is what it holds) gets the episode, and nothing local is deleted.
TEST_F(UploadClientTest, DeleteAfterNeedsTheServersProof) {
  for (const std::string fault : {"no_digests", "data", "video"}) {
    FakeServer server;
    server.no_digests = fault == "no_digests";
    server.corrupt_role = fault == "no_digests" ? "" : fault;
    const std::string root = Fresh("proof_" + fault);
    const auto videos = VideosOf1(root);
    ASSERT_FALSE(videos.empty());
    if (fault == "video") server.corrupt_role = "video/" + stdfs::path(videos[0]).parent_path().filename().string();
    UploadOptions o = Options(server.url());
    o.delete_after = true;
    auto r = UploadEpisode(root, 1, o);
    ASSERT_FALSE(r.ok()) << fault;
    EXPECT_THAT(r.status().message(), ::testing::HasSubstr("uploaded as session pick-1 but not deleted"))
        << r.status().ToString();
    EXPECT_THAT(r.status().message(), ::testing::HasSubstr(fault == "no_digests" ? "http.not_found" : "is not"))
        << r.status().ToString();
    EXPECT_TRUE(stdfs::exists(JoinPath(root, kData1))) << fault;
    EXPECT_EQ(VideosOf1(root), videos) << fault;
  }
}

TEST_F(UploadClientTest, UploadBadServerUrlAndRefusedConnection) {
  UploadOptions o = Options("ftp://example.com");
  auto bad = UploadEpisode(JoinPath(*dir_, "base/pick"), 1, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalid);
  // A port nobody listens on: retried, then an IOError naming the attempts.
  int port;
  {
    FakeServer gone;
    port = gone.port();
  }
  o = Options("http://127.0.0.1:" + std::to_string(port));
  o.max_attempts = 2;
  auto refused = UploadEpisode(JoinPath(*dir_, "base/pick"), 1, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kIOError) << refused.status().ToString();
  EXPECT_THAT(refused.status().message(), ::testing::HasSubstr("2 attempts")) << refused.status().message();
  // Which server could not be reached is in the message.
  EXPECT_THAT(refused.status().message(), ::testing::HasSubstr("127.0.0.1:" + std::to_string(port)))
      << refused.status().message();
}


// ---- the outbox (DrainOutbox, docs/upload.md) ------------------------------------

OutboxOptions OutboxOf(const UploadOptions& u) {
  OutboxOptions o;
  o.upload = u;
  o.backoff_initial_s = 0.01;
  o.backoff_max_s = 0.05;
  o.parallel = 1;
  return o;
}

// The collector's failure this replaces: success judged by name. A server that says
// "already present" for (name, N) but holds other bytes never gets an episode deleted; the
// job ends in conflict with the differing file named, and the local files stay.
TEST_F(UploadClientTest, OutboxJudgesByDigestNeverByName) {
  FakeServer server;
  server.corrupt_role = "data";
  const std::string root = Fresh("outbox_digest");
  OutboxOptions o = OutboxOf(Options(server.url()));
  o.delete_after = DeleteAfter::kConfirmed;
  auto r = DrainOutbox(root, {1}, o);
  ASSERT_OK(r);
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].episode_index, 1);
  ASSERT_FALSE((*r)[0].outcome.ok());
  EXPECT_THAT((*r)[0].outcome.status().message(), ::testing::HasSubstr("the proof failed"))
      << (*r)[0].outcome.status().ToString();
  EXPECT_TRUE(stdfs::exists(JoinPath(root, kData1)));
  auto st = ReadOutboxStatus(root);
  ASSERT_OK(st);
  ASSERT_EQ(st->entries.size(), 1u);
  EXPECT_EQ(st->entries[0].state, "conflict");
  EXPECT_EQ(st->entries[0].digest.size(), 64u);
}

// A server without the digest endpoint (the reference collector's): the episode counts as
// imported, never as confirmed, and nothing is deleted whatever --delete-after says.
TEST_F(UploadClientTest, OutboxWithoutProofImportsButNeverDeletes) {
  FakeServer server;
  server.no_digests = true;
  const std::string root = Fresh("outbox_noproof");
  OutboxOptions o = OutboxOf(Options(server.url()));
  auto r = DrainOutbox(root, {1, 2}, o);
  ASSERT_OK(r);
  for (const auto& one : *r) EXPECT_TRUE(one.outcome.ok()) << one.outcome.status().ToString();
  o.delete_after = DeleteAfter::kConfirmed;
  r = DrainOutbox(root, {1, 2}, o);
  ASSERT_OK(r);
  for (const auto& one : *r) EXPECT_FALSE(one.outcome.ok()) << one.episode_index;
  EXPECT_TRUE(stdfs::exists(JoinPath(root, kData1)));
  auto st = ReadOutboxStatus(root);
  ASSERT_OK(st);
  for (const OutboxEntry& e : st->entries) EXPECT_EQ(e.state, "imported") << e.episode_index;
  EXPECT_EQ(server.posts, 2) << "the second run sends nothing again";
}

// Transient answers never end a job: with a 503 and Retry-After: 1 the run waits at least
// that long (the full-jitter wait alone would be under 0.05 s here), then the job lands.
TEST_F(UploadClientTest, OutboxHonoursRetryAfterAndRetriesTransients) {
  FakeServer server;
  server.fail_posts = 2;
  server.fail_status = 503;
  server.retry_after = "1";
  const std::string root = Fresh("outbox_retry");
  const auto t0 = std::chrono::steady_clock::now();
  auto r = DrainOutbox(root, {1}, OutboxOf(Options(server.url())));
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_OK(r);
  ASSERT_OK((*r)[0].outcome);
  EXPECT_GE(waited, 2.0) << "two Retry-After: 1 answers";
  EXPECT_EQ(server.posts, 3);
  auto st = ReadOutboxStatus(root);
  ASSERT_OK(st);
  EXPECT_EQ(st->entries[0].state, "confirmed");
  EXPECT_EQ(st->entries[0].attempts, 2);
  EXPECT_EQ(st->counters["retries"], 2);
}

// One uploader per outbox: a second one is refused, naming the first's pid.
TEST_F(UploadClientTest, OutboxHasOneUploaderAtATime) {
  FakeServer server;
  const std::string root = Fresh("outbox_lock");
  std::atomic<bool> release{false};
  OutboxOptions first = OutboxOf(Options(server.url()));
  first.watch = true;
  first.rescan_s = 60;
  first.should_stop = [&] { return release.load(); };
  std::thread t([&] { (void)DrainOutbox(root, {}, first); });
  for (int i = 0; i < 100 && !stdfs::exists(JoinPath(root, "meta/.upload-outbox/lock")); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto second = DrainOutbox(root, {}, OutboxOf(Options(server.url())));
  release = true;
  t.join();
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kAlreadyExists);
  EXPECT_THAT(second.status().message(), ::testing::HasSubstr("another uploader (pid " + std::to_string(::getpid())))
      << second.status().ToString();
}

}  // namespace
}  // namespace reel
