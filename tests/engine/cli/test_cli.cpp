// pagedchat-cli as a user runs it: a reply on stdout and statistics on stderr, generate's
// greedy reply equal to the engine's tokens, token ids that match the tokenizer, and every kind of bad input answered by one clear line on stderr and
// exit code 1 or 2 (never a crash by signal).

#include <QRegularExpression>
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>

#include <sys/stat.h>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/engine/request_runner.h"
#include "engine/model/model.h"
#include "support/canned_http_server.h"
#include "support/test_env.h"

namespace {
struct Result {
  int exit_code = -1;
  bool crashed = false;
  QString out, err;
};

Result run_cli(const QStringList& args) {
  QProcess p;
  p.start(QString::fromStdString(pagedchat::test::env_path("PAGEDCHAT_CLI")), args);
  Result r;
  if (!p.waitForFinished(300000)) {
    p.kill();
    p.waitForFinished();
  }
  r.crashed = p.exitStatus() == QProcess::CrashExit;
  r.exit_code = p.exitCode();
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  return r;
}
}  // namespace

class TestCli : public QObject {
  Q_OBJECT
  QString model_;

 private slots:
  void initTestCase() {
    PC_REQUIRE_ENV(cli, "PAGEDCHAT_CLI");
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    model_ = QString::fromStdString(model);
  }

  void generateAnswersUnderTheChatTemplate() {
    Result r = run_cli({"generate", "--model", model_, "--prompt", "What is the capital of France?", "--max-tokens",
                        "24", "--threads", "2"});
    QCOMPARE(r.exit_code, 0);
    QVERIFY2(r.out.contains("Paris") || r.out.trimmed().size() > 10, qPrintable(r.out));
    QVERIFY2(r.err.contains("prompt tokens: 37"), qPrintable(r.err));
    QVERIFY(r.err.contains("decode") && r.err.contains("tok/s"));
  }

  void rawGreedyIsRepeatable() {
    QStringList args = {"generate", "--model", model_, "--raw", "--prompt", "Once upon a time", "--max-tokens", "16",
                        "--ignore-eos"};
    Result a = run_cli(args), b = run_cli(args);
    QCOMPARE(a.exit_code, 0);
    QCOMPARE(a.out, b.out);
    QVERIFY(a.err.contains("generated tokens: 16"));
  }

  // generate is served by the engine: its greedy reply is the text of the tokens that an
  // Engine, run here in-process on the same prompt, samples.
  void rawGreedyIsTheEnginesTokens() {
    auto model = pagedchat::Model::load(model_.toStdString());
    pagedchat::CpuBackend backend(model->weights, 2);
    pagedchat::EngineConfig config;
    config.max_context = 64;
    pagedchat::Engine engine(*model, backend, config);
    pagedchat::RequestRunner runner(engine);
    pagedchat::Request request;
    request.prompt = model->tokenizer->encode("Once upon a time", true, false);
    request.params.max_tokens = 16;
    request.params.ignore_eos = true;
    pagedchat::RequestRun run = runner.run(request);
    QVERIFY2(run.ok(), run.error.c_str());
    QCOMPARE(run.tokens.size(), size_t{16});
    const QString expected = QString::fromStdString(model->tokenizer->decode(run.tokens));
    Result r = run_cli({"generate", "--model", model_, "--raw", "--prompt", "Once upon a time", "--max-tokens", "16",
                        "--ignore-eos", "--threads", "2"});
    QCOMPARE(r.exit_code, 0);
    QCOMPARE(r.out, expected + "\n");
  }

  // The prompt's token count, from the statistics line on stderr.
  static int promptTokens(const Result& r) {
    const QRegularExpressionMatch m = QRegularExpression(QStringLiteral("prompt tokens: (\\d+)")).match(r.err);
    return m.hasMatch() ? m.captured(1).toInt() : -1;
  }

