// The pool's events told in sentences and kept as a log, from a real KvManager: a run of like
// events is one line naming its blocks (cache hits, a copy-on-write with its fresh copy, frees
// by outcome, an eviction, a preemption); the log files lines under their step, filters by
// chat, marks a line's blocks in the pool view when clicked, and exports every event as JSON
// lines that read back to the same events.

#include <QtTest>

#include <QComboBox>
#include <QJsonDocument>
#include <QJsonObject>
#include <QListWidget>
#include <QTemporaryDir>

#include "engine/kv/kv_manager.h"
#include "support/kv_test_frames.h"
#include "ui/pool_panel/kv_event_log.h"
#include "appcore/pool/kv_event_text.h"
#include "ui/pool_panel/kv_pool_panel.h"
#include "ui/pool_view/kv_pool_view.h"

using namespace pagedchat;
using namespace kvtest;

namespace {
QString name(SequenceId seq) { return seq == 1 ? QStringLiteral("Chat A") : seq == 2 ? QStringLiteral("Chat B") : QString(); }

std::vector<KvEventLine> narrate(KvManager& kv) { return narrateKvEvents(kv.take_events(), name); }
}  // namespace

class TestKvEventLog : public QObject {
  Q_OBJECT
 private slots:
  void runsOfLikeEventsAreOneSentenceNamingTheirBlocks() {
    KvManager kv({.num_blocks = 8, .block_size = 4});
    runPrompt(kv, 1, iota(1, 10));  // 3 blocks, the last partial
    std::vector<KvEventLine> lines = narrate(kv);
    QCOMPARE(lines.size(), size_t(1));
    QCOMPARE(lines[0].kind, KvEventKind::allocate);
    QCOMPARE(lines[0].blocks.size(), size_t(3));
    QVERIFY2(lines[0].text.startsWith(QStringLiteral("Chat A gets blocks #")), qPrintable(lines[0].text));

    // A second chat with the same first 8 tokens: two cache hits, one line.
    kv.free(1);
    kv.take_events();
    runPrompt(kv, 2, iota(1, 9));
    lines = narrate(kv);
    QVERIFY(!lines.empty());
    QCOMPARE(lines[0].kind, KvEventKind::cache_hit);
    QCOMPARE(lines[0].blocks.size(), size_t(2));
    QVERIFY2(lines[0].text.contains(QStringLiteral("Chat B's prompt finds blocks #")) && lines[0].text.contains(QStringLiteral("2 blocks")),
             qPrintable(lines[0].text));

    // A fork, then the child writes into the shared partial block: copy-on-write names both.
    kv.fork(2, 3);
    append(kv, 3, {50});
    lines = narrate(kv);
    const auto cow = std::find_if(lines.begin(), lines.end(), [](const KvEventLine& l) { return l.kind == KvEventKind::copy_on_write; });
    QVERIFY(cow != lines.end());
    QCOMPARE(cow->blocks.size(), size_t(2));  // the original and its copy, both marked
    QVERIFY2(cow->text.startsWith(QStringLiteral("Sequence 3 writes into shared block #")), qPrintable(cow->text));
    QVERIFY2(cow->text.contains(QStringLiteral("copy-on-write")), qPrintable(cow->text));

    // Frees say what became of the blocks; an eviction has no sequence.
    kv.free(3);
    lines = narrate(kv);
    QVERIFY(std::all_of(lines.begin(), lines.end(), [](const KvEventLine& l) { return l.text.contains(QStringLiteral("lets go of")) || l.kind == KvEventKind::finish; }));
    kv.free(2);
    kv.take_events();
    QVERIFY(kv.evict_cached(1) == 1);
    lines = narrate(kv);
    QCOMPARE(lines.size(), size_t(1));
    QCOMPARE(lines[0].seq, SequenceId{-1});
    QVERIFY2(lines[0].text.startsWith(QStringLiteral("Cached block #")), qPrintable(lines[0].text));
  }

  void theLogFilesFiltersMarksAndExports() {
    KvManager kv({.num_blocks = 16, .block_size = 4});
    KvPoolPanel panel;
    KvEventLogView* log = panel.eventLog();
    runPrompt(kv, 1, iota(1, 6));
    PoolFrame f1 = frameFrom(kv, {{1, "Chat A", 0}});
    f1.stepIndex = 1;
    panel.setFrame(f1);
    runPrompt(kv, 2, iota(100, 5));
    PoolFrame f2 = frameFrom(kv, {{1, "Chat A", 0}, {2, "Chat B", 1}});
    f2.stepIndex = 2;
    panel.setFrame(f2);
    QStringList lines = log->shownLines();
    QCOMPARE(lines.size(), 2);
    QVERIFY2(lines[0].startsWith(QStringLiteral("step 1 · Chat A gets")), qPrintable(lines[0]));
    QVERIFY2(lines[1].startsWith(QStringLiteral("step 2 · Chat B gets")), qPrintable(lines[1]));
    // A frame with no events adds nothing.
    PoolFrame quiet = frameFrom(kv, {{1, "Chat A", 0}, {2, "Chat B", 1}});
    panel.setFrame(quiet);
    QCOMPARE(log->shownLines().size(), 2);

    // Filtered to one chat.
    log->selectChat(QStringLiteral("Chat B"));
    QCOMPARE(log->shownLines().size(), 1);
    QVERIFY(log->shownLines()[0].contains(QStringLiteral("Chat B")));
    log->selectChat(QString());
    QCOMPARE(log->shownLines().size(), 2);

    // A click marks the line's blocks in the view.
    auto* list = log->findChild<QListWidget*>(QStringLiteral("kvEventLines"));
    list->setCurrentRow(1);
    const std::span<const int32_t> tableB = kv.block_table(2);
    QCOMPARE(panel.poolView()->markedBlocks(), std::vector<int32_t>(tableB.begin(), tableB.end()));

    // The trace: one JSON object per event, in order, that reads back as the events.
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("trace.jsonl"));
    QString error;
    QVERIFY2(log->exportTrace(path, &error), qPrintable(error));
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QList<QByteArray> rows = file.readAll().split('\n');
    std::vector<KvEvent> all = f1.events;
    all.insert(all.end(), f2.events.begin(), f2.events.end());
    QCOMPARE(rows.size(), static_cast<qsizetype>(all.size()) + 1);  // a newline after the last
    for (size_t i = 0; i < all.size(); ++i) {
      const QJsonObject o = QJsonDocument::fromJson(rows[static_cast<qsizetype>(i)]).object();
      QCOMPARE(o.value(QStringLiteral("kind")).toString(), QString::fromLatin1(kv_event_name(all[i].kind)));
      QCOMPARE(o.value(QStringLiteral("block")).toInt(), all[i].block);
      QCOMPARE(o.value(QStringLiteral("seq")).toInteger(), all[i].seq);
      QCOMPARE(o.value(QStringLiteral("step")).toInt(), i < f1.events.size() ? 1 : 2);
      QCOMPARE(o.value(QStringLiteral("chat")).toString(), all[i].seq == 1 ? QStringLiteral("Chat A") : QStringLiteral("Chat B"));
    }
    QVERIFY(!log->exportTrace(dir.filePath(QStringLiteral("no/such/dir/t.jsonl")), &error));
    QVERIFY(!error.isEmpty());
  }
};

QTEST_MAIN(TestKvEventLog)
#include "test_kv_event_log.moc"
