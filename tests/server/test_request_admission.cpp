// Who may drive the local API (server/http/request_admission.h): Host names against DNS rebinding,
// browser Origins against cross-origin pages, JSON-only POSTs; each refusal's status and code.
#include <QtTest>

#include "server/http/request_admission.h"

class TestRequestAdmission : public QObject {
  Q_OBJECT

  static int status(const std::optional<ApiError>& e) { return e ? e->status : 0; }

 private slots:
  void hosts_data() {
    QTest::addColumn<QByteArray>("host");
    QTest::addColumn<QStringList>("allowed");
    QTest::addColumn<int>("expected");  // 0: admitted
    QTest::newRow("loopback with port") << QByteArray("127.0.0.1:8080") << QStringList{} << 0;
    QTest::newRow("localhost") << QByteArray("localhost:8080") << QStringList{} << 0;
    QTest::newRow("LOCALHOST") << QByteArray("LOCALHOST") << QStringList{} << 0;
    QTest::newRow("a .localhost name") << QByteArray("app.localhost:1") << QStringList{} << 0;
    QTest::newRow("ipv6 loopback") << QByteArray("[::1]:8080") << QStringList{} << 0;
    QTest::newRow("a LAN address") << QByteArray("192.168.1.20:8080") << QStringList{} << 0;
    QTest::newRow("a rebinding page") << QByteArray("evil.example:8080") << QStringList{} << 403;
    QTest::newRow("localhost as a suffix") << QByteArray("localhost.evil.example") << QStringList{} << 403;
    QTest::newRow("a name allowed") << QByteArray("gpu-box.lan:8080") << QStringList{"gpu-box.lan"} << 0;
    QTest::newRow("another name") << QByteArray("other.lan") << QStringList{"gpu-box.lan"} << 403;
    QTest::newRow("any name") << QByteArray("other.lan") << QStringList{"*"} << 0;
    QTest::newRow("no Host") << QByteArray() << QStringList{} << 400;
  }
  void hosts() {
    QFETCH(QByteArray, host);
    QFETCH(QStringList, allowed);
    QFETCH(int, expected);
    const auto refusal = checkHost(host, AdmissionPolicy{allowed, {}});
    QCOMPARE(status(refusal), expected);
    if (expected == 403) {
      QCOMPARE(refusal->code, QString("host_not_allowed"));
      QVERIFY2(refusal->message.contains("--allowed-hosts"), qPrintable(refusal->message));
    }
  }

  void origins() {
    const AdmissionPolicy none, some{{}, {"http://localhost:3000"}}, any{{}, {"*"}};
    QCOMPARE(status(checkOrigin("", none)), 0);  // not a browser
    QCOMPARE(status(checkOrigin("https://evil.example", none)), 403);
    QCOMPARE(checkOrigin("https://evil.example", none)->code, QString("origin_not_allowed"));
    QCOMPARE(status(checkOrigin("null", none)), 403);  // a sandboxed page or a file
    QCOMPARE(status(checkOrigin("http://localhost:3000", some)), 0);
    QCOMPARE(status(checkOrigin("http://localhost:3001", some)), 403);
    QCOMPARE(status(checkOrigin("https://anything.example", any)), 0);
  }

  void contentTypes() {
    QCOMPARE(status(checkJsonContentType("application/json")), 0);
    QCOMPARE(status(checkJsonContentType("Application/JSON; charset=utf-8")), 0);
    QCOMPARE(status(checkJsonContentType("text/plain")), 415);  // what a page may POST without a preflight
    QCOMPARE(status(checkJsonContentType("application/x-www-form-urlencoded")), 415);
    QCOMPARE(status(checkJsonContentType("")), 415);
    QCOMPARE(checkJsonContentType("text/plain")->code, QString("unsupported_media_type"));
  }

  void preflightHeaders() {
    const auto h = corsHeaders("http://localhost:3000", true);
    QVERIFY(h.contains(qMakePair(QByteArray("Access-Control-Allow-Origin"), QByteArray("http://localhost:3000"))));
    QVERIFY(h.contains(qMakePair(QByteArray("Access-Control-Allow-Headers"), QByteArray("Authorization, Content-Type"))));
    QCOMPARE(corsHeaders("http://localhost:3000", false).size(), 2);  // the origin and Vary
  }
};

QTEST_APPLESS_MAIN(TestRequestAdmission)
#include "test_request_admission.moc"
