// gpt-oss's harmony tokens in a synthetic vocabulary (engine/tokenizer/tokenizer.h), as llama.cpp's
// llama-vocab.cpp treats them: <|return|> and <|call|> end generation and <|end|> does not (the
// reply goes on from its analysis channel to its final one), even where the metadata names it;
// the message markup (<|channel|>, <|message|>, <|start|>, <|constrain|>, <|end|>) is written out
// in the reply's text though it stays control (parsed only where a template wrote it). A
// vocabulary with <|end|> but no <|return|>/<|call|> (Phi-3's end of turn) keeps the old rule.
#include <QtTest>

#include <memory>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "support/gguf_builder.h"

using namespace pagedchat;

namespace {

enum : int32_t { kH, kI, kHi, kStart, kEnd, kMessage, kChannel, kReturn, kConstrain, kCall, kEndOfText, kAnalysis, kFinal, kAssistant };

std::unique_ptr<Tokenizer> vocabulary(bool harmony) {
  std::vector<std::string> tokens = {"h",        "i",         "hi",      "<|start|>", "<|end|>", "<|message|>", "<|channel|>",
                                     "<|return|>", "<|constrain|>", "<|call|>", "<|endoftext|>", "analysis", "final", "assistant"};
  std::vector<int32_t> types = {1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3, 1, 1, 1};
  if (!harmony) {  // no <|return|>, no <|call|>: plain control tokens of other names
    tokens[kReturn] = "<|x|>";
    tokens[kCall] = "<|y|>";
  }
  test::GgufBuilder b;
  b.add_string("tokenizer.ggml.model", "gpt2");
  b.add_string("tokenizer.ggml.pre", "gpt-2");
  b.add_string_array("tokenizer.ggml.tokens", tokens);
  b.add_i32_array("tokenizer.ggml.token_type", types);
  b.add_string_array("tokenizer.ggml.merges", {"h i"});
  b.add_u32("tokenizer.ggml.eos_token_id", harmony ? kReturn : kEndOfText);
  b.add_u32("tokenizer.ggml.eot_token_id", kEnd);  // named by the metadata: the harmony rule still takes it out
  return Tokenizer::from_gguf(GgufFile::from_memory(b.build()));
}

}  // namespace

class TestHarmonyVocab : public QObject {
  Q_OBJECT
 private slots:
  void returnAndCallEndGenerationNotEnd() {
    const auto t = vocabulary(true);
    QCOMPARE(t->eog_ids(), (std::vector<int32_t>{kReturn, kCall, kEndOfText}));
    QVERIFY(!t->is_eog(kEnd));
    QVERIFY(t->is_eog(kReturn) && t->is_eog(kCall));
  }

  void theMessageMarkupIsWrittenOut() {
    const auto t = vocabulary(true);
    for (int32_t id : {kStart, kEnd, kMessage, kChannel, kConstrain}) {
      QCOMPARE(t->token_to_piece(id), std::string(t->token_text(id)));
      QVERIFY(t->always_rendered(id));
      QVERIFY(t->is_control(id));  // still a control token: a grammar cannot write it, user text cannot spell it
    }
    QCOMPARE(t->token_to_piece(kReturn), std::string());  // the end of generation is not text
    QCOMPARE(t->token_to_piece(kEndOfText), std::string());
    QCOMPARE(t->token_to_piece(kReturn, true), std::string("<|return|>"));
    const std::vector<int32_t> reply = {kChannel, kAnalysis, kMessage, kHi, kEnd, kStart, kAssistant, kChannel, kFinal, kMessage, kH, kI};
    QCOMPARE(t->decode(reply), std::string("<|channel|>analysis<|message|>hi<|end|><|start|>assistant<|channel|>final<|message|>hi"));
    // Parsed as tokens where a template wrote them (markup), as before.
    const std::string prompt = "<|start|>hi<|channel|>hi";
    const std::vector<TextSpan> markup = {{0, 9}, {11, 22}};
    QCOMPARE(t->encode_markup(prompt, markup), (std::vector<int32_t>{kStart, kHi, kChannel, kHi}));
  }

  void otherVocabulariesKeepEndAsTheirEndOfTurn() {
    const auto t = vocabulary(false);
    QVERIFY(t->is_eog(kEnd));
    QCOMPARE(t->eog_ids(), (std::vector<int32_t>{kEnd, kEndOfText}));
    for (int32_t id : {kStart, kEnd, kMessage, kChannel}) {
      QCOMPARE(t->token_to_piece(id), std::string());
      QVERIFY(!t->always_rendered(id));
    }
  }
};

QTEST_APPLESS_MAIN(TestHarmonyVocab)
#include "test_harmony_vocab.moc"
