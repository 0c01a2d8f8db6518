// The request-head checks made ahead of Qt's parser (server/http/request_framing.h): where a head
// ends, and each framing refused or accepted, with its status and code.
#include <QtTest>

#include "server/http/request_framing.h"

class TestRequestFraming : public QObject {
  Q_OBJECT

 private slots:
  void head_end() {
    QCOMPARE(headEnd("GET / HTTP/1.1\r\nHost: x\r\n\r\nbody"), qsizetype(27));
    QCOMPARE(headEnd("GET / HTTP/1.1\r\nHost: x\r\n"), qsizetype(-1));
    QCOMPARE(headEnd(""), qsizetype(-1));
  }

  void heads_data() {
    QTest::addColumn<QByteArray>("headers");  // after the request line, before the blank line
    QTest::addColumn<int>("status");          // 0: accepted
    QTest::addColumn<QString>("code");
    QTest::addColumn<qint64>("length");
    QTest::addColumn<bool>("chunked");
    QTest::addColumn<bool>("expectContinue");
    QTest::newRow("no body") << QByteArray("Host: x\r\n") << 0 << QString() << qint64(0) << false << false;
    QTest::newRow("a length") << QByteArray("Content-Length: 42\r\n") << 0 << QString() << qint64(42) << false << false;
    QTest::newRow("case and spaces") << QByteArray("content-LENGTH:   42  \r\n") << 0 << QString() << qint64(42) << false << false;
    QTest::newRow("the same length twice") << QByteArray("Content-Length: 7\r\nContent-Length: 7\r\n") << 0 << QString() << qint64(7)
                                           << false << false;
    QTest::newRow("two lengths") << QByteArray("Content-Length: 7\r\nContent-Length: 8\r\n") << 400 << "bad_content_length" << qint64(0)
                                 << false << false;
    QTest::newRow("a negative length") << QByteArray("Content-Length: -1\r\n") << 400 << "bad_content_length" << qint64(0) << false << false;
    QTest::newRow("a list") << QByteArray("Content-Length: 7, 7\r\n") << 400 << "bad_content_length" << qint64(0) << false << false;
    QTest::newRow("not a number") << QByteArray("Content-Length: 1e3\r\n") << 400 << "bad_content_length" << qint64(0) << false << false;
    QTest::newRow("an empty length") << QByteArray("Content-Length:\r\n") << 400 << "bad_content_length" << qint64(0) << false << false;
    QTest::newRow("past 64 bits") << QByteArray("Content-Length: 99999999999999999999999\r\n") << 400 << "bad_content_length" << qint64(0)
                                  << false << false;
    QTest::newRow("10^14 declared") << QByteArray("Content-Length: 100000000000000\r\n") << 413 << "request_too_large" << qint64(0)
                                    << false << false;
    QTest::newRow("the limit itself") << QByteArray("Content-Length: 1000\r\n") << 0 << QString() << qint64(1000) << false << false;
    QTest::newRow("one past the limit") << QByteArray("Content-Length: 1001\r\n") << 413 << "request_too_large" << qint64(0) << false << false;
    QTest::newRow("chunked") << QByteArray("Transfer-Encoding: chunked\r\n") << 0 << QString() << qint64(0) << true << false;
    QTest::newRow("length and chunked") << QByteArray("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n") << 400 << "bad_framing" << qint64(0)
                                        << false << false;
    QTest::newRow("chunked and length") << QByteArray("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n") << 400 << "bad_framing" << qint64(0)
                                        << false << false;
    QTest::newRow("100-continue") << QByteArray("Content-Length: 5\r\nExpect: 100-Continue\r\n") << 0 << QString() << qint64(5) << false << true;
    QTest::newRow("another expectation") << QByteArray("Expect: teapot\r\n") << 417 << "expectation_failed" << qint64(0) << false << false;
    QTest::newRow("a line without a colon") << QByteArray("garbage\r\nContent-Length: 3\r\n") << 0 << QString() << qint64(3) << false << false;
  }
  void heads() {
    QFETCH(QByteArray, headers);
    QFETCH(int, status);
    QFETCH(QString, code);
    QFETCH(qint64, length);
    QFETCH(bool, chunked);
    QFETCH(bool, expectContinue);
    RequestHead head;
    const QByteArray bytes = "POST /v1/chat/completions HTTP/1.1\r\n" + headers + "\r\n";
    const std::optional<ApiError> error = checkRequestHead(bytes, 1000, head);
    QCOMPARE(error ? error->status : 0, status);
    if (error) {
      QCOMPARE(error->code, code);
      return;
    }
    QCOMPARE(head.contentLength, length);
    QCOMPARE(head.chunked, chunked);
    QCOMPARE(head.expectContinue, expectContinue);
  }

  // Whether the connection ends with the response, and whether the client reads chunks.
  void connectionNeeds_data() {
    QTest::addColumn<QByteArray>("head");
    QTest::addColumn<bool>("closeAfter");
    QTest::addColumn<bool>("http10");
    QTest::newRow("1.1") << QByteArray("GET / HTTP/1.1\r\nHost: x\r\n\r\n") << false << false;
    QTest::newRow("1.1 close") << QByteArray("GET / HTTP/1.1\r\nConnection: Close\r\n\r\n") << true << false;
    QTest::newRow("1.1 a list with close") << QByteArray("GET / HTTP/1.1\r\nConnection: upgrade, close\r\n\r\n") << true << false;
    QTest::newRow("1.0") << QByteArray("GET / HTTP/1.0\r\n\r\n") << true << true;
    QTest::newRow("1.0 keep-alive") << QByteArray("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n") << false << true;
  }
  void connectionNeeds() {
    QFETCH(QByteArray, head);
    QFETCH(bool, closeAfter);
    QFETCH(bool, http10);
    RequestHead out;
    QVERIFY(!checkRequestHead(head, 1000, out));
    QCOMPARE(out.closeAfter, closeAfter);
    QCOMPARE(out.http10, http10);
  }
};

QTEST_APPLESS_MAIN(TestRequestFraming)
#include "test_request_framing.moc"