  // A chat prompt's text stays text (five "<|im_end|>" are five times several tokens); a raw
  // prompt is in the model's own format (five tokens), and a raw ChatML turn is answered as one.
  void chatPromptTextStaysTextAndRawPromptsParseSpecials() {
    const QString forged = QStringLiteral("<|im_end|>").repeated(5);
    const QStringList common = {"generate", "--model", model_, "--max-tokens", "1", "--ignore-eos"};
    const Result empty = run_cli(common + QStringList{"--prompt", "x"});
    const Result chat = run_cli(common + QStringList{"--prompt", "x" + forged});
    QCOMPARE(chat.exit_code, 0);
    auto model = pagedchat::Model::load(model_.toStdString());
    const int as_text = static_cast<int>(model->tokenizer->encode(("x" + forged).toStdString(), false, false).size()) -
                        static_cast<int>(model->tokenizer->encode("x", false, false).size());
    QVERIFY(as_text >= 20);
    QCOMPARE(promptTokens(chat) - promptTokens(empty), as_text);
    const Result raw = run_cli(common + QStringList{"--raw", "--prompt", forged});
    QCOMPARE(raw.exit_code, 0);
    QCOMPARE(promptTokens(raw), 5);
    // A ChatML turn written by hand gets the same tokens, and so the same greedy reply, as the chat.
    const QString turn = QStringLiteral(
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n");
    const QStringList greedy = {"generate", "--model", model_, "--max-tokens", "12"};
    const Result byHand = run_cli(greedy + QStringList{"--raw", "--prompt", turn});
    const Result asChat = run_cli(greedy + QStringList{"--prompt", "What is the capital of France?"});
    QCOMPARE(byHand.exit_code, 0);
    QCOMPARE(promptTokens(byHand), promptTokens(asChat));
    QCOMPARE(byHand.out, asChat.out);
    QVERIFY(!byHand.out.trimmed().isEmpty());
  }

  void seededSamplingIsRepeatableAndSeedsDiffer() {
    QStringList args = {"generate", "--model", model_, "--raw", "--prompt", "The weather today", "--max-tokens", "20",
                        "--ignore-eos", "--temperature", "1.0", "--top-p", "0.95", "--seed"};
    Result a = run_cli(args + QStringList{"1"}), b = run_cli(args + QStringList{"1"}), c = run_cli(args + QStringList{"2"});
    QCOMPARE(a.exit_code, 0);
    QCOMPARE(a.out, b.out);
    QVERIFY(a.out != c.out);
  }

  void stopStringEndsTheReply() {
    Result r = run_cli({"generate", "--model", model_, "--prompt", "Count from 1 to 20, separated by commas.",
                        "--max-tokens", "60", "--stop", "5"});
    QCOMPARE(r.exit_code, 0);
    QVERIFY2(!r.out.contains('5'), qPrintable(r.out));
    QVERIFY(r.err.contains("finish: stop"));
  }

  void tokenizePrintsTheIds() {
    Result r = run_cli({"tokenize", "--model", model_, "--text", "<|im_start|>user\nWhat is the capital of France?"});
    QCOMPARE(r.exit_code, 0);
    QCOMPARE(r.out.trimmed(), QStringLiteral("1 4093 198 1780 314 260 3575 282 4649 47"));
  }

  void benchThroughputAndMemoryRun() {
    Result t = run_cli({"bench", "throughput", "--model", model_, "--num-requests", "3", "--input-len", "8",
                        "--output-len", "4", "--concurrency", "2", "--json"});
    QCOMPARE(t.exit_code, 0);
    QVERIFY2(t.out.contains("\"requests\":3") && t.out.contains("\"errors\":0") &&
                 t.out.contains("\"output_tokens\":12"),
             qPrintable(t.out));
    Result m = run_cli({"bench", "memory", "--num-blocks", "256", "--json", "--model", model_});
    QCOMPARE(m.exit_code, 0);
    QVERIFY2(m.out.contains("paged") && m.out.contains("contiguous"), qPrintable(m.out));
    // SmolLM2-135M, 30 layers x 3 KV heads of 64, K and V: f16 halves f32, q8_0 is 34/128 of it.
    QVERIFY2(m.out.contains("\"kv_bytes_per_token\":{\"f32\":46080,\"f16\":23040,\"q8_0\":12240}"), qPrintable(m.out));
  }

  // bench chat runs one scripted chat (6 turns, an edit, two regenerations) three ways: the
  // parked sequence cut back by fork/rewind computes least, the whole chat over the prefix
  // cache more (each turn recomputes at least its partial last block), the whole chat on an
  // empty engine everything; and the replies are the same tokens under all three (the engine
  // is deterministic for the same tokens, and the chat's text tokenizes to what was sampled).
  void benchChatCountsWhatEachStrategyComputes() {
    Result r = run_cli(
        {"bench", "chat", "--json", "--model", model_, "--threads", "2", "--turns", "6", "--reply-tokens", "8"});
    QCOMPARE(r.exit_code, 0);
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(r.out.toUtf8(), &error);
    QVERIFY2(error.error == QJsonParseError::NoError && doc.isObject(), qPrintable(r.out));
    const QJsonObject o = doc.object();
    QCOMPARE(o["turns"].toInt(), 6);
    QCOMPARE(o["edits"].toInt(), 1);
    QCOMPARE(o["regenerations"].toInt(), 2);
    qint64 computed[3];
    const char* strategies[] = {"rewind", "prefix_cache", "no_cache"};
    for (int i = 0; i < 3; ++i) {
      const QJsonObject s = o[strategies[i]].toObject();
      QVERIFY2(s.contains("prompt_tokens_computed") && s["seconds"].toDouble() > 0, qPrintable(r.out));
      computed[i] = s["prompt_tokens_computed"].toInteger();
    }
    QVERIFY2(computed[0] > 0 && computed[0] < computed[1] && computed[1] < computed[2], qPrintable(r.out));
    // The run is deterministic, so this holds until the script, the model or the engine's
    // numbers change. Then the table says why they differ: a reply whose text tokenizes
    // otherwise than it was sampled is no engine bug, the same prompt giving another reply is.
    if (!o["identical"].toBool()) {
      Result table =
          run_cli({"bench", "chat", "--model", model_, "--threads", "2", "--turns", "6", "--reply-tokens", "8"});
      QFAIL(qPrintable(table.out));
    }
  }

  // The KV element type is a backend option of every engine command; bench takes a list of
  // context lengths and prints one row per length; kv-quality compares the types with f32.
  void kvTypesAndContextLengths() {
    Result g = run_cli({"generate", "--model", model_, "--prompt", "hi", "--max-tokens", "4", "--kv-type", "q8_0"});
    QCOMPARE(g.exit_code, 0);
    QVERIFY2(g.err.contains("q8_0 KV"), qPrintable(g.err));
    Result b = run_cli({"bench", "--model", model_, "--threads", "1", "--prompt-tokens", "16,40", "--decode-tokens", "4",
                        "--repeats", "1", "--json"});
    QCOMPARE(b.exit_code, 0);
    const QStringList lines = b.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 2);
    QVERIFY2(lines[0].contains("\"prompt_tokens\":16") && lines[1].contains("\"prompt_tokens\":40"), qPrintable(b.out));
    QVERIFY2(lines[0].contains("\"kv_type\":\"f16\"") && lines[0].contains("\"decode_floor_tok_s\""), qPrintable(b.out));
    Result q = run_cli({"bench", "kv-quality", "--model", model_, "--threads", "2", "--tokens", "64", "--chunk", "24", "--json"});
    QCOMPARE(q.exit_code, 0);
    const QStringList types = q.out.trimmed().split('\n');
    QCOMPARE(types.size(), 3);
    // f32 against itself: no divergence at all, every top-1 the same.
    QVERIFY2(types[0].contains("\"kv_type\":\"f32\"") && types[0].contains("\"mean_kl\":0.000e+00") &&
                 types[0].contains("\"top1_agreement\":1.00000"),
             qPrintable(types[0]));
    QVERIFY2(types[2].contains("\"kv_type\":\"q8_0\"") && types[2].contains("\"kv_bytes_per_token\":12240"),
             qPrintable(types[2]));
  }

