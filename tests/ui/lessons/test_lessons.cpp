// Each lesson, run headless as a teacher runs it: Start sets the scene up on a fresh engine (the
// teaching preset and the lesson's pool), paused; Next event is pressed until the lesson's key
// event, asserted from the engine's own events; the panel's sentence names it. The fork lesson
// copies exactly one block on write (the shared partial block); the prefix lesson serves the
// system prompt's full blocks from the cache; the allocation lesson allocates on demand; the
// contiguous lesson's bars hold two slabs where paging holds three chats; parallel sampling
// shares one prompt's blocks three ways; eviction drops the least recently used cached block
// first; preemption by recompute and by swap (out to host blocks and back) leave every reply
// the same, token for token, as the same question asked alone; continuous batching computes a
// prompt chunk and a decode in one step, drawn as such in the step timeline; a chat evicted from
// the pool reads its history back from the disk tier; quantizing the model three ways lowers its
// KL from the original each time (the lesson measures it with the engine).

#include <QtTest>

#include <QDir>
#include <QStandardPaths>

#include <algorithm>
#include <numeric>

#include <QDockWidget>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTabWidget>

#include "support/test_env.h"
#include "engine/backend/kv_type.h"
#include "ui/pool_view/kv_pool_view.h"
#include "appcore/pool/kv_cell_model.h"
#include "ui/pool_panel/kv_contiguous_strip.h"
#include "ui/pool_panel/kv_pool_panel.h"
#include "ui/pool_panel/kv_roofline_chart.h"
#include "ui/pool_panel/kv_step_timeline.h"
#include "support/window_driver.h"
#include "appcore/lessons/lesson_runner.h"
#include "ui/lessons/lessons_panel.h"
#include "appcore/session/pool_control.h"
#include "ui/chat/chat_panel.h"
#include "ui/lessons/quantization_chart.h"
#include "ui/shell/main_window.h"

using pagedchat::KvEventKind;

class TestLessons : public QObject {
  Q_OBJECT
  QString m_model;

  // Starts lesson `id` from the panel and presses Next event until its key event (or 300 presses).
  void runLesson(MainWindow& w, const QString& id) {
    LessonRunner* runner = w.lessons();
    auto* panel = w.findChild<LessonsPanel*>(QStringLiteral("lessonsPanel"));
    QVERIFY(runner && panel);
    auto* list = panel->findChild<QListWidget*>(QStringLiteral("lessonList"));
    for (int i = 0; i < list->count(); ++i)
      if (list->item(i)->data(Qt::UserRole).toString() == id) list->setCurrentRow(i);
    panel->findChild<QPushButton*>(QStringLiteral("startLesson"))->click();
    // (The quantization lesson quantizes the model three ways first: about 25 s on 2 cores.)
    QVERIFY(pagedchat::test::waitUntil(
        [&] { return runner->state() == LessonRunner::State::ready || runner->state() == LessonRunner::State::failed; }, 300000));
    QCOMPARE(runner->state(), LessonRunner::State::ready);
    QCOMPARE(panel->sentenceShown(), runner->current()->intro);
    auto* next = panel->findChild<QPushButton*>(QStringLiteral("lessonNextEvent"));
    QVERIFY(next->isEnabled());
    for (int press = 0; press < 300 && runner->state() != LessonRunner::State::reached; ++press) {
      const QString before = runner->lastSentence();
      next->click();
      (void)QTest::qWaitFor([&] { return runner->lastSentence() != before || runner->state() == LessonRunner::State::reached; }, 5000);
    }
    QCOMPARE(runner->state(), LessonRunner::State::reached);
    QCOMPARE(panel->sentenceShown(), runner->lastSentence());
  }

 private slots:
  static QString lastReply(MainWindow& w, ChatId id) {
    const ChatRecord* c = w.chat(id);
    return c && !c->messages.isEmpty() ? c->messages.last().content : QString();
  }

  void initTestCase() {
    pagedchat::test::useFreshDataFolder();
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    m_model = QString::fromStdString(model);
  }

