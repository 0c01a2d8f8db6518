// The grammar matcher against an independent oracle: a JSON grammar in GBNF (RFC 8259, written
// here) must accept exactly the texts nlohmann-json accepts, over thousands of random documents
// and their mutations, fed whole and in random byte pieces (pieces that split a character in
// two, as a token can); a refused piece leaves the matcher as it was; allows() answers as
// accept() would; a piece ending inside a character is admitted only if the character can still
// be one the grammar allows.
#include <QtTest>

#include <nlohmann/json.hpp>

#include <memory>
#include <random>
#include <string>

#include "engine/grammar/gbnf.h"
#include "engine/grammar/grammar_matcher.h"

using namespace pagedchat::grammar;

namespace {

const char* const kJson = R"(root   ::= ws value ws
value  ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( member ( ws "," ws member )* ws )? "}"
member ::= string ws ":" ws value
array  ::= "[" ws ( value ( ws "," ws value )* ws )? "]"
string ::= "\"" char* "\""
char   ::= [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" hex hex hex hex )
hex    ::= [0-9a-fA-F]
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws     ::= [ \t\n\r]*
)";

// Characters documents are made of. No 'd' or 'D' among the hex digits: "\uD800" (a lone
// surrogate) is refused by nlohmann-json and admitted by the grammar, which checks syntax.
const std::vector<std::string> kPieces = {"{", "}", "[", "]", ",", ":", "\"", "\\", "a", "b", "z", "0", "1", "9", "-", "+",
                                          ".", "e", "E", " ", "\n", "\t", "true", "false", "null", "u", "f", "\x01", "é",
                                          "中", "😀", "/", "n", "r", "t", "A", "F"};

class Documents {
 public:
  explicit Documents(uint32_t seed) : rng_(seed) {}
  int below(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  std::string value(int depth) {
    switch (below(depth > 3 ? 4 : 7)) {
      case 0: return number();
      case 1: return string();
      case 2: return std::vector<std::string>{"true", "false", "null"}[static_cast<size_t>(below(3))];
      case 3: return ws() + number() + ws();
      case 4: case 5: {
        std::string s = std::string("[") + ws();
        for (int i = 0, n = below(4); i < n; ++i) s += (i ? ws() + std::string(",") + ws() : std::string()) + value(depth + 1);
        return s + ws() + "]";
      }
      default: {
        std::string s = std::string("{") + ws();
        for (int i = 0, n = below(4); i < n; ++i) s += (i ? ws() + std::string(",") + ws() : std::string()) + string() + ws() + ":" + ws() + value(depth + 1);
        return s + ws() + "}";
      }
    }
  }
  // A document with a few pieces inserted, removed or replaced: mostly not JSON any more.
  std::string mutated(std::string doc) {
    for (int i = 0, n = 1 + below(3); i < n; ++i) {
      const size_t at = static_cast<size_t>(below(static_cast<int>(doc.size()) + 1));
      const std::string& piece = kPieces[static_cast<size_t>(below(static_cast<int>(kPieces.size())))];
      switch (below(3)) {
        case 0: doc.insert(at, piece); break;
        case 1: if (at < doc.size() && (static_cast<unsigned char>(doc[at]) & 0xc0) != 0x80 && static_cast<unsigned char>(doc[at]) < 0x80) doc.erase(at, 1); break;
        default:
          if (at < doc.size() && static_cast<unsigned char>(doc[at]) < 0x80) {
            doc.erase(at, 1);
            doc.insert(at, piece);
          }
          break;
      }
    }
    return doc;
  }
  // Random cuts into pieces of 1 to 6 bytes (through characters too).
  std::vector<std::string> cut(const std::string& doc) {
    std::vector<std::string> out;
    for (size_t i = 0; i < doc.size();) {
      const size_t n = std::min(doc.size() - i, static_cast<size_t>(1 + below(6)));
      out.push_back(doc.substr(i, n));
      i += n;
    }
    return out;
  }

 private:
  std::string ws() { return std::vector<std::string>{"", "", "", " ", "\n  ", "\t"}[static_cast<size_t>(below(6))]; }
  std::string number() {
    std::string s = below(3) == 0 ? "-" : "";
    s += below(4) == 0 ? "0" : std::to_string(1 + below(9)) + std::string(static_cast<size_t>(below(3)), '7');
    if (below(3) == 0) s += std::string(".") + std::to_string(below(1000));
    if (below(4) == 0) s += std::string(below(2) ? "e" : "E") + (below(2) ? "-" : "") + std::to_string(below(40));
    return s;
  }
  std::string string() {
    static const std::vector<std::string> chars = {"a", "b", " ", "é", "中", "😀", "\\n", "\\\"", "\\\\", "\\u00e9", "\\u4E2F", "/", "\\/"};
    std::string s = "\"";
    for (int i = 0, n = below(6); i < n; ++i) s += chars[static_cast<size_t>(below(static_cast<int>(chars.size())))];
    return s + "\"";
  }
  std::mt19937 rng_;
};

}  // namespace

class TestGrammarMatcher : public QObject {
  Q_OBJECT
  std::shared_ptr<const Grammar> json_ = std::make_shared<const Grammar>(parse_gbnf(kJson));

