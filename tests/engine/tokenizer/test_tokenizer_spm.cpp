// Sentencepiece tokenizer on Gemma 3's vocabulary: every corpus line and the whole corpus
// encode to exactly the ids of the sentencepiece Python library loaded with a ModelProto that
// tests/reference/make_tokenizer_spm.py builds with the library's own protobuf classes (ours
// is written by hand), decode(encode(x)) == x, BOS and special tokens as the metadata says,
// and streamed pieces (byte-fallback tokens included) never split a character.

#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>
#include <memory>

#include "engine/common/error.h"
#include "engine/gguf/gguf_file.h"
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


}  // namespace

class TestTokenizerSpm : public QObject {
  Q_OBJECT

  std::unique_ptr<GgufFile> file_;
  std::unique_ptr<Tokenizer> tok_;
  pagedchat::test::TokenizerReference ref_;

 private slots:
  void initTestCase() {
    const QString model = env("PAGEDCHAT_TEST_GEMMA");
    if (model.isEmpty() || !QFile::exists(model))
      QFAIL("PAGEDCHAT_TEST_GEMMA must name the Gemma 3 GGUF");
    const QString missing = ref_.load(env("PAGEDCHAT_REFERENCE_DIR") + "/tokenizer_spm.json",
                                      env("PAGEDCHAT_TEST_DATA") + "/tokenizer_corpus.txt");
    if (!missing.isEmpty()) QFAIL(qPrintable(missing));

    file_ = std::make_unique<GgufFile>(GgufFile::open(model.toStdString()));
    tok_ = Tokenizer::from_gguf(*file_);
    QCOMPARE(tok_->kind(), std::string_view("spm"));
    QCOMPARE(tok_->num_vocab(), 262144);
  }

  void referenceMatchesCorpus() { QVERIFY(ref_.matches_corpus()); }

  void corpusLinesMatchReference() {
    size_t tokens = 0;
    const QString d = ref_.check_lines(*tok_, &tokens);
    QVERIFY2(d.isEmpty(), qPrintable(d));
    qInfo("SPM: %zu corpus lines, %zu tokens, all equal to the reference", ref_.lines.size(), tokens);
  }

  void wholeCorpusMatchesReference() {
    const QString d = ref_.check_whole(*tok_);
    QVERIFY2(d.isEmpty(), qPrintable(d));
  }

  void decodeRoundTrips() {
    for (const Case& c : ref_.lines) {
      QCOMPARE(tok_->decode(tok_->encode(c.text, false, false)), c.text);
      QCOMPARE(tok_->decode(tok_->encode(c.text, true, true), /*render_special=*/true),
               "<bos>" + c.text);
    }
    QCOMPARE(tok_->decode(tok_->encode(ref_.corpus, false, false)), ref_.corpus);
  }

  void bosAndSpecialTokens() {
    QCOMPARE(tok_->bos_id(), std::optional<int32_t>(2));
    QCOMPARE(tok_->eos_id(), std::optional<int32_t>(1));
    QVERIFY(tok_->add_bos());  // tokenizer.ggml.add_bos_token = true
    QVERIFY(!tok_->add_eos());
    const std::vector<int32_t> plain = tok_->encode("Hello world", false, false);
    std::vector<int32_t> with_bos{2};
    with_bos.insert(with_bos.end(), plain.begin(), plain.end());
    QCOMPARE(tok_->encode("Hello world", true, false), with_bos);

    const int32_t start = *tok_->find_token("<start_of_turn>");
    const int32_t end = *tok_->find_token("<end_of_turn>");
    QCOMPARE(start, 105);
    QCOMPARE(end, 106);
    const std::string turn = "<start_of_turn>user\nHi<end_of_turn>\n";
    // "\n" is a user-defined token (107): matched in both modes; the turn markers only when
    // parsing.
    QCOMPARE(tok_->encode(turn, false, true),
             (std::vector<int32_t>{start, tok_->encode("user", false, false)[0], 107,
                                   tok_->encode("Hi", false, false)[0], end, 107}));
    const std::vector<int32_t> unparsed = tok_->encode(turn, false, false);
    QCOMPARE(std::count(unparsed.begin(), unparsed.end(), start), 0);
    QCOMPARE(std::count(unparsed.begin(), unparsed.end(), 107), 2);
    QCOMPARE(tok_->decode(unparsed), turn);

    QCOMPARE(tok_->token_to_piece(end), std::string());
    QCOMPARE(tok_->token_to_piece(end, true), std::string("<end_of_turn>"));
    QVERIFY(tok_->is_eog(1) && tok_->is_eog(end) && !tok_->is_eog(start));
    QCOMPARE(tok_->eog_ids(), (std::vector<int32_t>{1, 106}));
  }

