// The upload client reads at most kMaxAnswerBytes of an answer (http.h), against a raw
// socket "server" on loopback that announces a 2 GB body and sends as much as the
// client will take.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "upload/http.h"
#include "upload/protocol.h"
#include "testing/status_matchers.h"

namespace reel::upload {
namespace {

// Accepts one connection, reads the request head, answers `head` and then streams up to
// `body_bytes` of 'x' until the client stops reading. sent() is what the kernel took.
class HugeAnswerServer {
 public:
  HugeAnswerServer(std::string head, uint64_t body_bytes) : head_(std::move(head)), body_bytes_(body_bytes) {
    listen_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(listen_, 4);
    socklen_t len = sizeof a;
    ::getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~HugeAnswerServer() {
    ::shutdown(listen_, SHUT_RDWR);
    thread_.join();
    ::close(listen_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  uint64_t sent() const { return sent_; }

 private:
  void Serve() {
    const int c = ::accept(listen_, nullptr, nullptr);
    if (c < 0) return;
    timeval tv{10, 0};
    ::setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string request;
    char buf[4096];
    while (request.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) break;
      request.append(buf, static_cast<size_t>(n));
    }
    (void)!::send(c, head_.data(), head_.size(), MSG_NOSIGNAL);
    const std::string block(1 << 16, 'x');
    while (sent_ < body_bytes_) {
      const ssize_t n = ::send(c, block.data(), block.size(), MSG_NOSIGNAL);
      if (n <= 0) break;  // the client hung up (or stopped reading for 10 s)
      sent_ += static_cast<uint64_t>(n);
    }
    ::close(c);
  }

  std::string head_;
  uint64_t body_bytes_;
  int listen_ = -1;
  int port_ = 0;
  std::atomic<uint64_t> sent_{0};
  std::thread thread_;
};

TEST(UploadAnswerLimit, ErrorBodyIsReadOnlyUpToTheLimit) {
  HugeAnswerServer server(
      "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nX-Reel-Rule: import.io\r\n"
      "Content-Length: 2000000000\r\n\r\n",
      256ull << 20);
  HttpOptions options;
  options.server = server.url();
  options.connect_timeout_s = 5;
  options.io_timeout_s = 20;
  auto http = HttpSession::Open(options);
  ASSERT_OK(http);
  const auto t0 = std::chrono::steady_clock::now();
  const HttpResponse r = (*http)->Send("GET", "/api/v1/sessions?name=task_a", {});
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.status, 500) << r.transport_error;
  EXPECT_TRUE(r.body_cut);
  EXPECT_EQ(r.body.size(), kMaxAnswerBytes);
  EXPECT_LT(s, 15) << "the client kept reading";
  // What the client took off the socket, plus what the kernel buffers hold: far from
  // the 256 MiB the server would have sent to a client that reads everything.
  EXPECT_LT(server.sent(), 64ull << 20);
  const Failure f = JudgeAnswer(r, "GET /api/v1/sessions");
  EXPECT_TRUE(f.retryable);
  const std::string msg = f.status.message();
  EXPECT_THAT(msg, ::testing::HasSubstr("answered 500")) << msg;
  EXPECT_THAT(msg, ::testing::HasSubstr("rule import.io")) << msg;
  EXPECT_THAT(msg, ::testing::HasSubstr("not read")) << msg;
  EXPECT_LT(msg.size(), 1000u) << "the message carries the body";
}

TEST(UploadAnswerLimit, SmallAnswersAreWhole) {
  const std::string body = R"({"detail":"no","rule":"auth.project","request_id":"r-1"})";
  HugeAnswerServer server("HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n" + body,
                          0);
  HttpOptions options;
  options.server = server.url();
  options.connect_timeout_s = 5;
  options.io_timeout_s = 20;
  auto http = HttpSession::Open(options);
  ASSERT_OK(http);
  const HttpResponse r = (*http)->Send("GET", "/api/v1/sessions?name=task_a", {});
  EXPECT_EQ(r.status, 403);
  EXPECT_FALSE(r.body_cut);
  EXPECT_EQ(r.body, body);
  const Failure f = JudgeAnswer(r, "GET");
  EXPECT_FALSE(f.retryable);
  EXPECT_THAT(f.status.message(), ::testing::HasSubstr("(rule auth.project): no [request_id r-1]"))
      << f.status.message();
}

}  // namespace
}  // namespace reel::upload
