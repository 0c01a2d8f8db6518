// Stop strings in streamed text: found across chunk boundaries, never emitted in part, and
// text that only looked like the start of a stop string is released.

#include <QtTest>

#include "engine/sample/stop_matcher.h"

using namespace pagedchat;

class TestStopMatcher : public QObject {
  Q_OBJECT
 private slots:
  void stopsInsideOneChunk() {
    StopMatcher m({"STOP"});
    QCOMPARE(m.push("hello STOP world"), std::string("hello "));
    QVERIFY(m.stopped());
    QCOMPARE(m.push("more"), std::string());
    QCOMPARE(m.flush(), std::string());
  }

  void stopsAcrossChunksWithoutLeakingAPrefix() {
    StopMatcher m({"</answer>"});
    std::string out;
    for (const char* piece : {"The result", " is 4</", "ans", "wer> trailing"}) out += m.push(piece);
    QCOMPARE(out, std::string("The result is 4"));
    QVERIFY(m.stopped());
  }

  void releasesAFalseStart() {
    StopMatcher m({"###"});
    std::string out = m.push("a #");
    QCOMPARE(out, std::string("a "));
    out += m.push("# b");
    QCOMPARE(out, std::string("a ## b"));
    QVERIFY(!m.stopped());
    out += m.push("#");
    out += m.flush();
    QCOMPARE(out, std::string("a ## b#"));
  }

  void earliestOfSeveralStopsWins() {
    StopMatcher m({"world", "lo w"});
    QCOMPARE(m.push("hello world"), std::string("hel"));
  }

  void withoutStopsEverythingPasses() {
    StopMatcher m({});
    QCOMPARE(m.push("abc"), std::string("abc"));
    QCOMPARE(m.flush(), std::string());
  }
};

QTEST_APPLESS_MAIN(TestStopMatcher)
#include "test_stop_matcher.moc"
