// What a GGUF is, from its header: the real models at hand, fixtures of other architectures,
// split and broken files, and files that are not regular (a FIFO must not hang the scan).
#include <sys/stat.h>

#include <QTemporaryDir>
#include <QtTest>

#include <cstring>

#include "engine/common/error.h"
#include "engine/model/model.h"
#include "models/model_summary.h"
#include "tests/support/model_fixtures.h"
#include "tests/support/test_env.h"

using namespace pagedchat;
using namespace pagedchat::models;

class ModelSummaryTest : public QObject {
  Q_OBJECT
 private slots:
  void theDefaultModel() {
    PC_REQUIRE_ENV(path, "PAGEDCHAT_TEST_MODEL");
    const ModelSummary s = summarize_model(path);
    QCOMPARE(s.architecture, std::string("llama"));
    QCOMPARE(s.quantization, std::string("Q4_1"));
    QCOMPARE(s.context_length, uint64_t(8192));
    QCOMPARE(s.parameters, uint64_t(134515008));  // SmolLM2-135M: every tensor's elements
    QCOMPARE(s.file_size, uint64_t(98362432));
    QVERIFY(s.has_chat_template);
    QVERIFY(s.supported);
    QVERIFY(s.problem.empty());
    QCOMPARE(format_parameters(s.parameters), std::string("135M"));
  }

  void gemmaIsReadAndRunsHere() {
    PC_REQUIRE_ENV(path, "PAGEDCHAT_TEST_GEMMA");
    const ModelSummary s = summarize_model(path);
    QCOMPARE(s.architecture, std::string("gemma3"));
    QCOMPARE(s.quantization, std::string("Q4_K_M"));
    QCOMPARE(s.context_length, uint64_t(32768));
    QCOMPARE(s.name, std::string("Gemma 3 270m"));
    QVERIFY(s.supported);
    QVERIFY(s.problem.empty());
  }

  void fixturesOfEachVerdict_data() {
    QTest::addColumn<QString>("architecture");
    QTest::addColumn<QString>("tokenizer");
    QTest::addColumn<uint>("splits");
    QTest::addColumn<QString>("problem");
    QTest::newRow("llama") << "llama" << "gpt2" << 0u << "";
    QTest::newRow("qwen2") << "qwen2" << "gpt2" << 0u << "";
    QTest::newRow("mistral, sentencepiece") << "mistral" << "llama" << 0u << "";
    QTest::newRow("phi3") << "phi3" << "llama" << 0u << "";
    QTest::newRow("falcon") << "falcon" << "llama" << 0u
                            << "architecture 'falcon' is not supported (llama, mistral, qwen2, qwen3, qwen3moe, gemma3, phi3, smollm3, granite and gpt-oss are)";
    QTest::newRow("rwkv tokenizer") << "llama" << "rwkv" << 0u << "tokenizer: model type 'rwkv' (tokenizer.ggml.model) is not supported; supported: 'gpt2' (byte-level BPE), "
                                          "'llama' (sentencepiece)";
    QTest::newRow("split") << "llama" << "gpt2" << 3u
                           << "it is split into 3 files; split GGUFs are not supported yet (join them with llama-gguf-split --merge)";
  }
  void fixturesOfEachVerdict() {
    QFETCH(QString, architecture);
    QFETCH(QString, tokenizer);
    QFETCH(uint, splits);
    QFETCH(QString, problem);
    QTemporaryDir dir;
    test::FixtureModel m;
    m.architecture = architecture.toStdString();
    m.tokenizer = tokenizer.toStdString();
    m.split_count = splits;
    const QString path = dir.filePath("m.gguf");
    test::write_fixture(path, test::fixture_gguf(m));
    const ModelSummary s = summarize_model(path.toStdString());
    QCOMPARE(QString::fromStdString(s.problem), problem);
    QCOMPARE(s.supported, problem.isEmpty());
    QCOMPARE(s.architecture, m.architecture);
    QCOMPARE(s.parameters, uint64_t(8 * 4 + 8 * 2));
    QCOMPARE(s.active_parameters, s.parameters);
    QCOMPARE(s.context_length, uint64_t(2048));
  }