  void theLessonsArePanelsBesideTheChats() {
    AppServices services;
    MainWindow w(services);
    auto* dock = w.findChild<QDockWidget*>(QStringLiteral("lessonsDock"));
    QVERIFY(dock);
    QCOMPARE(w.tabifiedDockWidgets(dock).size(), 1);  // a tab beside the chat list
    QStringList ids;
    for (const LessonInfo& l : LessonRunner::lessons()) ids << l.id;
    QCOMPARE(ids, QStringList({"allocation", "contiguous", "fork", "prefix", "parallel", "eviction", "recompute", "swap", "prefill", "batching", "beams", "speculative", "window", "kvtypes", "disk", "quantization"}));
  }

  void aForkCopiesItsSharedPartialBlockOnceOnWrite() {
    AppServices services;
    MainWindow w(services);
    w.show();
    pagedchat::test::loadAndWait(w, m_model);
    runLesson(w, QStringLiteral("fork"));
    QVERIFY(w.settings().teachingPreset);
    QCOMPARE(w.lessons()->eventCount(KvEventKind::copy_on_write), 1);
    QVERIFY2(w.lessons()->lastSentence().contains(QStringLiteral("Chat B writes into shared block #")), qPrintable(w.lessons()->lastSentence()));
    // Run to end: the fork's reply finishes, the engine runs again.
    QSignalSpy done(&w, &MainWindow::turnDone);
    w.findChild<QPushButton*>(QStringLiteral("lessonRunToEnd"))->click();
    QVERIFY(done.wait(60000));
    QCOMPARE(w.lessons()->eventCount(KvEventKind::copy_on_write), 1);  // the rest writes the child's own copy
    QCOMPARE(w.lessons()->state(), LessonRunner::State::finished);  // its one chat replying has ended

    // Replay from a fresh scene: the same key event again.
    runLesson(w, QStringLiteral("prefix"));
    QVERIFY(w.lessons()->eventCount(KvEventKind::cache_hit) >= 2);  // the prompt's full blocks of the system prompt
    QVERIFY2(w.lessons()->lastSentence().contains(QStringLiteral("Chat B's prompt finds blocks")), qPrintable(w.lessons()->lastSentence()));

    runLesson(w, QStringLiteral("allocation"));
    QVERIFY(w.lessons()->eventCount(KvEventKind::allocate) >= 1);
    QVERIFY2(w.lessons()->lastSentence().contains(QStringLiteral("Chat A gets block")), qPrintable(w.lessons()->lastSentence()));
    w.findChild<QPushButton*>(QStringLiteral("lessonRunToEnd"))->click();
    QVERIFY(done.wait(60000));
  }

  void contiguousSlabsWouldHoldTwoWherePagingHoldsThree() {
    AppServices services;
    MainWindow w(services);
    w.resize(1366, 768);
    w.show();
    pagedchat::test::loadAndWait(w, m_model);
    runLesson(w, QStringLiteral("contiguous"));
    auto* panel = w.findChild<KvPoolPanel*>(QStringLiteral("kvPoolPanel"));
    panel->flush();
    const KvLayoutComparison& layout = panel->contiguousStrip()->layout();
    QCOMPARE(layout.capacity, int64_t(AppSettings::kTeachingBlocks * AppSettings::kTeachingBlockSize));
    QCOMPARE(layout.maxContext, int64_t(AppSettings::kTeachingContext));
    QCOMPARE(layout.contiguous.size(), size_t(3));
    QCOMPARE(layout.slabsThatFit, 2);
    QCOMPARE(layout.numWaiting, 1);
    QVERIFY(!layout.contiguous[2].fits);
    QVERIFY(layout.pagedReserved < layout.capacity);  // paged, all three are in
    for (const KvLayoutSegment& s : layout.paged) QVERIFY(s.reserved - s.used < AppSettings::kTeachingBlockSize * 2);
    const QString said = w.lessons()->lastSentence();
    QVERIFY2(said.contains(QStringLiteral("Chat C gets block")), qPrintable(said));
    QVERIFY2(said.contains(QStringLiteral("the pool holds 2 slabs: 1 of these chats could not start")), qPrintable(said));
    QVERIFY2(said.contains(QStringLiteral("Paged: ")), qPrintable(said));
  }

