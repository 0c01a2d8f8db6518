#pragma once
// A loopback HTTP server that answers every request with bytes a test wrote out whole (status
// line, headers, body: a broken or hostile server is as easy to write as a correct one), from a
// thread of its own, so the test's thread can make a blocking request to it. One connection at a
// time; the request (headers and a Content-Length body) is read and kept before the answer is
// written; the connection is closed after it, or held open for holdOpenMs first (a server that
// stops sending without closing).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace pagedchat::test {

class CannedHttpServer {
 public:
  explicit CannedHttpServer(std::string answer, int holdOpenMs = 0)
      : CannedHttpServer([answer = std::move(answer)](const std::string&) { return answer; }, holdOpenMs) {}
  // The answer written for each request from the request's own bytes (a server that answers
  // some requests and refuses others).
  explicit CannedHttpServer(std::function<std::string(const std::string& request)> answerFor, int holdOpenMs = 0)
      : answer_for_(std::move(answerFor)), hold_ms_(holdOpenMs) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd_, 8);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~CannedHttpServer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  CannedHttpServer(const CannedHttpServer&) = delete;
  CannedHttpServer& operator=(const CannedHttpServer&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<std::string> requests() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_;
  }

  // An HTTP/1.1 answer: status, a content type, the body, Connection: close.
  static std::string answer(int status, const std::string& type, const std::string& body, const std::string& extraHeaders = {}) {
    return "HTTP/1.1 " + std::to_string(status) + " Canned\r\nContent-Type: " + type + "\r\n" + extraHeaders +
           "Connection: close\r\n\r\n" + body;
  }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      std::string request = readRequest(c);
      const std::string answer = answer_for_(request);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        requests_.push_back(std::move(request));
      }
      for (size_t sent = 0; sent < answer.size();) {
        const ssize_t n = ::send(c, answer.data() + sent, answer.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) break;
        sent += static_cast<size_t>(n);
      }
      for (int waited = 0; waited < hold_ms_ && !stop_; waited += 20) ::usleep(20000);
      ::close(c);
    }
  }

  std::string readRequest(int c) {
    std::string r;
    char buf[4096];
    size_t want = std::string::npos;  // the whole request's size, once its headers are in
    while (r.size() < want) {
      pollfd p{c, POLLIN, 0};
      if (::poll(&p, 1, 2000) <= 0) break;
      const ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) break;
      r.append(buf, static_cast<size_t>(n));
      const size_t end = r.find("\r\n\r\n");
      if (want == std::string::npos && end != std::string::npos) {
        size_t length = 0;
        const size_t at = r.find("Content-Length: ");
        if (at != std::string::npos && at < end) length = std::stoul(r.substr(at + 16));
        want = end + 4 + length;
      }
    }
    return r;
  }

  std::function<std::string(const std::string&)> answer_for_;
  int hold_ms_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

}  // namespace pagedchat::test
