// Byte-level BPE tokenizer on SmolLM2's vocabulary: every corpus line and the whole corpus
// encode to exactly the ids of the Hugging Face tokenizers library (reference built by
// tests/reference/make_tokenizer_bpe.py), decode gives the text back, special tokens are
// parsed only when asked, streamed pieces never split a character, and broken metadata is
// refused with an Error naming it.

#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>
#include <cstdlib>
#include <memory>

#include "engine/common/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/pretokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/utf8.h"
#include "support/gguf_builder.h"
#include "support/tokenizer_reference.h"

using namespace pagedchat;
using pagedchat::test::diff_ids;
using pagedchat::test::to_ids;
using Case = pagedchat::test::TokenizerCase;

namespace {

QString env(const char* name) { return QString::fromLocal8Bit(qgetenv(name)); }


std::unique_ptr<Tokenizer> tokenizer_from(const std::vector<uint8_t>& bytes) {
  return Tokenizer::from_gguf(GgufFile::from_memory(bytes));
}

}  // namespace

class TestTokenizerBpe : public QObject {
  Q_OBJECT

  std::unique_ptr<GgufFile> file_;
  std::unique_ptr<Tokenizer> tok_;
  pagedchat::test::TokenizerReference ref_;
  QJsonObject words_;  // pre type -> the reference's word split of the corpus

 private slots:
  void initTestCase() {
    const QString model = env("PAGEDCHAT_TEST_MODEL");
    if (model.isEmpty() || !QFile::exists(model))
      QFAIL("PAGEDCHAT_TEST_MODEL must name the SmolLM2 GGUF");
    const QString missing = ref_.load(env("PAGEDCHAT_REFERENCE_DIR") + "/tokenizer_bpe.json",
                                      env("PAGEDCHAT_TEST_DATA") + "/tokenizer_corpus.txt");
    if (!missing.isEmpty()) QFAIL(qPrintable(missing));
    words_ = ref_.root["words"].toObject();

    file_ = std::make_unique<GgufFile>(GgufFile::open(model.toStdString()));
    tok_ = Tokenizer::from_gguf(*file_);
    QCOMPARE(tok_->kind(), std::string_view("bpe"));
    QCOMPARE(tok_->num_vocab(), 49152);
  }

  void referenceMatchesCorpus() { QVERIFY(ref_.matches_corpus()); }

  void corpusLinesMatchReference() {
    size_t tokens = 0;
    const QString d = ref_.check_lines(*tok_, &tokens);
    QVERIFY2(d.isEmpty(), qPrintable(d));
    qInfo("BPE: %zu corpus lines, %zu tokens, all equal to the reference", ref_.lines.size(), tokens);
  }

  void wholeCorpusMatchesReference() {
    const QString d = ref_.check_whole(*tok_);
    QVERIFY2(d.isEmpty(), qPrintable(d));
  }

  void decodeRoundTrips() {
    for (const Case& c : ref_.lines) {
      QCOMPARE(tok_->decode(tok_->encode(c.text, false, false)), c.text);
      QCOMPARE(tok_->decode(tok_->encode(c.text, false, true), /*render_special=*/true), c.text);
    }
    QCOMPARE(tok_->decode(tok_->encode(ref_.corpus, false, false)), ref_.corpus);
  }

  void malformedUtf8RoundTripsByteForByte() {
    const std::string text = "ok \x80 bad \xE2\x82 cut \xF0\x9F\x98 \xED\xA0\x80 end \xC3";
    QVERIFY(!is_valid_utf8(text));
    QCOMPARE(tok_->decode(tok_->encode(text, false, false)), text);
  }

