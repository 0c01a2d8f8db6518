// The app's "Serve API" toggle: the OpenAI-compatible API runs on the app's own engine. An API
// request reuses the KV blocks a chat computed (cached_tokens), shows in the pool frames as
// "API request N" while it runs, and /metrics counts the chats' blocks; switching the server
// off aborts a streaming request and frees its blocks while the chats go on; a taken port is
// reported; the setting comes back after a restart.

#include <QtTest>

#include <QAction>
#include <QLabel>
#include <QPlainTextEdit>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTcpServer>

#include "support/test_env.h"
#include "support/window_driver.h"
#include "appcore/chat/chat_database.h"
#include "appcore/session/pool_control.h"
#include "ui/shell/api_server_switch.h"
#include "ui/shell/main_window.h"

#ifdef PAGEDCHAT_HAVE_SERVER
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#endif

namespace {
// Long enough to fill several KV blocks of 16 tokens.
const QString kSystemPrompt = QStringLiteral(
    "You are a careful assistant for a small bakery. You answer questions about bread, pastries, opening hours and "
    "orders. Keep every answer short, friendly and precise, and say so when you do not know something. The bakery opens "
    "at seven in the morning and closes at six in the evening, every day but Monday.");
}  // namespace

class TestAppApiServer : public QObject {
  Q_OBJECT
  QString m_model;

#ifdef PAGEDCHAT_HAVE_SERVER
  QNetworkAccessManager m_net;

  void loaded(MainWindow& w) { pagedchat::test::loadAndWait(w, m_model); }
  QString startApi(MainWindow& w) {
    QSignalSpy changed(w.apiServer(), &ApiServerSwitch::changed);
    w.apiServer()->setPort(0);
    w.apiServer()->setEnabled(true);
    if (!changed.wait(10000)) return QString();
    return changed.last().at(0).toString();
  }
  void sendAndWait(MainWindow& w, const QString& text) { pagedchat::test::sendAndWait(w, text); }

  QNetworkReply* post(const QString& url, const QJsonObject& body) {
    QNetworkRequest request{QUrl(url + QStringLiteral("/chat/completions"))};
    request.setHeader(QNetworkRequest::ContentTypeHeader, QStringLiteral("application/json"));
    return m_net.post(request, QJsonDocument(body).toJson());
  }
  static QJsonObject chatBody(const QString& modelId, const QString& question, int maxTokens, bool stream) {
    return QJsonObject{{"model", modelId},
                       {"messages", QJsonArray{QJsonObject{{"role", "system"}, {"content", kSystemPrompt}},
                                               QJsonObject{{"role", "user"}, {"content", question}}}},
                       {"max_tokens", maxTokens},
                       {"temperature", 0},
                       {"stream", stream}};
  }
  QByteArray get(const QString& url) {
    QNetworkReply* reply = m_net.get(QNetworkRequest{QUrl(url)});
    QSignalSpy finished(reply, &QNetworkReply::finished);
    if (!reply->isFinished() && !finished.wait(30000)) return {};
    reply->deleteLater();
    return reply->readAll();
  }
  static double metric(const QByteArray& text, const QByteArray& name) {
    for (const QByteArray& line : text.split('\n'))
      if (line.startsWith(name + ' ')) return line.mid(name.size() + 1).toDouble();
    return -1;
  }
#endif

