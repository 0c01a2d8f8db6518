// One app per data folder, with the real app started a second time on the folder this suite
// holds: it shows the first one's window and leaves (exit 0, a line on stderr), or, when the
// holder does not answer, says so (stderr, and a box it then waits on) and opens nothing; a
// lock left by an app killed with SIGKILL is taken over, its socket too. The suite takes the
// app's own names and a throwaway XDG data folder, so both use the same chats.sqlite. And
// --help and --version answer with no display to open, holding nothing. And a SIGTERM lets the
// app's local API finish its streams ([DONE]) and leaves no lock (issue 46, item 6).

#include <csignal>

#include <QtTest>

#include <QLocalSocket>
#include <QLockFile>
#include <QProcess>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTemporaryDir>

#include "support/test_env.h"
#include "appcore/chat/chat_database.h"
#include "appcore/session/app_services.h"
#include "ui/shell/main_window.h"

class TestOneInstance : public QObject {
  Q_OBJECT
  QTemporaryDir m_share;  // XDG_DATA_HOME
  QString m_app;

  QString chatsPath() const { return ChatDatabase::defaultPath(); }
  QString folder() const { return QFileInfo(chatsPath()).absolutePath(); }

  // The app, started on the same data folder; call waitForStarted.
  void start(QProcess& app) {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    app.setProcessEnvironment(env);
    app.start(m_app, QStringList{});
  }
  // The app's stderr lines so far, trimmed.
  static QStringList lines(const QByteArray& out) {
    QStringList l;
    for (const QByteArray& line : out.split('\n'))
      if (!line.trimmed().isEmpty()) l << QString::fromUtf8(line.trimmed());
    return l;
  }

 private slots:
  void initTestCase() {
    PC_REQUIRE_ENV(app, "PAGEDCHAT_APP");
    m_app = QString::fromStdString(app);
    QVERIFY(m_share.isValid());
    qputenv("XDG_DATA_HOME", m_share.path().toLocal8Bit());
    QCoreApplication::setApplicationName(QStringLiteral("PagedChat"));
    QCoreApplication::setOrganizationName(QStringLiteral("PagedChat"));
    QVERIFY(chatsPath().startsWith(m_share.path()));
  }

