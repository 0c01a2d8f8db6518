// TokenMasker (the cached, context-split masks the sampler uses) against allowed_tokens (every
// token tried on the matcher) on SmolLM2's real vocabulary: the same mask, bit for bit, at every
// position of documents of many grammars: JSON, schemas with strings, numbers, enums, nested
// arrays and alternatives, and GBNF with classes of many-byte characters. The positions come from
// real documents, tokenized as the model would, and from random walks that take any allowed token
// (the odd corners: partial characters, long tokens, closing quotes glued to what follows).
#include <QtTest>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/grammar/gbnf.h"
#include "engine/grammar/json_schema.h"
#include "engine/grammar/token_masker.h"
#include "engine/model/model.h"
#include "support/test_env.h"

using namespace pagedchat;
using namespace pagedchat::grammar;

namespace {

struct Case {
  std::string gbnf;
  std::vector<std::string> documents;
};

// The grammars and their documents (outside the test class: moc does not read raw strings).
std::vector<Case> cases() {
  return {
      {json_gbnf(false), {"{\"a\": [1, 2.5e-3, true, null], \"b\": {\"c\": \"d\\u00e9\\\"x\"}}", R"(["é", "日本", -0])"}},
      {json_gbnf(true), {"{\n  \"key\": \"value\",\n  \"n\": 12\n}"}},
      {json_schema_to_gbnf(R"({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
           "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3}}, "required": ["name", "age"]})"),
       {R"({"name": "Ada Lovelace", "age": 36, "tags": ["math", "poetry"]})"}},
      {json_schema_to_gbnf(R"({"type": "array", "items": {"anyOf": [{"type": "number"}, {"enum": ["north", "south", 7]}]}})"),
       {R"([1.5, "north", 7, -3, "south"])"}},
      {json_schema_to_gbnf(R"({"type": "object", "properties": {"point": {"$ref": "#/$defs/p"}, "label": {"type": "string", "maxLength": 4}},
           "required": ["point", "label"], "additionalProperties": false,
           "$defs": {"p": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"]}}})"),
       {R"({"point": {"x": 1, "y": -2.25}, "label": "abcd"})"}},
      {R"(root ::= greeting " " [α-ω]+ "!" | "日本" [^a-z\n]* "\n")" "\n"
       R"(greeting ::= "hello" | "héllo" | "γεια")", {"γεια αβγ!", "日本語です 123\n"}},
      {R"(root ::= ("yes" | "no") ("," ws ("yes" | "no"))*)" "\n" R"(ws ::= " "?)", {"yes, no,yes"}},
  };
}

}  // namespace

class TestTokenMasker : public QObject {
  Q_OBJECT
  std::unique_ptr<Model> model_;
  std::unique_ptr<VocabularyBytes> vocabulary_;
  int positions_ = 0;

  // Both masks at the matcher's position, compared; the direct one returned for the caller's
  // next step (the direct way tries every token of the vocabulary: the suite's cost).
  TokenMask compare(TokenMasker& masker, const GrammarMatcher& m, const std::string& where) {
    TokenMask direct = allowed_tokens(m, *vocabulary_);
    compare_with(masker.allowed(m), direct, where);
    return direct;
  }

  // `fast` against a direct mask computed before at the same position.
  void compare_with(const TokenMask& fast, const TokenMask& direct, const std::string& where) {
    ++positions_;
    if (fast.words == direct.words) return;
    for (int32_t id = 0; id < static_cast<int32_t>(vocabulary_->size()); ++id)
      if (fast.allows(id) != direct.allows(id))
        QFAIL(qPrintable(QString("%1: token %2 (%3) is %4 by the masker, %5 by the matcher")
                             .arg(QString::fromStdString(where)).arg(id)
                             .arg(QString::fromStdString(vocabulary_->bytes(id)))
                             .arg(fast.allows(id) ? "allowed" : "refused").arg(direct.allows(id) ? "allowed" : "refused")));
  }

 private slots:
  void initTestCase() {
    PC_REQUIRE_ENV(path, "PAGEDCHAT_TEST_MODEL");
    model_ = Model::load(path);
    vocabulary_ = std::make_unique<VocabularyBytes>(*model_->tokenizer);
  }