 private slots:
  void initTestCase() {
#ifndef PAGEDCHAT_HAVE_SERVER
    QSKIP("built without the server (Qt 6 HttpServer)");
#endif
    pagedchat::test::useFreshDataFolder();
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    m_model = QString::fromStdString(model);
  }

#ifdef PAGEDCHAT_HAVE_SERVER
  void apiRequestsShareTheChatsEngineAndPool() {
    AppServices services;
    MainWindow w(services);
    w.show();
    loaded(w);
    w.findChild<QPlainTextEdit*>(QStringLiteral("sharedSystemPrompt"))->setPlainText(kSystemPrompt);
    sendAndWait(w, QStringLiteral("When do you open?"));  // the chat now holds the system prompt's blocks
    const QString base = startApi(w);
    QVERIFY(base.startsWith(QLatin1String("http://127.0.0.1:")));
    QCOMPARE(w.apiServer()->url(), base);
    QCOMPARE(w.findChild<QLabel*>(QStringLiteral("apiServerUrl"))->text(), tr("API: %1").arg(base));

    // /v1/models names the app's model by its file name.
    const QJsonObject models = QJsonDocument::fromJson(get(base + QStringLiteral("/models"))).object();
    const QString modelId = models[QStringLiteral("data")].toArray().at(0).toObject()[QStringLiteral("id")].toString();
    QCOMPARE(modelId, QFileInfo(m_model).completeBaseName());

    // While it runs, the pool frames label its sequence "API request N".
    bool sawApiSequence = false;
    connect(&w.session().pool(), &PoolControl::localFrame, this, [&](const PoolFrame& f) {
      for (const PoolFrameSequence& s : f.sequences)
        if (s.chatTitle.startsWith(QLatin1String("API request"))) sawApiSequence = true;
    });
    QNetworkReply* reply = post(base, chatBody(modelId, QStringLiteral("Do you sell croissants?"), 24, false));
    QSignalSpy finished(reply, &QNetworkReply::finished);
    QVERIFY(finished.wait(120000));
    QCOMPARE(reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt(), 200);
    const QJsonObject answer = QJsonDocument::fromJson(reply->readAll()).object();
    reply->deleteLater();
    QVERIFY(!answer[QStringLiteral("choices")].toArray().at(0).toObject()[QStringLiteral("message")].toObject()
                 [QStringLiteral("content")].toString().isEmpty());
    QVERIFY(sawApiSequence);

    // The system prompt's full blocks came from the chat's KV: every full block before the
    // first token where the two prompts differ (the user message) was a prefix-cache hit.
    const QJsonObject usage = answer[QStringLiteral("usage")].toObject();
    const int cached = usage[QStringLiteral("prompt_tokens_details")].toObject()[QStringLiteral("cached_tokens")].toInt();
    const int promptTokens = usage[QStringLiteral("prompt_tokens")].toInt();
    QVERIFY2(cached >= 64 && cached % 16 == 0 && cached < promptTokens,
             qPrintable(QStringLiteral("cached %1 of %2 prompt tokens").arg(cached).arg(promptTokens)));

    // /metrics reads the app's pool: the chat's parked sequence and its blocks are there.
    const QByteArray metrics = get(base.chopped(3) + QStringLiteral("/metrics"));
    QCOMPARE(metric(metrics, "pagedchat_http_requests_active"), 0.0);
    QCOMPARE(metric(metrics, "pagedchat_sequences_parked"), 1.0);
    QVERIFY2(metric(metrics, "pagedchat_kv_blocks_used") >= 5, metrics.constData());
    QCOMPARE(metric(metrics, "pagedchat_kv_blocks_total"), 4.0 * (2048 / 16));

    // The request log (the API button's menu): each request as it was answered, the
    // completion with the tokens its usage gave, in the order they came.
    w.findChild<QAction*>(QStringLiteral("apiRequestLogAction"))->trigger();
    auto* table = w.findChild<QTableWidget*>(QStringLiteral("apiRequestTable"));
    QVERIFY(table && table->isVisible());
    const auto row = [&](int r) {
      QStringList cells;
      for (int c = 1; c < table->columnCount() - 1; ++c) cells << table->item(r, c)->text();
      return cells;
    };
    QCOMPARE(table->rowCount(), 3);
    QCOMPARE(row(0), (QStringList{QStringLiteral("GET /v1/models"), QStringLiteral("200"), QString()}));
    QCOMPARE(row(1), (QStringList{QStringLiteral("POST /v1/chat/completions"), QStringLiteral("200"),
                                  QStringLiteral("%1 in → %2 out (%3 cached)").arg(promptTokens).arg(usage[QStringLiteral("completion_tokens")].toInt()).arg(cached)}));
    QCOMPARE(row(2), (QStringList{QStringLiteral("GET /metrics"), QStringLiteral("200"), QString()}));
    QVERIFY(table->item(1, 4)->text().endsWith(QStringLiteral(" ms")));
    // A request that fails is listed with its status as it happens.
    QNetworkReply* wrong = post(base, chatBody(QStringLiteral("no-such-model"), QStringLiteral("Hi"), 4, false));
    QSignalSpy wrongDone(wrong, &QNetworkReply::finished);
    QVERIFY(wrongDone.wait(30000));
    wrong->deleteLater();
    QTRY_COMPARE(table->rowCount(), 4);
    QCOMPARE(row(3).mid(0, 2), (QStringList{QStringLiteral("POST /v1/chat/completions"), QStringLiteral("404")}));
  }