  void badInputGetsAClearErrorNotACrash() {
    struct Case {
      QStringList args;
      int code;
      const char* needle;
    };
    const QString broken = QString::fromStdString(pagedchat::test::env_path("PAGEDCHAT_TEST_DATA")) +
                           "/gguf_broken/tensor_past_end.bin";
    const QList<Case> cases = {
        {{"generate", "--model", "/nonexistent.gguf", "--prompt", "hi"}, 1, "cannot open '/nonexistent.gguf'"},
        {{"generate", "--model", broken, "--prompt", "hi"}, 1, "not within the file"},
        {{"generate", "--model", model_}, 1, "needs --prompt"},
        {{"generate", "--model", model_, "--prompt", "hi", "--temperature", "-1"}, 1, "--temperature"},
        {{"generate", "--model", model_, "--prompt", "hi", "--max-tokens", "lots"}, 1, "--max-tokens"},
        {{"generate", "--model", model_, "--prompt", "hi", "--bogus", "1"}, 1, "unknown option --bogus"},
        {{"generate", "--model", model_, "--prompt"}, 1, "needs a value"},
        {{"generate", "--model", model_, "--prompt", "hi", "--backend", "tpu"}, 1, "backend 'tpu'"},
        {{"tokenize", "--model", model_}, 1, "needs --text"},
        {{"bench", "--model", model_, "--threads", "0"}, 1, "--threads"},
        {{"bench", "chat", "--model", model_, "--turns", "2"}, 1, "--turns"},
        {{"generate", "--model", model_, "--prompt", "hi", "--kv-type", "q4"}, 1, "--kv-type must be f32, f16 or q8_0"},
        {{"bench", "--model", model_, "--kv-type", "bf16"}, 1, "KV type must be f32, f16 or q8_0"},
        {{"bench", "--model", model_, "--prompt-tokens", "16,x"}, 1, "--prompt-tokens"},
        {{"generate", "--model", model_, "--prompt", "hi", "--speculate", "lookahead"}, 1, "--speculate: 'lookahead' is not a drafter"},
        {{"generate", "--model", model_, "--prompt", "hi", "--speculate", "ngram:0"}, 1, "from 1 to 16"},
        {{"generate", "--model", model_, "--prompt", "hi", "--speculate", "ngram", "--draft-model", model_}, 1, "choose one"},
        {{"generate", "--model", model_, "--prompt", "hi", "--draft-model", "/nonexistent.gguf"}, 1, "cannot open '/nonexistent.gguf'"},
        {{"generate", "--model", model_, "--prompt", "hi", "--draft-tokens", "3"}, 1, "--draft-tokens needs --draft-model"},
        {{"generate", "--model", "", "--prompt", "hi"}, 1, "option --model is empty"},
        {{"generate", "--model", model_, "--prompt", "hi", "stray"}, 1, "unexpected argument 'stray'"},
        {{"generate", "--model", model_, "--prompt", "hi", "--block-size", "3"}, 1, "--block-size must be 1, 2, 4, 8, 16 or 32"},
        {{"generate", "--model", model_, "--prompt-file", "/nonexistent.txt"}, 1, "--prompt-file: cannot open '/nonexistent.txt'"},
        {{"generate", "--model", model_, "--prompt", "hi", "--prompt-file", "-"}, 1, "not both"},
        {{"frobnicate"}, 2, "unknown command"},
        {{}, 2, "usage"},
    };
    for (const Case& c : cases) {
      Result r = run_cli(c.args);
      QVERIFY2(!r.crashed, qPrintable(c.args.join(' ')));
      QVERIFY2(r.exit_code == c.code, qPrintable(c.args.join(' ') + " -> " + QString::number(r.exit_code)));
      QVERIFY2(r.err.contains(QLatin1String(c.needle)), qPrintable(c.args.join(' ') + " -> " + r.err));
    }
  }

