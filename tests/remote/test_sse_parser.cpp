// Server-sent events read in pieces: every way of cutting a stream into pieces gives the same
// events; the line ends, comments, fields and the byte-order mark the spec allows; a hostile
// stream (garbage, an endless line) never grows the parser past its limit.

#include <QtTest>

#include <random>

#include "remote/sse_parser.h"

using pagedchat::remote::SseEvent;
using pagedchat::remote::SseParser;

namespace {
std::vector<SseEvent> parseWhole(std::string_view stream, size_t limit = size_t{4} << 20) {
  std::vector<SseEvent> out;
  SseParser p(limit);
  p.feed(stream, [&](const SseEvent& e) { out.push_back(e); });
  return out;
}

std::vector<SseEvent> parseInPieces(std::string_view stream, const std::vector<size_t>& cuts) {
  std::vector<SseEvent> out;
  SseParser p;
  size_t at = 0;
  for (size_t cut : cuts) {
    p.feed(stream.substr(at, cut - at), [&](const SseEvent& e) { out.push_back(e); });
    at = cut;
  }
  p.feed(stream.substr(at), [&](const SseEvent& e) { out.push_back(e); });
  return out;
}

bool same(const std::vector<SseEvent>& a, const std::vector<SseEvent>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].data != b[i].data || a[i].event != b[i].event || a[i].id != b[i].id) return false;
  return true;
}

const std::string kOpenAiStream =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n"
    ": keep-alive\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"}}]}\r\n\r\n"
    "event: ping\rdata:x\r\r"
    "data: a\ndata: b\nid: 7\n\n"
    "data: [DONE]\n\n";
}  // namespace

class TestSseParser : public QObject {
  Q_OBJECT
 private slots:
  void readsWhatTheSpecAllows() {
    const std::vector<SseEvent> e = parseWhole(kOpenAiStream);
    QCOMPARE(e.size(), size_t(5));
    QCOMPARE(e[0].data, std::string("{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}"));
    QCOMPARE(e[1].data, std::string("{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"}}]}"));  // CRLF
    QCOMPARE(e[2].event, std::string("ping"));  // CR line ends, no space after the colon
    QCOMPARE(e[2].data, std::string("x"));
    QCOMPARE(e[3].data, std::string("a\nb"));  // two data lines, one event
    QCOMPARE(e[3].id, std::string("7"));
    QCOMPARE(e[4].data, std::string("[DONE]"));
  }

  void anEventWithoutDataIsNotDispatched() {
    QVERIFY(parseWhole("event: x\n\n: comment\n\nid: 3\n\n").empty());
    QCOMPARE(parseWhole("data\n\n").size(), size_t(1));  // "data" alone: an empty data line
    QCOMPARE(parseWhole("data\n\n")[0].data, std::string());
  }

  void anUnfinishedEventWaitsForItsBlankLine() {
    SseParser p;
    int n = 0;
    p.feed("data: one\n", [&](const SseEvent&) { ++n; });
    QCOMPARE(n, 0);
    QVERIFY(p.midEvent());
    p.feed("\n", [&](const SseEvent&) { ++n; });
    QCOMPARE(n, 1);
    QVERIFY(!p.midEvent());
  }

  void aByteOrderMarkIsSkippedEvenSplit() {
    const std::string stream = std::string("\xEF\xBB\xBF") + "data: x\n\n";
    for (size_t cut = 0; cut <= 4; ++cut) {
      const std::vector<SseEvent> e = parseInPieces(stream, {cut});
      QCOMPARE(e.size(), size_t(1));
      QCOMPARE(e[0].data, std::string("x"));
    }
    // Bytes that only start like one are the stream's own.
    const std::vector<SseEvent> e = parseWhole("\xEF" "data: y\n\n");
    QVERIFY(e.empty());  // the field is "\xEF" "data", unknown: ignored
    QCOMPARE(parseWhole("\xEF\xBB" "x\ndata: z\n\n").size(), size_t(1));
  }

  // The invariant: how the network cuts the stream never changes what is read.
  void everyCuttingGivesTheSameEvents() {
    const std::vector<SseEvent> whole = parseWhole(kOpenAiStream);
    for (size_t cut = 0; cut <= kOpenAiStream.size(); ++cut)
      QVERIFY2(same(parseInPieces(kOpenAiStream, {cut}), whole), qPrintable(QString::number(cut)));
    std::mt19937 rng(5);
    for (int trial = 0; trial < 500; ++trial) {
      std::vector<size_t> cuts;
      for (size_t at = 0; at < kOpenAiStream.size(); at += 1 + rng() % 7) cuts.push_back(at);
      QVERIFY(same(parseInPieces(kOpenAiStream, cuts), whole));
    }
  }

  void anEndlessLineStopsAtTheLimit() {
    SseParser p(1024);
    int n = 0;
    const std::string chunk(4096, 'a');
    for (int i = 0; i < 100; ++i) p.feed(chunk, [&](const SseEvent&) { ++n; });
    QVERIFY(p.overflowed());
    QCOMPARE(n, 0);
    // Many small events are fine: the limit is per event.
    SseParser q(64);
    std::string many;
    for (int i = 0; i < 1000; ++i) many += "data: 0123456789\n\n";
    q.feed(many, [&](const SseEvent&) { ++n; });
    QVERIFY(!q.overflowed());
    QCOMPARE(n, 1000);
  }

  // Fuzz: random bytes (line ends and colons likely) in random pieces: no crash, and the
  // events are those of the whole stream.
  void randomBytesParseTheSameInPieces() {
    std::mt19937 rng(11);
    const char alphabet[] = {'\n', '\r', ':', ' ', 'd', 'a', 't', 'a', 'e', 'v', 'n', 'i', '\0', '\xEF', '\xBB', '\xBF', 'x'};
    for (int trial = 0; trial < 2000; ++trial) {
      std::string s;
      const size_t len = rng() % 200;
      for (size_t i = 0; i < len; ++i) s.push_back(alphabet[rng() % sizeof alphabet]);
      std::vector<size_t> cuts;
      for (size_t at = 0; at < s.size(); at += 1 + rng() % 9) cuts.push_back(at);
      QVERIFY(same(parseInPieces(s, cuts), parseWhole(s)));
    }
  }
};

QTEST_APPLESS_MAIN(TestSseParser)
#include "test_sse_parser.moc"
