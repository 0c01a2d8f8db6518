// A chat database found damaged at start is said in the window, once, where the user looks
// first: a message box with the sentence (what happened, where the damaged file is kept, what
// came back) and the kept file's path as its details.

#include <QtTest>

#include <QFile>
#include <QMessageBox>

#include "appcore/chat/chat_database.h"
#include "support/window_driver.h"

class TestDamagedDatabaseNotice : public QObject {
  Q_OBJECT

 private slots:
  void theWindowSaysSoAtStart() {
    pagedchat::test::useFreshDataFolder();
    const QString path = ChatDatabase::defaultPath();
    QDir().mkpath(QFileInfo(path).path());
    {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
      f.write(QByteArray(8192, 'Z'));  // not a database at all
    }
    AppServices services;
    QVERIFY(services.database().startupCheck().damaged);
    MainWindow w(services);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QMessageBox* box = nullptr;
    QTRY_VERIFY((box = w.findChild<QMessageBox*>(QStringLiteral("damagedDatabase"))) != nullptr);
    QVERIFY2(box->text().contains(QStringLiteral("The chat database was damaged")), qPrintable(box->text()));
    QVERIFY2(box->text().contains(services.database().startupCheck().keptAs), qPrintable(box->text()));
    QVERIFY(QFile::exists(services.database().startupCheck().keptAs));
    QVERIFY(services.database().isOpen());  // the app goes on, on a fresh file
  }
};

QTEST_MAIN(TestDamagedDatabaseNotice)
#include "test_damaged_database_notice.moc"