  // A mixture of experts counts all its weights, and of its experts' only those a token uses.
  void aMixtureOfExpertsSaysWhatATokenUses() {
    QTemporaryDir dir;
    test::FixtureModel m;
    m.architecture = "qwen3moe";
    m.experts = 4;
    const QString path = dir.filePath("moe.gguf");
    test::write_fixture(path, test::fixture_gguf(m));
    const ModelSummary s = summarize_model(path.toStdString());
    QVERIFY2(s.supported, s.problem.c_str());
    QCOMPARE(s.parameters, uint64_t(8 * 4 + 8 * 2 + 8 * 4 * 4));
    QCOMPARE(s.active_parameters, uint64_t(8 * 4 + 8 * 2 + 8 * 4));
  }

  // A template that cannot finish a short conversation is said before a load (issue 46); one
  // that refuses it (raise_exception) or fails on it is not: other conversations may render.
  void aTemplateThatDoesNotFinishDoesNotRunHere_data() {
    QTest::addColumn<QString>("source");
    QTest::addColumn<QString>("problem");
    QTest::newRow("loops in loops")
        << "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
        << "the model's chat template does not finish: the template ran ";
    QTest::newRow("2^40 macro calls")
        << "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}"
        << "the model's chat template does not finish: the template ran ";
    QTest::newRow("refuses") << "{{ raise_exception('no') }}" << "";
    QTest::newRow("fails") << "{{ messages[0].content + 1 }}" << "";
    QTest::newRow("renders") << "{% for m in messages %}{{ m.content }}{% endfor %}" << "";
  }
  void aTemplateThatDoesNotFinishDoesNotRunHere() {
    QFETCH(QString, source);
    QFETCH(QString, problem);
    QTemporaryDir dir;
    test::FixtureModel m;
    m.chat_template_source = source.toStdString();
    const QString path = dir.filePath("m.gguf");
    test::write_fixture(path, test::fixture_gguf(m));
    const ModelSummary s = summarize_model(path.toStdString());
    // Past its steps, or past its 2 s where steps are slow (the sanitizers): either budget.
    if (problem.isEmpty()) QCOMPARE(QString::fromStdString(s.problem), problem);
    else QVERIFY2(QString::fromStdString(s.problem).startsWith(problem), s.problem.c_str());
    QCOMPARE(s.supported, problem.isEmpty());
  }

  // What a load refuses of the vocabulary is said before it, in its words (issue 46: `models
  // info` said "runs here" for files `generate` then refused).
  void aVocabularyALoadRefusesDoesNotRunHere_data() {
    QTest::addColumn<QStringList>("tokens");
    QTest::addColumn<int>("bos");
    QTest::addColumn<QString>("problem");
    QTest::newRow("fewer tokens than embedding rows") << QStringList{"a", "b", "c"} << -1
                                                      << "the tokenizer has 3 tokens but the embedding has 4 rows";
    QTest::newRow("more tokens") << QStringList{"a", "b", "c", "d", "e"} << -1
                                 << "the tokenizer has 5 tokens but the embedding has 4 rows";
    QTest::newRow("BOS outside the vocabulary")
        << QStringList{"a", "b", "c", "d"} << 4
        << "tokenizer: metadata 'tokenizer.ggml.bos_token_id' = 4 is outside the vocabulary of 4 tokens";
    QTest::newRow("BOS the last token") << QStringList{"a", "b", "c", "d"} << 3 << "";
  }
  void aVocabularyALoadRefusesDoesNotRunHere() {
    QFETCH(QStringList, tokens);
    QFETCH(int, bos);
    QFETCH(QString, problem);
    QTemporaryDir dir;
    test::FixtureModel m;
    m.tokens.clear();
    for (const QString& t : tokens) m.tokens.push_back(t.toStdString());
    if (bos >= 0) m.bos_token_id = static_cast<uint32_t>(bos);
    const QString path = dir.filePath("m.gguf");
    test::write_fixture(path, test::fixture_gguf(m));
    const ModelSummary s = summarize_model(path.toStdString());
    QCOMPARE(QString::fromStdString(s.problem), problem);
    QCOMPARE(s.supported, problem.isEmpty());
  }