  void turningItOffAbortsItsRequestsAndTheChatsGoOn() {
    AppServices services;
    MainWindow w(services);
    w.show();
    loaded(w);
    const QString base = startApi(w);
    QVERIFY(!base.isEmpty());
    const QString modelId = QFileInfo(m_model).completeBaseName();
    QNetworkReply* reply = post(base, chatBody(modelId, QStringLiteral("Tell me a long story about bread."), 400, true));
    QSignalSpy readable(reply, &QNetworkReply::readyRead);
    QVERIFY(readable.wait(60000));  // streaming has begun

    int apiSequences = -1;
    connect(&w.session().pool(), &PoolControl::localFrame, this, [&](const PoolFrame& f) {
      apiSequences = 0;
      for (const PoolFrameSequence& s : f.sequences) apiSequences += s.chatTitle.startsWith(QLatin1String("API request"));
    });
    QSignalSpy changed(w.apiServer(), &ApiServerSwitch::changed);
    w.apiServer()->setEnabled(false);
    QCOMPARE(changed.size(), 1);
    QVERIFY(changed.at(0).at(0).toString().isEmpty());
    QVERIFY(w.apiServer()->url().isEmpty());
    QTRY_VERIFY_WITH_TIMEOUT(reply->isFinished(), 10000);
    reply->deleteLater();
    // The aborted request's blocks are freed; a chat still gets its reply afterwards.
    w.newChat();
    sendAndWait(w, QStringLiteral("Hello!"));
    QTRY_COMPARE_WITH_TIMEOUT(apiSequences, 0, 5000);
    const ChatRecord* chat = w.chat(w.currentChat());
    QVERIFY(chat && chat->messages.size() == 2 && !chat->messages.last().content.isEmpty());
  }

  void aTakenPortIsReportedAndTheSettingIsRestored() {
    QTcpServer taken;
    QVERIFY(taken.listen(QHostAddress::LocalHost, 0));
    {
      AppServices services;
      MainWindow w(services);
      QSignalSpy changed(w.apiServer(), &ApiServerSwitch::changed);
      w.apiServer()->setPort(taken.serverPort());
      w.apiServer()->setEnabled(true);
      QVERIFY(changed.wait(10000));
      QVERIFY(changed.last().at(0).toString().isEmpty());
      QVERIFY(changed.last().at(1).toString().contains(QString::number(taken.serverPort())));
      QVERIFY(!w.findChild<QAction*>(QStringLiteral("serveApi"))->isChecked());
      // Turned on with a free port, it is on again at the next start.
      w.apiServer()->setPort(0);
      w.apiServer()->setEnabled(true);
      QVERIFY(changed.wait(10000));
      QVERIFY(!changed.last().at(0).toString().isEmpty());
    }
    AppServices servicesAgain;
    MainWindow again(servicesAgain);
    QTRY_VERIFY_WITH_TIMEOUT(!again.apiServer()->url().isEmpty(), 10000);
    QVERIFY(again.findChild<QAction*>(QStringLiteral("serveApi"))->isChecked());
    // Before a model is loaded the API says so (503), and does not fail otherwise.
    QVERIFY(get(again.apiServer()->url().chopped(3) + QStringLiteral("/health")).contains("loading"));
    again.apiServer()->setEnabled(false);
  }
#endif
};

QTEST_MAIN(TestAppApiServer)
#include "test_app_api_server.moc"