  void bytesWithoutATokenAreDropped() {
    // SmolLM2's alphabet lacks the tokens of 0x04 and 0xFF (and its unknown token is
    // <|endoftext|>, a control token): such bytes are dropped, never turned into it.
    QCOMPARE(tok_->decode(tok_->encode("a\x04"
                                       "b \xFF c",
                                       false, false)),
             std::string("ab  c"));
    const std::vector<int32_t> ids = tok_->encode(
        "a\x04"
        "b",
        false, false);
    QCOMPARE(std::count(ids.begin(), ids.end(), 0), 0);
  }

  void specialTokensParsedOnlyWhenAsked() {
    const int32_t im_start = *tok_->find_token("<|im_start|>");
    const int32_t im_end = *tok_->find_token("<|im_end|>");
    QCOMPARE(im_start, 1);
    QCOMPARE(im_end, 2);
    const std::string chat = "<|im_start|>user\nHi there<|im_end|>\n";
    const std::vector<int32_t> parsed = tok_->encode(chat, false, true);
    QCOMPARE(parsed.front(), im_start);
    QCOMPARE(std::count(parsed.begin(), parsed.end(), im_end), 1);
    // The text between is tokenized as if alone.
    std::vector<int32_t> expected{im_start};
    for (int32_t id : tok_->encode("user\nHi there", false, false)) expected.push_back(id);
    expected.push_back(im_end);
    for (int32_t id : tok_->encode("\n", false, false)) expected.push_back(id);
    QCOMPARE(parsed, expected);

    const std::vector<int32_t> plain = tok_->encode(chat, false, false);
    QCOMPARE(std::count(plain.begin(), plain.end(), im_start), 0);
    QCOMPARE(std::count(plain.begin(), plain.end(), im_end), 0);
    QCOMPARE(tok_->decode(plain), chat);

    // Control tokens render only when asked.
    QCOMPARE(tok_->token_to_piece(im_start), std::string());
    QCOMPARE(tok_->token_to_piece(im_start, true), std::string("<|im_start|>"));
    QVERIFY(tok_->is_control(im_start));
    QVERIFY(!tok_->is_control(tok_->encode("Hi", false, false)[0]));
  }

  void bosEosAndEndOfGeneration() {
    QCOMPARE(tok_->bos_id(), std::optional<int32_t>(1));
    QCOMPARE(tok_->eos_id(), std::optional<int32_t>(2));
    QVERIFY(!tok_->add_bos());  // tokenizer.ggml.add_bos_token = false
    QVERIFY(!tok_->add_eos());
    QCOMPARE(tok_->encode("Hello", true, false), tok_->encode("Hello", false, false));
    // EOS is <|im_end|>; <|endoftext|> ends generation too.
    QCOMPARE(tok_->eog_ids(), (std::vector<int32_t>{0, 2}));
    QVERIFY(tok_->is_eog(2) && tok_->is_eog(0) && !tok_->is_eog(1));
    QVERIFY(!tok_->is_eog(tok_->encode("Hello", false, false)[0]));
  }

  void lookups() {
    const int32_t id = tok_->encode(" Hello", false, false)[0];
    QCOMPARE(tok_->token_text(id), std::string_view("\xC4\xA0Hello"));  // "ĠHello" in the alphabet
    QCOMPARE(tok_->token_to_piece(id), std::string(" Hello"));
    QCOMPARE(tok_->find_token("\xC4\xA0Hello"), std::optional<int32_t>(id));
    QCOMPARE(tok_->find_token("no such token text"), std::nullopt);
    QCOMPARE(tok_->token_to_piece(-1), std::string());
    QCOMPARE(tok_->token_to_piece(tok_->num_vocab()), std::string());
    QCOMPARE(tok_->token_text(tok_->num_vocab()), std::string_view());
  }

