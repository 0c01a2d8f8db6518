// The tokens a grammar allows, on SmolLM2's real vocabulary (49,152 byte-level BPE tokens),
// against a count made here without the matcher: for "yes" | "no", exactly the tokens whose
// bytes are a prefix of what is left to write; end-of-generation tokens only once the text is
// whole; control tokens and tokens of no bytes never.
#include <QtTest>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/grammar/gbnf.h"
#include "engine/grammar/token_mask.h"
#include "engine/model/model.h"
#include "support/test_env.h"

using namespace pagedchat;
using namespace pagedchat::grammar;

class TestTokenMask : public QObject {
  Q_OBJECT
  std::unique_ptr<Model> model_;

  // The tokens that may come when `left` are the texts the grammar may still write.
  std::set<int32_t> expected(const std::vector<std::string>& left, bool can_end) const {
    const Tokenizer& tok = *model_->tokenizer;
    std::set<int32_t> out;
    for (int32_t id = 0; id < tok.num_vocab(); ++id) {
      if (tok.is_eog(id) || tok.eos_id() == id) {
        if (can_end) out.insert(id);
        continue;
      }
      if (tok.is_control(id)) continue;
      const std::string piece = tok.token_to_piece(id, false);
      if (piece.empty()) continue;
      for (const std::string& l : left)
        if (l.compare(0, piece.size(), piece) == 0 && piece.size() <= l.size()) out.insert(id);
    }
    return out;
  }
  static std::set<int32_t> allowed(const TokenMask& mask, int32_t n) {
    std::set<int32_t> out;
    for (int32_t id = 0; id < n; ++id)
      if (mask.allows(id)) out.insert(id);
    return out;
  }

 private slots:
  void initTestCase() {
    PC_REQUIRE_ENV(path, "PAGEDCHAT_TEST_MODEL");
    model_ = Model::load(path);
  }

  void exactlyThePrefixesOfWhatIsLeft() {
    const VocabularyBytes vocabulary(*model_->tokenizer);
    const int32_t n = model_->tokenizer->num_vocab();
    QCOMPARE(vocabulary.size(), static_cast<size_t>(n));
    GrammarMatcher m(std::make_shared<const Grammar>(parse_gbnf("root ::= \"yes\" | \"no\"")));
    const std::set<int32_t> start = allowed(allowed_tokens(m, vocabulary), n);
    QCOMPARE(start, expected({"yes", "no"}, false));
    QVERIFY(start.size() >= 4);  // "y", "ye", "yes", "n", "no" are tokens of this vocabulary
    // A lone lead byte of a longer character (E0, F0 are tokens here) is no prefix of "yes".
    QVERIFY(!m.allows("\xE0") && !m.allows("\xF0"));
    QVERIFY(m.accept("ye"));
    QCOMPARE(allowed(allowed_tokens(m, vocabulary), n), expected({"s"}, false));
    QVERIFY(m.accept("s"));
    const TokenMask done = allowed_tokens(m, vocabulary);
    QCOMPARE(allowed(done, n), expected({}, true));
    QVERIFY(done.count() >= 1);  // its end-of-generation token
    QVERIFY(done.allows(*model_->tokenizer->eos_id()));
  }
};

QTEST_GUILESS_MAIN(TestTokenMask)
#include "test_token_mask.moc"