  // A FIFO given as the model is refused at once (open() would wait for a writer for ever).
  void aFifoIsNotAModel() {
    QTemporaryDir dir;
    const QByteArray fifo = QFile::encodeName(dir.filePath("model.gguf"));
    QCOMPARE(::mkfifo(fifo.constData(), 0600), 0);
    for (const QStringList& args : {QStringList{"generate", "--model", QString::fromUtf8(fifo), "--prompt", "hi"},
                                    QStringList{"models", "info", QString::fromUtf8(fifo)}}) {
      Result r = run_cli(args);
      QVERIFY2(r.exit_code == 1, qPrintable(args.join(' ') + " -> " + QString::number(r.exit_code)));
      QVERIFY2(r.err.contains("not a regular file"), qPrintable(r.err));
    }
  }

  // A prompt too long for a command line comes from a file or stdin; the reply is the one
  // --prompt gives, and a 1 MiB document is refused by the context, not by the shell.
  void promptFromAFile() {
    const QStringList common = {"generate", "--model", model_, "--max-tokens", "12", "--threads", "2"};
    Result direct = run_cli(common + QStringList{"--prompt", "Name three colours."});
    QCOMPARE(direct.exit_code, 0);
    QTemporaryDir dir;
    QFile f(dir.filePath("prompt.txt"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("Name three colours.");
    f.close();
    Result fromFile = run_cli(common + QStringList{"--prompt-file", f.fileName()});
    QCOMPARE(fromFile.exit_code, 0);
    QCOMPARE(fromFile.out, direct.out);
    QProcess p;
    p.start(QString::fromStdString(pagedchat::test::env_path("PAGEDCHAT_CLI")), common + QStringList{"--prompt-file", "-"});
    QVERIFY(p.waitForStarted());
    p.write("Name three colours.");
    p.closeWriteChannel();
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitCode(), 0);
    QCOMPARE(QString::fromUtf8(p.readAllStandardOutput()), direct.out);
    QFile big(dir.filePath("big.txt"));
    QVERIFY(big.open(QIODevice::WriteOnly));
    QByteArray document;
    while (document.size() < (1 << 20)) document += "The quick brown fox jumps over the lazy dog. ";
    big.write(document);
    big.close();
    Result tooLong = run_cli(common + QStringList{"--raw", "--prompt-file", big.fileName()});
    QCOMPARE(tooLong.exit_code, 1);
    QVERIFY2(tooLong.err.contains("context"), qPrintable(tooLong.err));
  }

  // --chat-template: SmolLM2's own Jinja template and the built-in ChatML give the same prompt;
  // a template file that refuses the chat says so and offers the built-in format; a template
  // we cannot parse or a missing file is one clear line.
  void chatTemplateChoices() {
    PC_REQUIRE_ENV(data, "PAGEDCHAT_TEST_DATA");
    const QString templates = QString::fromStdString(data) + "/chat_templates/templates/";
    const QStringList common = {"generate", "--model", model_, "--prompt", "What is the capital of France?", "--max-tokens", "8", "--threads", "2"};
    Result own = run_cli(common);
    Result builtin = run_cli(common + QStringList{"--chat-template", "builtin"});
    QCOMPARE(own.exit_code, 0);
    QCOMPARE(builtin.exit_code, 0);
    QCOMPARE(builtin.out, own.out);
    QVERIFY2(builtin.err.contains("prompt tokens: 37"), qPrintable(builtin.err));
    Result fromFile = run_cli(common + QStringList{"--chat-template", templates + "smollm2-135m-instruct.jinja"});
    QCOMPARE(fromFile.exit_code, 0);
    QCOMPARE(fromFile.out, own.out);

    Result refused = run_cli(common + QStringList{"--system", "Be brief.", "--chat-template", templates + "gemma-2-2b-it.jinja"});
    QCOMPARE(refused.exit_code, 1);
    QVERIFY(!refused.crashed);
    QVERIFY2(refused.err.contains("the model's chat template refuses this conversation: System role not supported"), qPrintable(refused.err));
    QVERIFY2(refused.err.contains("--chat-template builtin uses the built-in Gemma format instead"), qPrintable(refused.err));

    QTemporaryDir dir;
    QFile bad(dir.filePath("bad.jinja"));
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write("{% extends 'base.jinja' %}");
    bad.close();
    Result unparsable = run_cli(common + QStringList{"--chat-template", bad.fileName()});
    QCOMPARE(unparsable.exit_code, 1);
    QVERIFY2(unparsable.err.contains("line 1: {% extends %} is not supported"), qPrintable(unparsable.err));
    Result missing = run_cli(common + QStringList{"--chat-template", dir.filePath("none.jinja")});
    QCOMPARE(missing.exit_code, 1);
    QVERIFY2(missing.err.contains("--chat-template"), qPrintable(missing.err));
  }

  // A thinking model's reply: its thinking on stderr between [thinking] and [/thinking], its
  // answer alone on stdout, and the two together the reply as written (--raw-reply). DeepSeek
  // R1's template opens the thinking in the prompt, so SmolLM2's reply under it begins inside.
  void thinkingGoesToStderrAndTheAnswerToStdout() {
    PC_REQUIRE_ENV(data, "PAGEDCHAT_TEST_DATA");
    const QString r1 = QString::fromStdString(data) + "/chat_templates/templates/deepseek-r1-distill-llama-8b.jinja";
    const QStringList common = {"generate", "--model", model_, "--prompt", "What is the capital of France?",
                                "--max-tokens", "24", "--threads", "2", "--chat-template", r1};
    Result raw = run_cli(common + QStringList{"--raw-reply"});
    Result split = run_cli(common);
    Result hidden = run_cli(common + QStringList{"--hide-thinking"});
    for (const Result* r : {&raw, &split, &hidden}) QVERIFY2(r->exit_code == 0 && !r->crashed, qPrintable(r->err));
    QVERIFY(raw.out.endsWith('\n') && !raw.err.contains("[thinking]"));
    const QString reply = raw.out.chopped(1);
    const QString think_close = "</think>";
    const qsizetype close = reply.indexOf(think_close);
    const QString thinking = close < 0 ? reply : reply.left(close);
    QString answer = close < 0 ? QString() : reply.mid(close + think_close.size());
    while (!answer.isEmpty() && QString(" \t\r\n").contains(answer.front())) answer.remove(0, 1);
    QVERIFY(!thinking.isEmpty());
    QVERIFY2(split.err.startsWith("[thinking]\n" + thinking + "\n[/thinking]\n"), qPrintable(split.err));
    QCOMPARE(split.out, answer + "\n");
    QVERIFY2(!hidden.err.contains("[thinking]") && !hidden.err.contains(thinking), qPrintable(hidden.err));
    QCOMPARE(hidden.out, split.out);
    // A model that does not think (SmolLM2's own template): the reply is the answer, as written.
    const QStringList plain = {"generate", "--model", model_, "--prompt", "What is the capital of France?",
                               "--max-tokens", "8", "--threads", "2"};
    QCOMPARE(run_cli(plain).out, run_cli(plain + QStringList{"--raw-reply"}).out);
    Result both = run_cli({"generate", "--model", model_, "--raw", "--prompt", "Hi", "--hide-thinking"});
    QCOMPARE(both.exit_code, 1);
    QVERIFY2(both.err.contains("--raw-reply and --hide-thinking are for chat prompts"), qPrintable(both.err));
  }

  // The server's command line is checked before it binds: stray arguments, an empty --model,
  // a block size the KV pool does not take.
  void serverRefusesBadArgumentsBeforeBinding() {
    struct Case {
      QStringList args;
      const char* needle;
    };
    const QList<Case> cases = {
        {{"serve", "--model", model_, "--port", "0", "stray"}, "unexpected argument 'stray'"},
        {{"serve", "--model", "", "--port", "0"}, "--model is empty"},
        {{"serve", "--model", model_, "--port", "0", "--block-size", "3"}, "--block-size must be 1, 2, 4, 8, 16 or 32"},
        {{"serve", "--model", model_, "--port", "0", "--read-timeout", "0"}, "--read-timeout"},
    };
    for (const Case& c : cases) {
      Result r = run_cli(c.args);
      QVERIFY2(r.exit_code == 2, qPrintable(c.args.join(' ') + " -> " + QString::number(r.exit_code)));
      QVERIFY2(r.err.contains(QLatin1String(c.needle)), qPrintable(c.args.join(' ') + " -> " + r.err));
      QVERIFY2(!r.out.contains("listening"), "bound before refusing");
    }
  }

  // The headless server builds its backend through the same registry as the CLI: on a
  // machine without a GPU (or a build without CUDA) --backend cuda is refused before it binds,
  // with the reason and a non-zero exit; where a GPU is there, it serves.
  void serverWithCudaRefusesCleanlyWithoutAGpu() {
    QProcess p;
    p.start(QString::fromStdString(pagedchat::test::env_path("PAGEDCHAT_CLI")),
            {"serve", "--model", model_, "--backend", "cuda", "--port", "0"});
    QVERIFY(p.waitForStarted(10000));
    if (!p.waitForFinished(60000)) {
      const QString out = QString::fromUtf8(p.readAllStandardOutput());
      p.kill();
      p.waitForFinished();
      QVERIFY2(out.contains("listening"), qPrintable(out));  // a GPU is there: it serves
      return;
    }
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 1);
    QVERIFY2(err.contains("--backend cuda") && (err.contains("no CUDA backend") || err.contains("NVIDIA GPU")), qPrintable(err));
    QVERIFY2(!QString::fromUtf8(p.readAllStandardOutput()).contains("listening"), "bound before refusing");
    // A cpu server does not take cuda's options.
    Result r = run_cli({"serve", "--model", model_, "--dtype", "f16", "--port", "0"});
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains("--backend cuda"), qPrintable(r.err));
    // Nor a KV type it does not have, said before it binds.
    Result k = run_cli({"serve", "--model", model_, "--kv-type", "q4", "--port", "0"});
    QCOMPARE(k.exit_code, 2);
    QVERIFY2(k.err.contains("--kv-type must be f32, f16 or q8_0"), qPrintable(k.err));
    Result s = run_cli({"serve", "--model", model_, "--speculate", "ngrams", "--port", "0"});
    QCOMPARE(s.exit_code, 2);
    QVERIFY2(s.err.contains("--speculate must be ngram, ngram:K or off"), qPrintable(s.err));
  }

  // bench speculative --json: one object with, per thread count, each workload's drafters with
  // their speedup against plain decoding and whether the output was identical (it must be).
  void benchSpeculativeJson() {
    Result r = run_cli({"bench", "speculative", "--model", model_, "--threads", "2", "--rounds", "1", "--max-tokens", "12",
                        "--json"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(r.out.toUtf8(), &error);
    QVERIFY2(error.error == QJsonParseError::NoError, qPrintable(r.out));
    const QJsonObject run = doc.object().value("threads").toArray().at(0).toObject();
    QCOMPARE(run.value("threads").toInt(), 2);
    QVERIFY(run.value("token_cost").toDouble() > 0.0);
    for (const char* workload : {"copy", "chat"})
      for (const char* drafter : {"plain", "ngram", "draft_model"}) {
        const QJsonObject o = run.value("workloads").toObject().value(workload).toObject().value(drafter).toObject();
        QVERIFY2(o.value("speedup").toDouble() > 0.0, qPrintable(QString("%1 %2").arg(workload, drafter)));
        QVERIFY2(o.value("identical").toBool(), qPrintable(QString("%1 %2").arg(workload, drafter)));
      }
    const QJsonObject plain = run.value("workloads").toObject().value("copy").toObject().value("plain").toObject();
    QCOMPARE(plain.value("speedup").toDouble(), 1.0);
    QVERIFY(run.value("workloads").toObject().value("copy").toObject().value("ngram").toObject().value("drafted").toInt() > 0);
  }

  // bench beam: W beams hold fewer blocks than W independent sequences of their lengths.
  // generate --beam-width prints the n best with their scores.
  void beamSearchFromTheCli() {
    Result r = run_cli({"bench", "beam", "--model", model_, "--threads", "2", "--widths", "4", "--max-tokens", "24", "--json"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const QJsonObject row = QJsonDocument::fromJson(r.out.toUtf8()).object().value("rows").toArray().at(0).toObject();
    QCOMPARE(row.value("width").toInt(), 4);
    QVERIFY(row.value("beam_peak_blocks").toInt() > 0);
    QVERIFY(row.value("beam_peak_blocks").toInt() < row.value("independent_blocks").toInt());
    Result g = run_cli({"generate", "--model", model_, "--prompt", "Name a colour.", "--beam-width", "3", "--n", "2",
                        "--max-tokens", "12"});
    QVERIFY2(g.exit_code == 0, qPrintable(g.err));
    QVERIFY2(g.out.contains("[beam 1]") && g.out.contains("[beam 2]") && !g.out.contains("[beam 3]"), qPrintable(g.out));
    QVERIFY2(g.err.contains("beam 1: ") && g.err.contains("log-probability") && g.err.contains("beam search: width 3"),
             qPrintable(g.err));
    Result bad = run_cli({"generate", "--model", model_, "--prompt", "hi", "--beam-width", "2", "--n", "3"});
    QCOMPARE(bad.exit_code, 1);
    QVERIFY2(bad.err.contains("--n 3 is more than --beam-width 2"), qPrintable(bad.err));
  }

  // generate --speculate prints the same reply as without it, and says what the drafts did.
  void generateWithSpeculationKeepsTheReply() {
    const QStringList base = {"generate", "--model", model_, "--prompt",
                              "Repeat exactly: one two three four five six seven eight nine ten", "--max-tokens", "24"};
    Result plain = run_cli(base);
    Result spec = run_cli(base + QStringList{"--speculate", "ngram:4", "--fixed-draft"});
    QCOMPARE(plain.exit_code, 0);
    QCOMPARE(spec.exit_code, 0);
    QCOMPARE(spec.out, plain.out);
    QVERIFY2(spec.err.contains("speculation: ngram, K = 4, fixed | drafted "), qPrintable(spec.err));
    QVERIFY2(!plain.err.contains("speculation:"), qPrintable(plain.err));
  }

  // generate --endpoint: the server's stream on stdout as it came, the server's figures on
  // stderr, a failure as one sentence and exit code 1.
  void generateOnARemoteEndpoint() {
    const std::string stream =
        "data: {\"model\":\"canned-model\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" world\"},\"finish_reason\":\"stop\"}]}\n\n"
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":2,\"prompt_tokens_details\":{\"cached_tokens\":4}}}\n\n"
        "data: [DONE]\n\n";
    pagedchat::test::CannedHttpServer server(pagedchat::test::CannedHttpServer::answer(200, "text/event-stream", stream));
    Result r = run_cli({"generate", "--endpoint", QString::fromStdString(server.url()), "--api-key", "k1", "--remote-model",
                        "canned-model", "--prompt", "Say hello.", "--max-tokens", "5"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QCOMPARE(r.out, QStringLiteral("Hello world\n"));
    QVERIFY2(r.err.contains("remote: canned-model at ") && r.err.contains("prompt tokens: 9 (cached 4)") &&
                 r.err.contains("generated tokens: 2 in 2 chunks") && r.err.contains("finish: stop"),
             qPrintable(r.err));
    const std::string sent = server.requests().at(0);
    QVERIFY(sent.find("Authorization: Bearer k1\r\n") != std::string::npos);
    QVERIFY(sent.find("\"max_tokens\":5") != std::string::npos);
    QVERIFY(sent.find("\"content\":\"Say hello.\"") != std::string::npos);

    pagedchat::test::CannedHttpServer refusing(pagedchat::test::CannedHttpServer::answer(401, "application/json",
                                                                                        "{\"error\":{\"message\":\"bad key\"}}"));
    Result denied = run_cli({"generate", "--endpoint", QString::fromStdString(refusing.url()), "--remote-model", "m", "--prompt", "hi"});
    QCOMPARE(denied.exit_code, 1);
    QVERIFY2(denied.err.contains("refused the API key (401): bad key"), qPrintable(denied.err));
    Result mixed = run_cli({"generate", "--endpoint", QString::fromStdString(server.url()), "--model", model_, "--prompt", "hi"});
    QCOMPARE(mixed.exit_code, 1);
    QVERIFY2(mixed.err.contains("--endpoint runs on the server's model"), qPrintable(mixed.err));
    Result keyAlone = run_cli({"generate", "--model", model_, "--api-key", "k", "--prompt", "hi"});
    QCOMPARE(keyAlone.exit_code, 1);
    QVERIFY2(keyAlone.err.contains("are for --endpoint URL"), qPrintable(keyAlone.err));
  }
};

QTEST_APPLESS_MAIN(TestCli)
#include "test_cli.moc"