  void streamedPiecesNeverSplitACharacter() {
    // Multi-byte text whose characters span several byte-level tokens.
    const std::string text =
        "Привет 世界 👨‍👩‍👧‍👦 🇺🇸 café ∑√π — «ok» 日本語テキスト "
        "🥲🔥";
    const std::vector<int32_t> ids = tok_->encode(text, false, false);
    Utf8StreamDecoder stream;
    std::string joined;
    int partial_pieces = 0;
    for (int32_t id : ids) {
      const std::string piece = tok_->token_to_piece(id);
      if (!is_valid_utf8(piece)) ++partial_pieces;
      const std::string chunk = stream.push(piece);
      QVERIFY2(is_valid_utf8(chunk), "a chunk ended inside a UTF-8 character");
      joined += chunk;
    }
    joined += stream.flush();
    QCOMPARE(joined, text);
    QVERIFY(partial_pieces > 0);  // the test did exercise held-back bytes
  }

  void encodeSpeed() {
    // Measured and printed, not asserted: the ids are what is checked.
    std::string text;
    while (text.size() < (1u << 20)) text += ref_.corpus;
    std::vector<int32_t> ids;
    QElapsedTimer timer;
    timer.start();
    ids = tok_->encode(text, false, true);
    const double seconds = timer.nsecsElapsed() / 1e9;
    QCOMPARE(tok_->decode(ids, true), text);
    qInfo("BPE encode: %.2f MB in %.1f ms = %.1f MB/s (%zu tokens)", text.size() / 1e6,
          seconds * 1e3, text.size() / 1e6 / seconds, ids.size());
  }

  void mergesApplyByRank() {
    // Tiny vocabulary: "b c" outranks "a b", so "abc" is a + bc, then a + bc -> abc.
    test::GgufBuilder b;
    b.add_string("tokenizer.ggml.model", "gpt2");
    b.add_string("tokenizer.ggml.pre", "gpt-2");
    b.add_string_array("tokenizer.ggml.tokens", {"a", "b", "c", "ab", "bc", "abc", "<|end|>"});
    b.add_i32_array("tokenizer.ggml.token_type", {1, 1, 1, 1, 1, 1, 3});
    b.add_string_array("tokenizer.ggml.merges", {"b c", "a b", "a bc"});
    b.add_u32("tokenizer.ggml.eos_token_id", 6);
    const auto t = tokenizer_from(b.build());
    QCOMPARE(t->encode("abc", false, false), (std::vector<int32_t>{5}));
    QCOMPARE(t->encode("abab", false, false), (std::vector<int32_t>{3, 3}));
    QCOMPARE(t->encode("cab", false, false), (std::vector<int32_t>{2, 3}));
    QCOMPARE(t->encode("abc<|end|>", false, true), (std::vector<int32_t>{5, 6}));
    QCOMPARE(t->eog_ids(), (std::vector<int32_t>{6}));
  }

  void unknownPreTypeIsAnError() {
    try {
      pre_tokenizer_spec("no-such-pre");
      QFAIL("no Error for an unknown pre type");
    } catch (const Error& e) {
      QVERIFY2(std::string(e.what()).find("'no-such-pre'") != std::string::npos, e.what());
    }
    test::GgufBuilder b;
    b.add_string("tokenizer.ggml.model", "gpt2");
    b.add_string("tokenizer.ggml.pre", "mystery-bpe");
    b.add_string_array("tokenizer.ggml.tokens", {"a", "b", "ab"});
    b.add_string_array("tokenizer.ggml.merges", {"a b"});
    QVERIFY_THROWS_EXCEPTION(Error, tokenizer_from(b.build()));
  }

  void preTokenizersSplitLikeTheReference() {
    // Every pre type the reference knows: PCRE2 and the tokenizers library's Oniguruma agree
    // on each word of the corpus.
    QVERIFY(words_.size() >= 14);
    for (auto it = words_.begin(); it != words_.end(); ++it) {
      const std::string type = it.key().toStdString();
      const PreTokenizer pre(pre_tokenizer_spec(type).patterns);
      std::vector<std::string_view> got;
      pre.split(ref_.corpus, got);
      const QJsonArray want = it.value().toArray();
      size_t k = 0;
      while (k < got.size() && k < static_cast<size_t>(want.size()) &&
             got[k] == want[static_cast<qsizetype>(k)].toString().toStdString())
        ++k;
      const QString msg = QStringLiteral("%1: %2 words, reference %3, first difference at word %4")
                              .arg(it.key())
                              .arg(got.size())
                              .arg(want.size())
                              .arg(k);
      QVERIFY2(k == got.size() && k == static_cast<size_t>(want.size()), qPrintable(msg));
    }
  }

