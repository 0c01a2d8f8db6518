// Utf8StreamDecoder: output never ends inside a UTF-8 character, whatever the cut points;
// malformed bytes become U+FFFD (one per maximal ill-formed subpart, as Unicode recommends)
// as soon as they cannot become valid, and an unfinished tail becomes U+FFFD at flush.

#include <QtTest>

#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/utf8.h"

using namespace pagedchat;

namespace {
const std::string kFffd = "\xEF\xBF\xBD";

// Feeds `text` cut into pieces of `step` bytes; checks every chunk; returns all output.
std::string stream_in_steps(const std::string& text, size_t step, bool* all_valid) {
  Utf8StreamDecoder d;
  std::string out;
  *all_valid = true;
  for (size_t pos = 0; pos < text.size(); pos += step) {
    const std::string chunk = d.push(std::string_view(text).substr(pos, step));
    *all_valid = *all_valid && is_valid_utf8(chunk);
    out += chunk;
  }
  const std::string tail = d.flush();
  *all_valid = *all_valid && is_valid_utf8(tail);
  return out + tail;
}
}  // namespace

class TestUtf8Stream : public QObject {
  Q_OBJECT
 private slots:
  void everyCutPointGivesWholeCharacters() {
    const std::string text =
        "aé€😀 👨‍👩‍👧‍👦 🇺🇸 日本語 Привет ∑";
    for (size_t step = 1; step <= 7; ++step) {
      bool valid = false;
      QCOMPARE(stream_in_steps(text, step, &valid), text);
      QVERIFY(valid);
    }
  }

  // whole_utf8_prefix at every cut of a text of 1- to 4-byte characters: the last character
  // boundary at or before the cut (the boundaries known from the text's own encoding).
  void aWholePrefixEndsAtTheLastBoundary() {
    const std::string text = "a\xC3\xA9\xE6\xBC\xA2\xF0\x9F\x98\x80z";  // a é 漢 😀 z
    const std::vector<size_t> boundaries = {0, 1, 3, 6, 10, 11};
    for (size_t cut = 0; cut <= text.size(); ++cut) {
      size_t expected = 0;
      for (size_t b : boundaries)
        if (b <= cut) expected = b;
      QCOMPARE(whole_utf8_prefix(std::string_view(text).substr(0, cut)), expected);
    }
    QCOMPARE(whole_utf8_prefix("\x80\x80"), size_t(2));  // not a cut character: invalid bytes are left to who reads them
  }

  void holdsBackAnUnfinishedCharacter() {
    Utf8StreamDecoder d;
    QCOMPARE(d.push("ab\xF0\x9F"), std::string("ab"));
    QCOMPARE(d.push("\x98"), std::string());
    QCOMPARE(d.push("\x80!"), std::string("\xF0\x9F\x98\x80!"));
    QCOMPARE(d.flush(), std::string());
  }

  void invalidBytesBecomeReplacementCharacters() {
    Utf8StreamDecoder d;
    // A byte that can never start a character is replaced at once.
    QCOMPARE(d.push("a\xFF"
                    "b"),
             "a" + kFffd + "b");
    // A lone continuation byte likewise.
    QCOMPARE(d.push("\x80"), kFffd);
    // A started character cut short by ASCII: replaced once the ASCII shows it cannot finish.
    QCOMPARE(d.push("\xE2\x82"), std::string());
    QCOMPARE(d.push("A"), kFffd + "A");
    // Overlong encodings and surrogates are ill-formed.
    QCOMPARE(d.push("\xC0\xAF"), kFffd + kFffd);
    QCOMPARE(d.push("\xED\xA0\x80"), kFffd + kFffd + kFffd);
    QCOMPARE(d.push("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // above U+10FFFF
  }

  void flushReplacesAnUnfinishedTail() {
    Utf8StreamDecoder d;
    QCOMPARE(d.push("x\xE6\x97"), std::string("x"));
    QCOMPARE(d.flush(), kFffd);
    QCOMPARE(d.flush(), std::string());
    // The decoder is reusable after a flush.
    QCOMPARE(d.push("\xE6\x97\xA5"), std::string("\xE6\x97\xA5"));
  }

  void sanitizeAndValidate() {
    QVERIFY(is_valid_utf8("plain ascii"));
    QVERIFY(is_valid_utf8("\xF0\x9F\x98\x80"));
    QVERIFY(!is_valid_utf8("\xF0\x9F\x98"));
    QVERIFY(!is_valid_utf8("\xC1\xBF"));
    QCOMPARE(sanitize_utf8("a\xF0\x9F\x98"
                           "b"),
             "a" + kFffd + "b");
    size_t pos = 0;
    QCOMPARE(next_code_point("\xE2\x82\xAC", pos), 0x20ACu);
    QCOMPARE(pos, size_t(3));
    std::string out;
    append_utf8(out, 0x1F600);
    QCOMPARE(out, std::string("\xF0\x9F\x98\x80"));
  }
};

QTEST_APPLESS_MAIN(TestUtf8Stream)
#include "test_utf8_stream.moc"