  void piecesUnescapeSpacesAndBytes() {
    const std::vector<int32_t> ids = tok_->encode(" the", false, false);
    QCOMPARE(ids.size(), size_t(1));
    QCOMPARE(tok_->token_text(ids[0]), std::string_view("\xE2\x96\x81the"));  // "▁the"
    QCOMPARE(tok_->token_to_piece(ids[0]), std::string(" the"));
    const int32_t byte_tab = *tok_->find_token("<0x09>");
    QCOMPARE(tok_->token_to_piece(byte_tab), std::string("\t"));
  }

  void malformedUtf8BecomesReplacementChar() {
    const std::string text = "ok \xFF bad \xE2\x82 end";
    QCOMPARE(tok_->decode(tok_->encode(text, false, false)), sanitize_utf8(text));
  }

  void streamedPiecesNeverSplitACharacter() {
    // Rare characters come out as byte-fallback tokens, one byte each.
    const std::string text =
        "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ꙮ 𓀀𓁐 👨‍👩‍👧‍👦 Привет 世界 🇺🇸 "
        "café";
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
    QVERIFY(partial_pieces > 0);  // byte-fallback pieces were held back and joined
  }

  void encodeSpeed() {
    // Measured and printed, not asserted: the ids are what is checked.
    std::string text;
    while (text.size() < (256u << 10)) text += ref_.corpus;
    QElapsedTimer timer;
    timer.start();
    const std::vector<int32_t> ids = tok_->encode(text, false, true);
    const double seconds = timer.nsecsElapsed() / 1e9;
    QCOMPARE(tok_->decode(ids, true), text);
    qInfo("SPM encode: %.2f MB in %.1f ms = %.2f MB/s (%zu tokens)", text.size() / 1e6,
          seconds * 1e3, text.size() / 1e6 / seconds, ids.size());
  }

  void spaceprefixAddedAndRemoved() {
    // A LLaMA-style file (add_space_prefix defaults to true): "▁" goes before the text and
    // decode takes it off again.
    test::GgufBuilder b;
    b.add_string("tokenizer.ggml.model", "llama");
    std::vector<std::string> tokens{"<unk>",
                                    "<s>",
                                    "</s>",
                                    "\xE2\x96\x81",
                                    "a",
                                    "b",
                                    "\xE2\x96\x81"
                                    "a",
                                    "ab",
                                    "\xE2\x96\x81"
                                    "ab"};
    std::vector<float> scores{0, 0, 0, -1, -2, -3, -4, -5, -6};
    std::vector<int32_t> types{2, 3, 3, 1, 1, 1, 1, 1, 1};
    b.add_string_array("tokenizer.ggml.tokens", tokens);
    b.add_f32_array("tokenizer.ggml.scores", scores);
    b.add_i32_array("tokenizer.ggml.token_type", types);
    b.add_u32("tokenizer.ggml.unknown_token_id", 0);
    b.add_u32("tokenizer.ggml.bos_token_id", 1);
    b.add_u32("tokenizer.ggml.eos_token_id", 2);
    const std::vector<uint8_t> bytes = b.build();
    const auto t = Tokenizer::from_gguf(GgufFile::from_memory(bytes));
    QCOMPARE(t->encode("ab", true, false), (std::vector<int32_t>{1, 8}));
    QCOMPARE(t->encode("ab a", false, false), (std::vector<int32_t>{8, 6}));
    QCOMPARE(t->decode(t->encode("ab a", true, false)), std::string("ab a"));
    QCOMPARE(t->eog_ids(), (std::vector<int32_t>{2}));
  }

  void withoutUnknownTokenIsAnError() {
    test::GgufBuilder b;
    b.add_string("tokenizer.ggml.model", "llama");
    b.add_string_array("tokenizer.ggml.tokens", {"a", "b"});
    const std::vector<uint8_t> bytes = b.build();
    try {
      Tokenizer::from_gguf(GgufFile::from_memory(bytes));
      QFAIL("no Error without an unknown token");
    } catch (const Error& e) {
      QVERIFY2(std::string(e.what()).find("unknown") != std::string::npos, e.what());
    }
  }
};

QTEST_APPLESS_MAIN(TestTokenizerSpm)
#include "test_tokenizer_spm.moc"