  // Chat A's blocks are written to disk as they are computed; B, C and D fill the pool until A's
  // own blocks are evicted; A's next question reads its history back from disk, and its reply's
  // line says how many tokens came from there.
  void aChatEvictedFromThePoolIsReadBackFromDisk() {
    AppServices services;
    MainWindow w(services);
    w.show();
    pagedchat::test::loadAndWait(w, m_model);
    runLesson(w, QStringLiteral("disk"));
    QVERIFY(w.lessons()->eventCount(KvEventKind::disk_read) >= 1);
    QVERIFY2(w.lessons()->lastSentence().contains(QStringLiteral("on disk")), qPrintable(w.lessons()->lastSentence()));
    pagedchat::test::runLessonToEnd(w);
    const ChatRecord* a = w.chat(w.lessons()->sceneChat(QStringLiteral("Chat A")));
    QVERIFY(a && !a->messages.isEmpty());
    const ReplyMetrics& m = a->messages.last().metrics;
    QVERIFY2(m.numDiskPromptTokens >= 4 * w.lessons()->eventCount(KvEventKind::disk_read), qPrintable(m.summary()));
    QVERIFY2(m.summary().contains(QStringLiteral("read from disk")), qPrintable(m.summary()));
  }

  void parallelSamplesShareOnePrompt() {
    AppServices services;
    MainWindow w(services);
    w.show();
    pagedchat::test::loadAndWait(w, m_model);
    runLesson(w, QStringLiteral("parallel"));
    QVERIFY(w.lessons()->eventCount(KvEventKind::share) >= 2);  // two forked samples took the prompt's blocks
    QCOMPARE(w.lessons()->eventCount(KvEventKind::fork), 2);
    QVERIFY2(w.lessons()->lastSentence().contains(QStringLiteral("shares block")), qPrintable(w.lessons()->lastSentence()));
    QVERIFY(w.lessons()->eventCount(KvEventKind::allocate) >= 1);  // the prompt, computed once
    pagedchat::test::runLessonToEnd(w);
    // Each forked sample copied the shared partial block at most once; the prompt was not computed again.
    QVERIFY(w.lessons()->eventCount(KvEventKind::copy_on_write) <= 2);
    QCOMPARE(w.lessons()->eventCount(KvEventKind::cache_hit), 0);
  }

  void evictionTakesTheLeastRecentlyUsedCachedBlockFirst() {
    AppServices services;
    MainWindow w(services);
    w.show();
    pagedchat::test::loadAndWait(w, m_model);
    // The LRU order of the cached blocks, followed through each frame's events from the frame
    // before: a freed full block joins its end, a prefix hit takes one out, an eviction must take
    // its front; after the events it must equal the frame's own order.
    std::vector<int32_t> lru;
    size_t poolSize = 0;
    int64_t lastStep = -1;
    int evictions = 0, mismatches = 0;
    connect(&w.session().pool(), &PoolControl::localFrame, &w, [&](const PoolFrame& f) {
      if (f.snapshot.blocks.size() != poolSize || f.stepIndex < lastStep) {  // another engine
        poolSize = f.snapshot.blocks.size();
        lastStep = f.stepIndex;
        lru = f.snapshot.cached_lru;
        return;
      }
      lastStep = f.stepIndex;
      for (const pagedchat::KvEvent& e : f.events) {
        if (e.kind == KvEventKind::free && e.block >= 0 && e.block_state == pagedchat::BlockState::cached) lru.push_back(e.block);
        if (e.kind == KvEventKind::cache_hit) std::erase(lru, e.block);
        if (e.kind == KvEventKind::evict) {
          ++evictions;
          if (lru.empty() || lru.front() != e.block) ++mismatches;
          else lru.erase(lru.begin());
        }
      }
      if (lru != f.snapshot.cached_lru) ++mismatches, lru = f.snapshot.cached_lru;
    });
    runLesson(w, QStringLiteral("eviction"));
    QCOMPARE(w.settings().teachingBlocks, 48);
    QVERIFY(w.lessons()->eventCount(KvEventKind::evict) >= 1);
    QVERIFY(w.lessons()->eventCount(KvEventKind::reclaim) >= 1);  // a parked chat let go first
    QVERIFY2(w.lessons()->lastSentence().contains(QStringLiteral("evicted (least recently used first)")), qPrintable(w.lessons()->lastSentence()));
    pagedchat::test::runLessonToEnd(w);
    QVERIFY(evictions >= 1);
    QCOMPARE(mismatches, 0);
  }

