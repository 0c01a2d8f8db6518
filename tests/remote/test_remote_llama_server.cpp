// The remote client against llama.cpp's own llama-server on loopback (built by
// installer/build-llama-server.sh into ~/.cache/pagedchat/llama.cpp, never the repo; this suite
// skips, saying so, where it is not built): a reply streams with its usage, Stop ends it, three
// samples come from a server that takes no n, a wrong key is 401, and a server killed midway is
// a cut stream with its text kept.

#include <QtTest>

#include <atomic>

#include "remote/openai_client.h"
#include "support/remote_test_servers.h"
#include "support/test_env.h"

using namespace pagedchat::remote;

using pagedchat::test::ask;
using pagedchat::test::kLongStoryAsk;
using pagedchat::test::LlamaServer;

class TestRemoteLlamaServer : public QObject {
  Q_OBJECT
  QString m_binary, m_model;

 private slots:
  void initTestCase() {
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    m_model = QString::fromStdString(model);
    m_binary = qEnvironmentVariable("PAGEDCHAT_LLAMA_SERVER");
    if (m_binary.isEmpty() || !QFileInfo(m_binary).isExecutable())
      QSKIP(qPrintable(QStringLiteral("llama-server is not built at '%1' (installer/build-llama-server.sh builds it from the "
                                      "llama-cpp-python sdist): the llama.cpp peer is not tested here")
                           .arg(m_binary)));
  }

  void aReplyStreamsStopsAndComesInSamples() {
    LlamaServer server(m_binary, m_model);
    QVERIFY(!server.url.empty());
    const RemoteModels models = list_models({server.url, {}});
    QVERIFY2(models.error.ok() && !models.ids.empty(), models.error.sentence().c_str());

    std::string streamed;
    const RemoteChatResult r = stream_chat({server.url, {}}, ask("Name three rivers of Europe.", 24),
                                           [&](const RemoteDelta& d) { streamed += d.text; });
    QVERIFY2(r.error.ok(), r.error.sentence().c_str());
    QVERIFY(!r.texts.at(0).empty());
    QCOMPARE(streamed, r.texts.at(0));
    QCOMPARE(r.finish_reasons.at(0), std::string("length"));
    QCOMPARE(r.usage.completion_tokens, 24);
    QVERIFY(r.usage.prompt_tokens > 0);

    std::atomic<bool> stop{false};
    int deltas = 0;
    const RemoteChatResult stopped = stream_chat({server.url, {}}, ask(kLongStoryAsk, 400), [&](const RemoteDelta&) {
      if (++deltas == 3) stop = true;
    }, &stop);
    QCOMPARE(stopped.error.kind, RemoteErrorKind::stopped);
    QVERIFY(stopped.chunks.at(0) >= 3 && stopped.chunks.at(0) < 400);

    RemoteChatRequest three = ask("Give a name for a friendly robot.", 12);
    three.n = 3;
    three.temperature = 0.9;
    three.seed = 5;
    const RemoteChatResult samples = stream_chat({server.url, {}}, three);
    QVERIFY2(samples.error.ok(), samples.error.sentence().c_str());
    QCOMPARE(samples.texts.size(), size_t(3));
    for (const std::string& t : samples.texts) QVERIFY(!t.empty());
  }

  void aKeyIsAskedForAndAKilledServerCutsTheStream() {
    LlamaServer server(m_binary, m_model, {"--api-key", "s3cret"});
    QVERIFY(!server.url.empty());
    const RemoteChatResult none = stream_chat({server.url, "wrong"}, ask("Hi", 4));
    QCOMPARE(none.error.kind, RemoteErrorKind::unauthorized);
    std::string seen;
    int deltas = 0;
    const RemoteChatResult cut = stream_chat({server.url, "s3cret"}, ask(kLongStoryAsk, 400), [&](const RemoteDelta& d) {
      seen += d.text;
      if (++deltas == 5) server.process.kill();
    });
    QCOMPARE(cut.error.kind, RemoteErrorKind::stream_cut);
    QCOMPARE(cut.texts.at(0), seen);
  }
};

QTEST_APPLESS_MAIN(TestRemoteLlamaServer)
#include "test_remote_llama_server.moc"
