// Whole-file writes (appcore/io/save_file.h) on a disk that fills up: the file is all there or
// as it was, and the failure is said. A full disk is played with RLIMIT_FSIZE (writes past the
// limit fail with EFBIG, as they would with ENOSPC): with Qt 6.4's QSaveFile alone, an export
// under 16 KB "succeeded" there and left an empty file over the previous one (issue 46).

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "appcore/chat/chat_export.h"
#include "appcore/io/save_file.h"

namespace {

// The process may write files of at most `bytes` while it lives.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &saved_);
    signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails instead of ending the process
    rlimit limit = saved_;
    limit.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() { setrlimit(RLIMIT_FSIZE, &saved_); }

 private:
  rlimit saved_{};
};

QByteArray read_all(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray("(missing)");
}

}  // namespace

class TestSaveFile : public QObject {
  Q_OBJECT

 private slots:
  void writesAndReplaces() {
    QTemporaryDir dir;
    const QString path = dir.filePath("a.json");
    QString error;
    QVERIFY(saveFile(path, "first", &error));
    QVERIFY(saveFile(path, "second", &error));
    QCOMPARE(read_all(path), QByteArray("second"));
    QVERIFY(saveFile(dir.filePath("key"), "secret", &error, QFileDevice::ReadOwner | QFileDevice::WriteOwner));
    struct stat st {};
    QCOMPARE(::stat(QFile::encodeName(dir.filePath("key")).constData(), &st), 0);
    QCOMPARE(st.st_mode & 0777, 0600u);
  }

  void aFullDiskKeepsThePreviousFileAndSaysSo_data() {
    QTest::addColumn<int>("size");
    QTest::newRow("under 16 KB (the buffered write Qt 6.4 lost)") << 8 * 1024;
    QTest::newRow("a megabyte") << 1024 * 1024;
  }
  void aFullDiskKeepsThePreviousFileAndSaysSo() {
    QFETCH(int, size);
    QTemporaryDir dir;
    const QString path = dir.filePath("export.json");
    QVERIFY(saveFile(path, "the previous export", nullptr));
    QString error;
    bool saved;
    {
      FileSizeLimit full(4096);
      saved = saveFile(path, QByteArray(size, 'x'), &error);
    }
    QVERIFY(!saved);
    QVERIFY2(!error.isEmpty(), "no reason given");
    QCOMPARE(read_all(path), QByteArray("the previous export"));
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files), QStringList{"export.json"});  // no temporary left
  }

  // The export the user makes (File > Export chat) on that disk: an error, the old file intact.
  void aChatExportOnAFullDiskFails() {
    QTemporaryDir dir;
    const QString path = dir.filePath("chat.md");
    ChatRecord chat;
    chat.title = "A chat";
    for (int i = 0; i < 40; ++i) {
      MessageRecord m;
      m.role = i % 2 ? "assistant" : "user";
      m.content = QString("message %1 ").arg(i).repeated(20);
      chat.messages.append(m);
    }
    QVERIFY(writeChatFile(path, chat, QString(), TurnSettings{}, nullptr));
    const QByteArray before = read_all(path);
    QVERIFY(before.size() > 4096 && before.size() < 16 * 1024);
    chat.title = "Renamed";
    QString error;
    bool written;
    {
      FileSizeLimit full(4096);
      written = writeChatFile(path, chat, QString(), TurnSettings{}, &error);
    }
    QVERIFY(!written);
    QVERIFY(!error.isEmpty());
    QCOMPARE(read_all(path), before);
  }
};

QTEST_GUILESS_MAIN(TestSaveFile)
#include "test_save_file.moc"