  void preemptionByRecomputeAndBySwapLeaveTheTextUnchanged() {
    AppServices services;
    MainWindow w(services);
    w.show();
    pagedchat::test::loadAndWait(w, m_model);
    runLesson(w, QStringLiteral("recompute"));
    QVERIFY(w.lessons()->eventCount(KvEventKind::preempt) >= 1);
    QCOMPARE(w.lessons()->eventCount(KvEventKind::swap_out), 0);  // no host pool: recompute
    QVERIFY2(w.lessons()->lastSentence().contains(QStringLiteral("is preempted")), qPrintable(w.lessons()->lastSentence()));
    pagedchat::test::runLessonToEnd(w);
    const QString recomputedA = lastReply(w, w.lessons()->sceneChat(QStringLiteral("Chat A")));
    const QString recomputedB = lastReply(w, w.lessons()->sceneChat(QStringLiteral("Chat B")));
    QVERIFY(recomputedB.size() > 100);

    runLesson(w, QStringLiteral("swap"));
    QCOMPARE(w.modelInfo().numHostBlocks, 64);
    QVERIFY(w.lessons()->eventCount(KvEventKind::swap_out) >= 1);
    QVERIFY2(w.lessons()->lastSentence().contains(QStringLiteral("swapped out")), qPrintable(w.lessons()->lastSentence()));
    pagedchat::test::runLessonToEnd(w);
    QVERIFY(w.lessons()->eventCount(KvEventKind::swap_in) >= 1);
    QCOMPARE(w.lessons()->eventCount(KvEventKind::preempt), 0);  // swapped, never recomputed
    QCOMPARE(lastReply(w, w.lessons()->sceneChat(QStringLiteral("Chat A"))), recomputedA);
    QCOMPARE(lastReply(w, w.lessons()->sceneChat(QStringLiteral("Chat B"))), recomputedB);

    // And the same question alone, with the pool to itself: the same story. (A chat of one's
    // own ends the lesson: its chats go, and the user's engine is loaded again.)
    const ChatRecord* sceneB = w.chat(w.lessons()->sceneChat(QStringLiteral("Chat B")));
    const std::optional<TurnSettings> sampling = sceneB->ownSampling;
    const QString question = sceneB->messages.first().content;
    QSignalSpy reloaded(&w, &MainWindow::modelReady);
    const ChatId alone = w.newChat();
    QVERIFY(reloaded.wait(60000));
    w.setChatSampling(alone, sampling);
    QSignalSpy done(&w, &MainWindow::turnDone);
    w.findChild<QPlainTextEdit*>(QStringLiteral("input"))->setPlainText(question);
    w.session().pool().setPaused(false);
    w.chatPanel()->send();
    QVERIFY(done.wait(120000));
    QCOMPARE(lastReply(w, alone), recomputedB);
  }

