#pragma once
// Real OpenAI-compatible servers on loopback for the remote-engine suites: our own
// pagedchat-server ($PAGEDCHAT_SERVER) and llama.cpp's llama-server ($PAGEDCHAT_LLAMA_SERVER),
// each started on a free port with the test model, ready once it answers a one-token chat,
// killed with the object. url stays empty when one did not start (the log says why).

#include <QProcess>
#include <QRegularExpression>
#include <QThread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "remote/openai_client.h"
#include "remote/pool_client.h"
#include "support/free_port.h"

namespace pagedchat::test {

inline remote::RemoteChatRequest ask(const std::string& text, int maxTokens) {
  remote::RemoteChatRequest r;
  r.messages = {{"user", text}};
  r.max_tokens = maxTokens;
  return r;
}

// A request whose reply runs long: something to stop, or to kill the server under.
inline constexpr const char* kLongStoryAsk = "Tell me a long story about a dragon who learns to bake bread.";

class TestServer {
 public:
  TestServer() = default;
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;
  ~TestServer() {
    process.kill();
    process.waitForFinished(5000);
  }
  QProcess process;
  std::string url;
  QByteArray log;

 protected:
  // Ready: a one-token chat goes through (the model is loaded; the key, if any, is the test's).
  void waitAnswering(const std::string& base, const std::string& key) {
    remote::RemoteChatRequest probe = ask("Hi", 1);
    for (int i = 0; i < 600 && process.state() != QProcess::NotRunning; ++i) {
      if (remote::stream_chat({base, key}, probe).error.ok()) {
        url = base;
        return;
      }
      QThread::msleep(100);
    }
    log += process.readAll();
    qWarning("the server did not start: %s", log.constData());
  }
  static std::string keyIn(const QStringList& args) {
    const int at = args.indexOf(QStringLiteral("--api-key"));
    return at >= 0 && at + 1 < args.size() ? args[at + 1].toStdString() : std::string();
  }
};

// pagedchat-server, its port read from its "listening on" line.
class PagedchatServer : public TestServer {
 public:
  explicit PagedchatServer(const QString& model, const QStringList& extra = {}) {
    process.setProcessChannelMode(QProcess::MergedChannels);
    process.start(qEnvironmentVariable("PAGEDCHAT_SERVER"), QStringList{"--model", model, "--port", "0"} + extra);
    const QRegularExpression listening(QStringLiteral("listening on http://[^:]+:(\\d+)"));
    for (int i = 0; i < 600 && process.state() != QProcess::NotRunning; ++i) {
      process.waitForReadyRead(100);
      log += process.readAll();
      if (const QRegularExpressionMatch m = listening.match(QString::fromUtf8(log)); m.hasMatch()) {
        waitAnswering("http://127.0.0.1:" + m.captured(1).toStdString(), keyIn(extra));
        return;
      }
    }
    qWarning("pagedchat-server did not start: %s", log.constData());
  }
};

// llama-server on a port found free just before (it takes no port 0).
class LlamaServer : public TestServer {
 public:
  LlamaServer(const QString& binary, const QString& model, const QStringList& extra = {}) {
    const int port = freePort();
    process.setProcessChannelMode(QProcess::MergedChannels);
    process.start(binary, QStringList{"-m", model, "--host", "127.0.0.1", "--port", QString::number(port), "-c", "2048", "-np", "4",
                                      "-t", "2"} + extra);
    waitAnswering("http://127.0.0.1:" + std::to_string(port), keyIn(extra));
  }

 private:
  static int freePort() { return free_loopback_port(); }
};

}  // namespace pagedchat::test
