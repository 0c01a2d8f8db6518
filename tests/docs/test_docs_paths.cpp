// The docs name files that exist: every path under one of the tree's top folders that
// README.md and docs/*.md mention (DESIGN.md is the map a newcomer reads first), and every
// bare source file name (a .h, .cpp, .cu, .py, .sh). A rename that forgets the docs fails here.
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <QSet>
#include <QStringList>
#include <QtTest>

namespace {
const QString kRoot = QStringLiteral(PAGEDCHAT_SOURCE_DIR);

QStringList documents() {
  QStringList docs{QStringLiteral("README.md")};
  for (const QString& name : QDir(kRoot + QStringLiteral("/docs")).entryList({QStringLiteral("*.md")}, QDir::Files, QDir::Name))
    docs << QStringLiteral("docs/") + name;
  return docs;
}

QString readDocument(const QString& relative) {
  QFile f(kRoot + QLatin1Char('/') + relative);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QString::fromUtf8(f.readAll());
}

// "engine/bench/synthetic_chat.{h,cpp}" names two files.
QStringList expandBraces(const QString& path) {
  static const QRegularExpression braces(QStringLiteral(R"(\{([^{}]*)\})"));
  const QRegularExpressionMatch m = braces.match(path);
  if (!m.hasMatch()) return {path};
  QStringList out;
  for (const QString& alt : m.captured(1).split(QLatin1Char(',')))
    out += expandBraces(path.left(m.capturedStart()) + alt + path.mid(m.capturedEnd()));
  return out;
}

bool exists(const QString& relative) {
  const QString full = kRoot + QLatin1Char('/') + relative;
  // A target named by its source ("tests/fuzz/fuzz_jinja") or a folder: both are there.
  return QFileInfo::exists(full) || QFileInfo::exists(full + QStringLiteral(".cpp"));
}

// Every file name in the tree (build folders and hidden ones aside), for bare names.
QSet<QString> sourceFileNames() {
  QSet<QString> names;
  QDirIterator it(kRoot, QDir::Files, QDirIterator::Subdirectories);
  while (it.hasNext()) {
    const QString path = it.next();
    const QString relative = QDir(kRoot).relativeFilePath(path);
    if (relative.startsWith(QStringLiteral("build")) || relative.startsWith(QLatin1Char('.')) || relative.contains(QStringLiteral("/.")))
      continue;
    names.insert(QFileInfo(path).fileName());
  }
  return names;
}
}  // namespace

class TestDocsPaths : public QObject {
  Q_OBJECT
 private slots:
  void pathsUnderTopFoldersExist() {
    // A path starts a word (not inside a URL or another tree's path) with one of our folders.
    static const QRegularExpression path(QStringLiteral(
        R"((?<![\w/.~<>-])(?:app|appcore|ui|server|runtime|models|remote|engine|kernels|resources|tests|installer|docs)/[\w./*{},-]*)"));
    int checked = 0;
    QStringList missing;
    for (const QString& doc : documents()) {
      const QString text = readDocument(doc);
      QVERIFY2(!text.isEmpty(), qPrintable(doc));
      for (auto it = path.globalMatch(text); it.hasNext();) {
        QString p = it.next().captured(0);
        while (!p.isEmpty() && QStringLiteral(".,:;").contains(p.back())) p.chop(1);
        if (p.contains(QLatin1Char('*'))) continue;  // a pattern, not a file
        for (const QString& one : expandBraces(p)) {
          ++checked;
          if (!exists(one)) missing << doc + QStringLiteral(": ") + one;
        }
      }
    }
    QVERIFY2(missing.isEmpty(), qPrintable(missing.join(QLatin1Char('\n'))));
    QVERIFY(checked > 100);  // DESIGN.md alone names more; fewer means the pattern broke
  }

  void bareSourceFileNamesExist() {
    static const QRegularExpression name(QStringLiteral(R"((?<![\w/.-])[A-Za-z_][\w-]*\.(?:h|cpp|cu|cuh|py|sh)\b(?![\w/]))"));
    const QSet<QString> names = sourceFileNames();
    QStringList missing;
    for (const QString& doc : documents())
      for (auto it = name.globalMatch(readDocument(doc)); it.hasNext();) {
        const QString n = it.next().captured(0);
        if (n == QStringLiteral("llama.cpp") || n == QStringLiteral("whisper.cpp")) continue;  // projects, not files
        if (!names.contains(n)) missing << doc + QStringLiteral(": ") + n;
      }
    QVERIFY2(missing.isEmpty(), qPrintable(missing.join(QLatin1Char('\n'))));
  }
};

QTEST_APPLESS_MAIN(TestDocsPaths)
#include "test_docs_paths.moc"