  // The default model with its BOS id moved past its vocabulary: the summary's problem is the
  // load's error, word for word.
  void theSummarySaysWhatTheLoadSays() {
    PC_REQUIRE_ENV(source, "PAGEDCHAT_TEST_MODEL");
    QFile in(QString::fromStdString(source));
    QVERIFY(in.open(QIODevice::ReadOnly));
    QByteArray bytes = in.readAll();
    const QByteArray key = "tokenizer.ggml.bos_token_id";
    const qsizetype at = bytes.indexOf(key);
    QVERIFY(at > 0);
    uint32_t type = 0;
    std::memcpy(&type, bytes.constData() + at + key.size(), 4);
    QCOMPARE(type, 4u);  // a u32: the value follows its type
    const uint32_t outside = 60000;
    std::memcpy(bytes.data() + at + key.size() + 4, &outside, 4);
    QTemporaryDir dir;
    const QString path = dir.filePath("bos.gguf");
    test::write_fixture(path, bytes);
    const ModelSummary s = summarize_model(path.toStdString());
    QCOMPARE(s.problem, std::string("tokenizer: metadata 'tokenizer.ggml.bos_token_id' = 60000 is outside the "
                                    "vocabulary of 49152 tokens"));
    QVERIFY(!s.supported);
    QVERIFY_THROWS_EXCEPTION(Error, Model::load(path.toStdString()));
    try {
      Model::load(path.toStdString());
    } catch (const Error& e) {
      QVERIFY2(std::string(e.what()).ends_with(": " + s.problem), e.what());
    }
  }

  void quantizationWithoutFileTypeIsTheCommonestWeightType() {
    QTemporaryDir dir;
    test::FixtureModel m;
    m.file_type = ~0u;
    m.chat_template = false;
    m.name = "";
    const QString path = dir.filePath("no-type.gguf");
    test::write_fixture(path, test::fixture_gguf(m));
    const ModelSummary s = summarize_model(path.toStdString());
    QCOMPARE(s.quantization, std::string("F32"));  // 128 bytes of F32 against 32 of F16
    QVERIFY(!s.has_chat_template);
    QCOMPARE(s.name, std::string("no-type"));  // an empty general.name: the file's name
  }

  void fileTypeNames() {
    QCOMPARE(file_type_name(15), std::string("Q4_K_M"));
    QCOMPARE(file_type_name(7), std::string("Q8_0"));
    QCOMPARE(file_type_name(32), std::string("BF16"));
    QCOMPARE(file_type_name(4), std::string());  // retired in llama.cpp
    QCOMPARE(format_bytes(92871040), std::string("92.9 MB"));
    QCOMPARE(format_parameters(1235814400), std::string("1.2B"));
  }

  void unreadableFilesThrowWithoutHanging() {
    QTemporaryDir dir;
    const QString fifo = dir.filePath("pipe.gguf");
    QCOMPARE(::mkfifo(fifo.toLocal8Bit().constData(), 0600), 0);
    QVERIFY_THROWS_EXCEPTION(Error, summarize_model(fifo.toStdString()));
    QVERIFY_THROWS_EXCEPTION(Error, summarize_model(dir.filePath("missing.gguf").toStdString()));
    QVERIFY_THROWS_EXCEPTION(Error, summarize_model(dir.path().toStdString()));
    const QString text = dir.filePath("readme.gguf");
    test::write_fixture(text, "this is not a GGUF file at all");
    QVERIFY_THROWS_EXCEPTION(Error, summarize_model(text.toStdString()));
    // Every prefix of a valid header is refused (the parser checks each count against the file).
    const QByteArray whole = test::fixture_gguf({});
    for (qsizetype n : {4, 8, 24, 100, static_cast<int>(whole.size()) - 1}) {
      const QString cut = dir.filePath(QString("cut%1.gguf").arg(n));
      test::write_fixture(cut, whole.left(n));
      QVERIFY_THROWS_EXCEPTION(Error, summarize_model(cut.toStdString()));
    }
  }
};

QTEST_APPLESS_MAIN(ModelSummaryTest)
#include "test_model_summary.moc"