  // Beam search: the beams are forks of the prompt (its blocks shared, not copied), and a beam
  // that falls behind is dropped, its blocks freed, while the search goes on.
  void beamsAreForksAndDroppedBeamsFreeTheirBlocks() {
    AppServices services;
    MainWindow w(services);
    w.show();
    pagedchat::test::loadAndWait(w, m_model);
    runLesson(w, QStringLiteral("beams"));
    QVERIFY2(w.lessons()->eventCount(KvEventKind::fork) >= 3, qPrintable(QString::number(w.lessons()->eventCount(KvEventKind::fork))));
    QVERIFY(w.lessons()->eventCount(KvEventKind::finish) >= 1);  // beams dropped (two may go in one step) ...
    QVERIFY(w.isReplying(w.lessons()->sceneChat(QStringLiteral("Chat A"))));  // ... while the search goes on
    QVERIFY2(w.lessons()->lastSentence().contains(QStringLiteral("one of Chat A's beams")), qPrintable(w.lessons()->lastSentence()));
    QSignalSpy done(&w, &MainWindow::turnDone);
    w.findChild<QPushButton*>(QStringLiteral("lessonRunToEnd"))->click();
    QVERIFY(done.wait(120000));
  }

  // Speculative decoding by prompt lookup: drafts are written into the chat's blocks and the
  // ones the model rejects are cut off (rewind) in the same step (that drafts leave the reply
  // unchanged is test_speculative's); leaving the lesson gives the user's own setting back.
  void speculationWritesDraftsAndCutsTheRejectedOnes() {
    AppServices services;
    MainWindow w(services);
    w.show();
    pagedchat::test::loadAndWait(w, m_model);
    QCOMPARE(w.settings().speculation, QString("off"));
    runLesson(w, QStringLiteral("speculative"));
    QCOMPARE(w.settings().speculation, QString("ngram"));
    QVERIFY(w.lessons()->eventCount(KvEventKind::rewind) >= 1);
    QVERIFY2(w.lessons()->lastSentence().contains(QStringLiteral("Chat A is cut back to")), qPrintable(w.lessons()->lastSentence()));
    QSignalSpy done(&w, &MainWindow::turnDone);
    w.findChild<QPushButton*>(QStringLiteral("lessonRunToEnd"))->click();
    QVERIFY(done.wait(120000));
    const QString drafted = lastReply(w, w.lessons()->sceneChat(QStringLiteral("Chat A")));
    QVERIFY(!drafted.isEmpty());
    w.lessons()->leave();
    QTRY_COMPARE_WITH_TIMEOUT(w.settings().speculation, QString("off"), 60000);
  }

  // Prefill against decode: the roofline is measured for the lesson; the prompt's steps (32
  // tokens each) sit past its ridge and the decodes short of it, by the engine's own counts of
  // FLOP and bytes; the key step says both; the Roofline tab draws every step under the roof.
  void promptStepsAreComputeBoundAndDecodeStepsMemoryBound() {
    AppServices services;
    MainWindow w(services);
    w.show();
    pagedchat::test::loadAndWait(w, m_model);
    runLesson(w, QStringLiteral("prefill"));
    const pagedchat::RooflineCeilings roof = w.lessons()->roofline();
    QVERIFY(roof.peak_flops > 0 && roof.read_bandwidth > 0);
    const LessonRunner::StepTally t = w.lessons()->stepTally();
    QVERIFY2(t.prompt >= 3 && t.decode >= 1, qPrintable(QStringLiteral("%1 prompt, %2 decode").arg(t.prompt).arg(t.decode)));
    // Which side of the ridge a step falls on is this machine's measure: under the sanitizers the
    // roofline's compute peak is measured several times too low, and decodes land past the ridge.
    if (!pagedchat::test::sanitized()) {
      QCOMPARE(t.promptComputeBound, t.prompt);
      QCOMPARE(t.decodeMemoryBound, t.decode);
    }
    const QString said = w.lessons()->lastSentence();
    QVERIFY2(said.contains(QStringLiteral("Chat A's next token")) &&
                 (pagedchat::test::sanitized() || said.contains(QStringLiteral("memory-bound"))) &&
                 said.contains(QStringLiteral("prompt tokens in")),
             qPrintable(said));
    auto* panel = w.findChild<KvPoolPanel*>(QStringLiteral("kvPoolPanel"));
    QCOMPARE(panel->findChild<QTabWidget*>(QStringLiteral("kvHistoryTabs"))->currentIndex(), int(KvPoolPanel::rooflineTab));
    const KvRooflineChart* chart = panel->rooflineChart();
    QCOMPARE(chart->ceilings().peak_flops, roof.peak_flops);
    QTRY_COMPARE(chart->points().size(), t.prompt + t.decode);
    for (const KvRooflineChart::Point& p : chart->points()) {
      if (!pagedchat::test::sanitized()) QVERIFY((p.kind == KvRooflineChart::Point::Kind::decode) == (p.intensity < roof.ridge()));
      // Nothing runs faster than its roof (a tenth over, for a timer's grain on a short step).
      QVERIFY2(p.flopsPerSecond <= 1.1 * roof.attainable(p.intensity) || p.kind != KvRooflineChart::Point::Kind::decode,
               qPrintable(QStringLiteral("step %1: %2 GFLOP/s").arg(p.step).arg(p.flopsPerSecond / 1e9)));
    }
    pagedchat::test::runLessonToEnd(w);
    QVERIFY(w.lessons()->stepTally().decode >= 10);
    if (!pagedchat::test::sanitized()) QCOMPARE(w.lessons()->stepTally().decodeMemoryBound, w.lessons()->stepTally().decode);
  }