 private slots:
  void acceptsExactlyWhatTheJsonParserAccepts() {
    Documents docs(7);
    int valid = 0, invalid = 0;
    for (int i = 0; i < 3000; ++i) {
      std::string doc = docs.value(0);
      if (i % 2) doc = docs.mutated(doc);
      const bool oracle = nlohmann::json::accept(doc);
      (oracle ? valid : invalid) += 1;
      // Whole.
      GrammarMatcher whole(json_);
      const bool read = whole.accept(doc);
      QVERIFY2((read && whole.can_end()) == oracle, doc.c_str());
      // In pieces: each refused piece leaves the matcher as it was; a valid document's pieces
      // are all taken; the first refused piece of an invalid one is where it goes wrong.
      GrammarMatcher pieces(json_);
      bool all = true;
      for (const std::string& piece : docs.cut(doc)) {
        const bool allowed = pieces.allows(piece);
        const size_t before = pieces.num_stacks();
        QCOMPARE(pieces.accept(piece), allowed);
        if (!allowed) {
          QCOMPARE(pieces.num_stacks(), before);
          all = false;
          break;
        }
      }
      QVERIFY2((all && pieces.can_end()) == oracle, doc.c_str());
      if (oracle) QVERIFY2(all, doc.c_str());
    }
    QVERIFY2(valid > 1000 && invalid > 1000, qPrintable(QStringLiteral("%1 valid, %2 invalid").arg(valid).arg(invalid)));
  }

  void aPieceEndingInsideACharacterIsJudgedByWhatItCanStillBecome() {
    // "é" is C3 A9, "中" E4 B8 AD: a first byte is admitted where such a character may come.
    GrammarMatcher in_string(json_);
    QVERIFY(in_string.accept("\"a"));
    QVERIFY(in_string.allows("\xC3"));
    QVERIFY(in_string.allows("\xE4\xB8"));
    QVERIFY(in_string.accept("\xE4\xB8"));
    QVERIFY(!in_string.can_end());         // a character is half read
    QVERIFY(!in_string.allows("\""));      // not UTF-8: the character's next byte must come
    QVERIFY(in_string.accept("\xAD\""));   // "中" whole, then the string ends
    QVERIFY(in_string.can_end());
    // Not UTF-8, though the string admits any character: an overlong "/" (C0 AF), a surrogate
    // (ED A0 80), a 3-byte lead that can only start an overlong form (E0 followed by 80).
    GrammarMatcher other(json_);
    QVERIFY(other.accept("\"x"));
    QVERIFY(!other.allows("\xC0\xAF"));
    QVERIFY(!other.allows("\xED\xA0\x80"));
    QVERIFY(!other.allows("\xED\xA0"));   // nor its first two bytes: only surrogates can follow
    QVERIFY(other.allows("\xED\x9F"));    // U+D7C0-U+D7FF can
    QVERIFY(other.allows("\xED"));
    QVERIFY(!other.allows("\xE0\x80\x80"));
    QVERIFY(other.allows("\xE0\xA0\x80"));  // U+0800, the first 3-byte character
    // Where only ASCII may come (a number), no multi-byte lead is admitted.
    GrammarMatcher in_number(json_);
    QVERIFY(in_number.accept("12"));
    QVERIFY(!in_number.allows("\xC3"));
    QVERIFY(!in_number.allows("\x80"));  // a continuation byte with nothing begun
    // A negated class: the lead byte E4 opens U+4000-U+4FFF, only partly excluded by
    // [^\u4E00-\u9FFF] (U+4000 may still come); E5 opens U+5000-U+5FFF, all of it excluded.
    GrammarMatcher cjk(std::make_shared<const Grammar>(parse_gbnf("root ::= [^\\u4E00-\\u9FFF]")));
    QVERIFY(cjk.allows("\xE4"));
    QVERIFY(!cjk.allows("\xE5"));
    QVERIFY(cjk.allows("a"));
  }

  void theEndIsSaidOnlyWhenTheTextIsWhole() {
    GrammarMatcher m(json_);
    QVERIFY(!m.can_end());
    QVERIFY(m.accept("{\"a\": [1, 2]"));
    QVERIFY(!m.can_end());
    QVERIFY(m.accept("}"));
    QVERIFY(m.can_end());
    QVERIFY(!m.finished());  // whitespace may still come
    GrammarMatcher fixed(std::make_shared<const Grammar>(parse_gbnf("root ::= \"yes\" | \"no\"")));
    QVERIFY(fixed.accept("ye"));
    QVERIFY(!fixed.allows("p"));
    QVERIFY(fixed.accept("s"));
    QVERIFY(fixed.finished());  // nothing can follow
  }
};

QTEST_GUILESS_MAIN(TestGrammarMatcher)
#include "test_grammar_matcher.moc"