  void helpAndVersionNeedNoDisplay() {
    for (const QString& arg : {QStringLiteral("--help"), QStringLiteral("--version")}) {
      QProcess app;
      QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
      env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("xcb"));  // the usual platform, with no display
      env.remove(QStringLiteral("DISPLAY"));
      env.remove(QStringLiteral("WAYLAND_DISPLAY"));
      app.setProcessEnvironment(env);
      app.start(m_app, {arg});
      QVERIFY(app.waitForFinished(30000));
      QCOMPARE(app.exitStatus(), QProcess::NormalExit);
      QCOMPARE(app.exitCode(), 0);
      const QString out = QString::fromUtf8(app.readAllStandardOutput());
      QVERIFY2(out.contains(arg == QLatin1String("--help") ? QStringLiteral("--model <path>") : QStringLiteral("PagedChat ")), qPrintable(out));
    }
  }

  void aSecondStartShowsTheFirstWindowAndLeaves() {
    AppServices services;
    MainWindow w(services);
    w.show();
    w.showMinimized();
    QVERIFY(w.windowState() & Qt::WindowMinimized);
    QSignalSpy raised(services.instanceLock(), &InstanceLock::raiseRequested);
    QProcess second;
    QSignalSpy finished(&second, &QProcess::finished);
    start(second);
    QVERIFY(second.waitForStarted());
    QVERIFY(finished.wait(30000));  // this event loop answers it meanwhile
    QCOMPARE(second.exitStatus(), QProcess::NormalExit);
    QCOMPARE(second.exitCode(), 0);
    const QStringList err = lines(second.readAllStandardError());
    QVERIFY2(err.contains(QStringLiteral("PagedChat is already running on the chats in %1: its window was brought to the front.")
                              .arg(folder())),
             qPrintable(err.join(QLatin1Char('\n'))));
    QCOMPARE(raised.size(), 1);
    QVERIFY(!(w.windowState() & Qt::WindowMinimized));
    QVERIFY(w.isVisible());
    QCOMPARE(ChatDatabase(chatsPath()).loadChats().size(), 1);  // the first's one new chat, nothing of the second's
  }

  // Held by something that does not answer (here a bare lock of this process): AppServices
  // refuses to open the chats, and the app says why and opens no window.
  void aHolderThatDoesNotAnswerIsSaidPlainly() {
    QLockFile lock(chatsPath() + QStringLiteral(".lock"));
    QVERIFY(lock.tryLock(0));
    try {
      AppServices services;
      QFAIL("opened chats another app holds");
    } catch (const InstanceLock::Held& held) {
      QCOMPARE(held.folder, folder());
      QVERIFY(!held.raisedOther);
      QCOMPARE(QString::fromStdString(held.what()), QStringLiteral("Another PagedChat holds the chats in %1").arg(folder()));
    }

    QProcess second;
    start(second);
    QVERIFY(second.waitForStarted());
    const QString said = QStringLiteral("Another PagedChat holds the chats in %1 and does not answer. Close it, then start "
                                        "PagedChat again.").arg(folder());
    QByteArray err;
    QTRY_VERIFY_WITH_TIMEOUT((err += second.readAllStandardError(), lines(err).contains(said)), 30000);
    QTest::qWait(300);
    QCOMPARE(second.state(), QProcess::Running);  // the box waits for the user
    second.kill();
    QVERIFY(second.waitForFinished(10000));
  }

  // SIGTERM mid-stream: the reply of the app's local API goes on to its end or is cut with an
  // error event, then [DONE]; the app exits 0 and its lock file is gone (it used to exit 143,
  // cutting the stream, and leave the lock).
  void aSigtermFinishesTheApiStreamsAndLeavesNoLock() {
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    quint16 port = 0;
    {
      QTcpServer probe;  // a free port
      QVERIFY(probe.listen(QHostAddress::LocalHost, 0));
      port = probe.serverPort();
    }
    {
      ChatDatabase db(chatsPath());
      QVERIFY(db.setSetting(QStringLiteral("api_server_enabled"), QStringLiteral("1")));
      QVERIFY(db.setSetting(QStringLiteral("api_server_port"), QString::number(port)));
    }
    QProcess app;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    app.setProcessEnvironment(env);
    app.start(m_app, {QStringLiteral("--model"), QString::fromStdString(model)});
    QVERIFY(app.waitForStarted());
    // A streamed reply long enough to be mid-way when the signal comes.
    const QByteArray name = QFileInfo(QString::fromStdString(model)).completeBaseName().toUtf8();  // the model's id
    const QByteArray body = "{\"model\": \"" + name + "\", \"stream\": true, \"max_tokens\": 400, \"temperature\": 0, "
                            "\"messages\": [{\"role\": \"user\", \"content\": \"Tell me a long story.\"}]}";
    // Until the model has loaded the API answers 404 (no such model yet): ask again.
    QTcpSocket socket;
    QByteArray reply;
    QTRY_VERIFY2_WITH_TIMEOUT(([&] {
                                socket.abort();
                                reply.clear();
                                socket.connectToHost(QHostAddress::LocalHost, port);
                                if (!socket.waitForConnected(200)) return false;
                                socket.write("POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n"
                                             "Content-Type: application/json\r\nContent-Length: " +
                                             QByteArray::number(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
                                while (socket.waitForReadyRead(2000) || socket.bytesAvailable()) {
                                  reply += socket.readAll();
                                  if (!reply.startsWith("HTTP/1.1 200") && reply.contains("\r\n\r\n")) return false;
                                  if (reply.count("data: {") >= 3) return true;
                                }
                                return false;
                              }()),
                              reply.left(300).constData(), 60000);
    QCOMPARE(::kill(static_cast<pid_t>(app.processId()), SIGTERM), 0);
    QTRY_VERIFY_WITH_TIMEOUT((socket.waitForReadyRead(50), reply += socket.readAll(),
                              socket.state() == QAbstractSocket::UnconnectedState),
                             30000);
    reply += socket.readAll();
    // The last event is [DONE] (the HTTP chunking's last chunk follows it).
    QVERIFY2(reply.contains("data: [DONE]") && reply.lastIndexOf("data: ") == reply.lastIndexOf("data: [DONE]"),
             reply.right(300).constData());
    QVERIFY(app.waitForFinished(30000));
    QCOMPARE(app.exitStatus(), QProcess::NormalExit);
    QCOMPARE(app.exitCode(), 0);
    QVERIFY(!QFileInfo::exists(chatsPath() + QStringLiteral(".lock")));
    ChatDatabase db(chatsPath());  // the next start finds the API as it was
    QCOMPARE(db.setting(QStringLiteral("api_server_enabled")), QStringLiteral("1"));
    QVERIFY(db.setSetting(QStringLiteral("api_server_enabled"), QStringLiteral("0")));
  }

  // An app killed mid-run leaves its lock file and its socket: the next start takes both, and
  // a start after that finds it.
  void aLockLeftByAKilledAppIsTakenOver() {
    QProcess first;
    start(first);
    QVERIFY(first.waitForStarted());
    const qint64 pid = first.processId();
    QTRY_VERIFY_WITH_TIMEOUT(([&] {
                               QLocalSocket s;
                               s.connectToServer(InstanceLock::serverName(chatsPath()));
                               return s.waitForConnected(200);
                             }()),
                             30000);
    first.kill();  // SIGKILL: nothing of it runs again
    QVERIFY(first.waitForFinished(10000));
    QLockFile left(chatsPath() + QStringLiteral(".lock"));
    qint64 owner = 0;
    QString host, app;
    QVERIFY(left.getLockInfo(&owner, &host, &app));
    QCOMPARE(owner, pid);

    AppServices services;  // no Held thrown
    QVERIFY(services.instanceLock()->isHeld());
    QVERIFY(services.database().isOpen());
    QSignalSpy raised(services.instanceLock(), &InstanceLock::raiseRequested);
    QProcess third;
    QSignalSpy finished(&third, &QProcess::finished);
    start(third);
    QVERIFY(third.waitForStarted());
    QVERIFY(finished.wait(30000));
    QCOMPARE(third.exitCode(), 0);
    QCOMPARE(raised.size(), 1);  // through the socket it took over
  }
};

QTEST_MAIN(TestOneInstance)
#include "test_one_instance.moc"