  void everyKnownPreTypeCompiles() {
    for (const char* type : {"default", "gpt-2", "llama-bpe", "qwen2", "smollm", "starcoder",
                             "refact", "falcon", "deepseek-llm", "deepseek-coder", "deepseek-v3",
                             "gpt-4o", "tekken", "poro-chat", "viking", "command-r", "dbrx"}) {
      const PreTokenizer pre(pre_tokenizer_spec(type).patterns);
      std::vector<std::string_view> words;
      const std::string_view text = "Hello world 123 Привет\n\n  x";
      pre.split(text, words);
      std::string joined;
      for (std::string_view w : words) joined += w;
      QVERIFY2(joined == text, type);  // the pieces cover the text exactly
    }
  }

  void brokenMetadataIsAnError() {
    auto expect_error = [](const test::GgufBuilder& b, const char* needle) {
      try {
        tokenizer_from(b.build());
        return QStringLiteral("no Error");
      } catch (const Error& e) {
        return std::string(e.what()).find(needle) != std::string::npos ? QString()
                                                                       : QString(e.what());
      }
    };
    {
      test::GgufBuilder b;
      b.add_string("tokenizer.ggml.model", "wordpiece");
      const QString e = expect_error(b, "'wordpiece'");
      QVERIFY2(e.isEmpty(), qPrintable(e));
    }
    {
      test::GgufBuilder b;
      b.add_string("tokenizer.ggml.model", "gpt2");
      b.add_string("tokenizer.ggml.pre", "gpt-2");
      b.add_string_array("tokenizer.ggml.merges", {"a b"});
      const QString e = expect_error(b, "tokenizer.ggml.tokens");
      QVERIFY2(e.isEmpty(), qPrintable(e));
    }
    {
      test::GgufBuilder b;
      b.add_string("tokenizer.ggml.model", "gpt2");
      b.add_string("tokenizer.ggml.pre", "gpt-2");
      b.add_string_array("tokenizer.ggml.tokens", {"a", "b", "ab"});
      b.add_i32_array("tokenizer.ggml.token_type", {1, 1});
      b.add_string_array("tokenizer.ggml.merges", {"a b"});
      const QString e = expect_error(b, "token_type");
      QVERIFY2(e.isEmpty(), qPrintable(e));
    }
    {
      test::GgufBuilder b;
      b.add_string("tokenizer.ggml.model", "gpt2");
      b.add_string("tokenizer.ggml.pre", "gpt-2");
      b.add_string_array("tokenizer.ggml.tokens", {"a", "b", "ab"});
      b.add_string_array("tokenizer.ggml.merges", {"a b"});
      b.add_u32("tokenizer.ggml.eos_token_id", 7);
      const QString e = expect_error(b, "eos_token_id");
      QVERIFY2(e.isEmpty(), qPrintable(e));
    }
    {
      test::GgufBuilder b;
      b.add_string("tokenizer.ggml.model", "gpt2");
      b.add_string("tokenizer.ggml.pre", "gpt-2");
      b.add_string_array("tokenizer.ggml.tokens", {"a", "b", "ab"});
      b.add_string_array("tokenizer.ggml.merges", {"ab"});
      const QString e = expect_error(b, "merge 0");
      QVERIFY2(e.isEmpty(), qPrintable(e));
    }
  }
};

QTEST_APPLESS_MAIN(TestTokenizerBpe)
#include "test_tokenizer_bpe.moc"
