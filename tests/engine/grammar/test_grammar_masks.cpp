// Our token masks against xgrammar's (tests/reference/make_grammar_masks.py: xgrammar 0.2.9's own
// GBNF reader and pushdown matcher, on SmolLM2's vocabulary): at every step of 18 seeded random
// walks over the grammars of tests/data/grammars (JSON, two schemas, GBNF with many-byte classes,
// lists), TokenMasker allows exactly the tokens the oracle allows, end-of-generation tokens
// included; every tenth step allowed_tokens (every token tried on the matcher) agrees too.
#include <QtTest>

#include <nlohmann/json.hpp>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "engine/grammar/gbnf.h"
#include "engine/grammar/token_masker.h"
#include "engine/model/model.h"
#include "support/test_env.h"

using namespace pagedchat;
using namespace pagedchat::grammar;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The oracle's inclusive id ranges as a mask.
TokenMask mask_of(const nlohmann::json& ranges, size_t vocab) {
  TokenMask m;
  m.words.assign((vocab + 63) / 64, 0);
  for (const auto& r : ranges)
    for (int64_t id = r[0].get<int64_t>(); id <= r[1].get<int64_t>(); ++id)
      m.words[static_cast<size_t>(id) / 64] |= uint64_t{1} << (id % 64);
  return m;
}

}  // namespace

class TestGrammarMasks : public QObject {
  Q_OBJECT
  std::unique_ptr<Model> model_;
  nlohmann::json reference_;

  QString difference(const TokenMask& ours, const TokenMask& theirs, const VocabularyBytes& v) const {
    QStringList out;
    for (int32_t id = 0; id < static_cast<int32_t>(v.size()) && out.size() < 5; ++id)
      if (ours.allows(id) != theirs.allows(id))
        out << QString("token %1 '%2' %3 by us").arg(id).arg(QString::fromStdString(v.bytes(id))).arg(ours.allows(id) ? "allowed" : "refused");
    return out.join("; ");
  }

 private slots:
  void initTestCase() {
    PC_REQUIRE_ENV(path, "PAGEDCHAT_TEST_MODEL");
    PC_REQUIRE_ENV(reference, "PAGEDCHAT_REFERENCE_DIR");
    model_ = Model::load(path);
    const std::string text = read_file(reference + "/grammar_masks.json");
    QVERIFY2(!text.empty(), "no grammar_masks.json: run tests/reference/make_grammar_masks.py (ctest does)");
    reference_ = nlohmann::json::parse(text);
  }

  void everyStepMatchesXgrammar() {
    PC_REQUIRE_ENV(data, "PAGEDCHAT_TEST_DATA");
    const VocabularyBytes vocabulary(*model_->tokenizer);
    QCOMPARE(reference_["vocab_size"].get<size_t>(), vocabulary.size());
    TokenMasker masker(vocabulary);
    int steps = 0;
    for (const auto& entry : reference_["grammars"]) {
      const std::string file = entry["file"].get<std::string>();
      const auto g = std::make_shared<const Grammar>(parse_gbnf(read_file(data + "/grammars/" + file)));
      for (const auto& walk : entry["walks"]) {
        GrammarMatcher m(g);
        int step = 0;
        for (const auto& s : walk["steps"]) {
          const TokenMask theirs = mask_of(s["allowed"], vocabulary.size());
          const TokenMask& ours = masker.allowed(m);
          const QString where = QString("%1, seed %2, step %3").arg(QString::fromStdString(file)).arg(walk["seed"].get<int>()).arg(step);
          QVERIFY2(ours.words == theirs.words, qPrintable(where + ": " + difference(ours, theirs, vocabulary)));
          if (step % 10 == 0) QVERIFY2(allowed_tokens(m, vocabulary).words == theirs.words, qPrintable(where + " (direct)"));
          ++steps;
          ++step;
          if (!s.contains("token")) break;
          QVERIFY(m.accept(vocabulary.bytes(s["token"].get<int32_t>())));
        }
      }
    }
    QVERIFY2(steps >= 300, qPrintable(QString::number(steps)));
  }
};

QTEST_GUILESS_MAIN(TestGrammarMasks)
#include "test_grammar_masks.moc"