  void masksEqualTheDirectWayAlongDocuments() {
    TokenMasker masker(*vocabulary_);
    const std::vector<Case> all = cases();
    std::vector<std::shared_ptr<const Grammar>> grammars;
    for (const Case& c : all) grammars.push_back(std::make_shared<const Grammar>(parse_gbnf(c.gbnf)));
    // Twice: the second time every mask comes from the state cache, and is still right (against
    // the direct masks of the first pass, the same positions in the same order).
    TokenMasker::Counts first;
    std::vector<TokenMask> direct;
    for (int pass = 0; pass < 2; ++pass) {
      size_t position = 0;
      const auto check = [&](const GrammarMatcher& m, const std::string& where) {
        if (pass == 0) direct.push_back(compare(masker, m, where));
        else compare_with(masker.allowed(m), direct.at(position), where);
        ++position;
      };
      for (size_t i = 0; i < grammars.size(); ++i) {
        for (const std::string& doc : all[i].documents) {
          GrammarMatcher m(grammars[i]);
          std::string read;
          for (const int32_t id : model_->tokenizer->encode(doc, false, false)) {
            check(m, doc + " after '" + read + "'");
            if (QTest::currentTestFailed()) return;
            const std::string& bytes = vocabulary_->bytes(id);
            QVERIFY2(m.accept(bytes), qPrintable(QString::fromStdString(doc + ": refused '" + bytes + "' after '" + read + "'")));
            read += bytes;
          }
          check(m, doc + " at its end");
          if (QTest::currentTestFailed()) return;
          QVERIFY(m.can_end());
        }
      }
      if (pass == 0) first = masker.counts();
    }
    QCOMPARE(masker.counts().state_misses, first.state_misses);
    QCOMPARE(masker.counts().local_walks, first.local_walks);
    QCOMPARE(masker.counts().state_hits, first.state_hits + first.state_misses + first.state_hits);
  }

  void masksEqualTheDirectWayAlongRandomWalks() {
    TokenMasker masker(*vocabulary_);
    std::mt19937 rng(20261206);
    // Under the sanitizers (several times slower, beside other suites) a quarter of the walks:
    // the same paths, within QTest's five minutes a function.
    const bool sanitized = pagedchat::test::sanitized();
    const int num_walks = sanitized ? 1 : 2, num_steps = sanitized ? 12 : 25;
    for (const Case& c : cases()) {
      const auto g = std::make_shared<const Grammar>(parse_gbnf(c.gbnf));
      for (int walk = 0; walk < num_walks; ++walk) {
        GrammarMatcher m(g);
        std::string read;
        for (int step = 0; step < num_steps; ++step) {
          const TokenMask mask = compare(masker, m, c.gbnf.substr(0, 40) + "... walk after '" + read + "'");
          if (QTest::currentTestFailed()) return;
          std::vector<int32_t> allowed;
          for (int32_t id = 0; id < static_cast<int32_t>(vocabulary_->size()); ++id)
            if (mask.allows(id) && !vocabulary_->ends_generation(id)) allowed.push_back(id);
          if (allowed.empty()) break;
          // Half the steps take one of the shortest tokens, so walks also close what they open.
          std::shuffle(allowed.begin(), allowed.end(), rng);
          if (rng() % 2) std::stable_sort(allowed.begin(), allowed.end(), [&](int32_t a, int32_t b) {
            return vocabulary_->bytes(a).size() < vocabulary_->bytes(b).size();
          });
          QVERIFY(m.accept(vocabulary_->bytes(allowed.front())));
          read += vocabulary_->bytes(allowed.front());
        }
      }
    }
  }

  // A grammar freed and another made (perhaps at the same address) gets masks of its own.
  void aNewGrammarNeverReadsAnOldOnesCache() {
    TokenMasker masker(*vocabulary_);
    for (const char* text : {"root ::= \"yes\"", "root ::= \"no\""}) {
      GrammarMatcher m(std::make_shared<const Grammar>(parse_gbnf(text)));
      compare(masker, m, text);
    }
  }
};

QTEST_GUILESS_MAIN(TestTokenMasker)
#include "test_token_masker.moc"