  // Quantizing the user's model to Q3_K_M three ways, measured by the lesson itself (the engine's
  // quality comparison) and shown a way per Next event: the importance matrix lowers plain
  // rounding's KL from the original and the GPTQ-style pass lowers it again, in files of the
  // same size; in the matrix drawn, the loudest channels carry most of plain rounding's output
  // error, and the weighting cuts that error; the chart shows what the sentences say, and the
  // variants' files are gone once measured.
  void quantizingThreeWaysLowersTheKlEachTime() {
    if (pagedchat::test::sanitized())
      QSKIP("three quantizations, a GPTQ pass and their KL take past the lesson's timeout under the sanitizers; "
            "the quantization and the GPTQ pass run sanitized in test_quantize and test_gptq");
    AppServices services;
    MainWindow w(services);
    w.show();
    pagedchat::test::loadAndWait(w, m_model);
    runLesson(w, QStringLiteral("quantization"));
    const QuantizationStudy::Result r = w.lessons()->quantization();
    QVERIFY(r);
    QCOMPARE(r->variants.size(), size_t(3));
    const auto &plain = r->variants[0], &weighted = r->variants[1], &gptq = r->variants[2];
    QVERIFY(!plain.importance && !plain.gptq && weighted.importance && !weighted.gptq && gptq.importance && gptq.gptq);
    QCOMPARE(QString::fromStdString(r->source_type), QStringLiteral("Q4_1"));  // the default model, widened to F16
    qInfo("mean KL plain %.4f, importance %.4f, gptq %.4f; perplexity %.2f / %.2f / %.2f (original %.2f)", plain.mean_kl,
          weighted.mean_kl, gptq.mean_kl, plain.perplexity, weighted.perplexity, gptq.perplexity, r->reference_perplexity);
    QVERIFY(weighted.mean_kl < plain.mean_kl);
    QVERIFY(gptq.mean_kl < weighted.mean_kl);
    QVERIFY(gptq.top1 > plain.top1);
    // The same tensors in the same types: only the header's few keys naming the method differ.
    QVERIFY(std::fabs(weighted.bits_per_weight - plain.bits_per_weight) < 1e-3);
    QVERIFY(std::fabs(gptq.bits_per_weight - plain.bits_per_weight) < 1e-3);
    QVERIFY(r->positions >= 1000);
    const auto& pic = r->channels;
    QVERIFY(!pic.tensor.empty() && pic.full_hessian);
    QCOMPARE(pic.cost.size(), size_t(3));
    std::vector<size_t> order(pic.activation.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return pic.activation[a] > pic.activation[b]; });
    const size_t loud = std::max<size_t>(1, order.size() / 100);
    double total[3] = {}, loudPart = 0;
    for (size_t v = 0; v < 3; ++v)
      for (float c : pic.cost[v]) total[v] += c;
    for (size_t i = 0; i < loud; ++i) loudPart += pic.cost[0][order[i]];
    QVERIFY2(loudPart > 0.5 * total[0], qPrintable(QString::number(loudPart / total[0])));
    QVERIFY(total[1] < total[0] && total[2] < total[0]);
    QVERIFY2(w.lessons()->lastSentence().contains(QStringLiteral("GPTQ-style")) &&
                 w.lessons()->lastSentence().contains(QString::number(gptq.mean_kl, 'f', 3)),
             qPrintable(w.lessons()->lastSentence()));
    auto* panel = w.findChild<KvPoolPanel*>(QStringLiteral("kvPoolPanel"));
    QCOMPARE(panel->findChild<QTabWidget*>(QStringLiteral("kvHistoryTabs"))->currentIndex(), int(KvPoolPanel::quantizationTab));
    QCOMPARE(panel->quantizationChart()->variantsShown(), 3);
    QCOMPARE(panel->quantizationChart()->result(), r);
    const QString folder =
        QDir(QStandardPaths::writableLocation(QStandardPaths::CacheLocation)).filePath(QStringLiteral("quantization-lesson"));
    QVERIFY2(QDir(folder).entryList({QStringLiteral("*.gguf")}, QDir::Files).isEmpty(), "the variants' files are removed");
    pagedchat::test::runLessonToEnd(w);
    QCOMPARE(w.lessons()->state(), LessonRunner::State::finished);
  }

  // KV element types: the same question on three engines whose pools have the same memory; the
  // pool of q8_0 holds what f32's bytes over q8_0's say (kv_type.h's row sizes), the chat's
  // blocks follow its tokens, and leaving gives the user's own KV type back.
  void theSameChatTakesAHalfAndAQuarterOfTheBytes() {
    AppServices services;
    MainWindow w(services);
    w.show();
    pagedchat::test::loadAndWait(w, m_model);
    const QString userType = w.settings().kvType;
    runLesson(w, QStringLiteral("kvtypes"));
    QCOMPARE(w.settings().kvType, QString("q8_0"));
    const auto& runs = w.lessons()->kvTypeRuns();
    QCOMPARE(runs.size(), 3);
    const ModelInfo& m = w.modelInfo();
    const pagedchat::KvType types[] = {pagedchat::KvType::F32, pagedchat::KvType::F16, pagedchat::KvType::Q8_0};
    for (int i = 0; i < 3; ++i) {
      const qint64 row = pagedchat::kv_row_bytes(types[i], m.headDim);
      QCOMPARE(runs[i].blockBytes, qint64(4) * m.layers * 2 * m.kvHeads * row);
      QCOMPARE(runs[i].poolBlocks, int(32 * pagedchat::kv_row_bytes(pagedchat::KvType::F32, m.headDim) / row));
      QVERIFY(!runs[i].tokens.empty());
      QCOMPARE(runs[i].blocksHeld, int((runs[i].tokens.size() + 3) / 4));
    }
    QCOMPARE(runs[1].poolBlocks, 64);
    auto* panel = w.findChild<KvPoolPanel*>(QStringLiteral("kvPoolPanel"));
    QTRY_COMPARE(int(panel->poolView()->frame()->snapshot.blocks.size()), runs[2].poolBlocks);
    const QString said = w.lessons()->lastSentence();
    QVERIFY2(said.contains(QStringLiteral("Chat A (q8_0)")) && said.contains(QStringLiteral("in q8_0")) &&
                 said.contains(QStringLiteral("f16's")),
             qPrintable(said));
    w.lessons()->leave();
    QTRY_COMPARE_WITH_TIMEOUT(w.settings().kvType, userType, 60000);
  }

  // A sliding window: the user's model has none, so the lesson loads one that has (the Gemma 3
  // the tests fetch, found among the models on this machine); the first block of Chat A falls
  // wholly before the window while its text is computed, and stays (nothing is freed: the global
  // layers read it); leaving the lesson loads the user's own model again.
  void aBlockBeforeTheWindowStaysForTheGlobalLayers() {
    PC_REQUIRE_ENV(gemma, "PAGEDCHAT_TEST_GEMMA");
    AppServices services;
    MainWindow w(services);
    w.show();
    pagedchat::test::loadAndWait(w, m_model);
    QCOMPARE(w.modelInfo().slidingWindow, 0);
    runLesson(w, QStringLiteral("window"));
    QVERIFY(w.modelInfo().slidingWindow > 0 && w.modelInfo().slidingWindow <= 512);
    QCOMPARE(w.lessons()->eventCount(KvEventKind::free), 0);
    const QString said = w.lessons()->lastSentence();
    QVERIFY2(said.contains(QStringLiteral("wholly before that window")) && said.contains(QStringLiteral("global layers")),
             qPrintable(said));
    auto* panel = w.findChild<KvPoolPanel*>(QStringLiteral("kvPoolPanel"));
    const PoolFrame* frame = panel->poolView()->frame();
    QVERIFY(frame);
    QCOMPARE(frame->snapshot.block_size, 16);
    bool outside = false;
    for (const PoolFrameSequence& s : frame->sequences)
      if (s.chatTitle == QStringLiteral("Chat A"))
        outside = kvBlocksOutsideWindow(s.storedTokens(), frame->slidingWindow.window, 16) >= 1 &&
                  s.blockTable.size() == size_t((s.storedTokens() + 15) / 16);  // every block still held
    QVERIFY(outside);
    w.lessons()->leave();
    QTRY_COMPARE_WITH_TIMEOUT(w.modelInfo().path, QFileInfo(m_model).absoluteFilePath(), 60000);
    QCOMPARE(w.modelInfo().slidingWindow, 0);
  }

  void continuousBatchingRunsAPromptChunkBesideADecode() {
    AppServices services;
    MainWindow w(services);
    w.show();
    pagedchat::test::loadAndWait(w, m_model);
    runLesson(w, QStringLiteral("batching"));
    QVERIFY(w.lessons()->mixedSteps() >= 1);
    const QString said = w.lessons()->lastSentence();
    QVERIFY2(said.contains(QStringLiteral("in one forward pass")) && said.contains(QStringLiteral("Chat B's prompt, tokens")) &&
                 said.contains(QStringLiteral("Chat A's next token")),
             qPrintable(said));
    // The timeline draws that step: B's chunk and A's decode in one column.
    auto* panel = w.findChild<KvPoolPanel*>(QStringLiteral("kvPoolPanel"));
    auto* tabs = panel->findChild<QTabWidget*>(QStringLiteral("kvHistoryTabs"));
    QCOMPARE(tabs->currentIndex(), 1);
    const KvStepTimeline* timeline = panel->stepTimeline();
    QVERIFY(!timeline->steps().empty());
    const pagedchat::StepRecord& last = timeline->steps().back();
    QVERIFY(isMixedStep(last));
    QStringList cells;
    for (pagedchat::SequenceId seq : timeline->rows()) cells << timeline->rowTitle(seq) + QLatin1Char('=') + timeline->cellText(last.step_index, seq);
    QVERIFY2(cells.contains(QStringLiteral("Chat A=D")), qPrintable(cells.join(QLatin1Char(' '))));
    bool chunk = false;
    for (const QString& c : cells) chunk = chunk || c.startsWith(QStringLiteral("Chat B=P"));
    QVERIFY2(chunk, qPrintable(cells.join(QLatin1Char(' '))));
    pagedchat::test::runLessonToEnd(w);
    QVERIFY(w.lessons()->mixedSteps() >= 2);  // B's prompt took several chunks, each beside A's decode
  }
};

QTEST_MAIN(TestLessons)
#include "test_lessons.moc"
