// Beam search on the paged KV: its hypotheses equal a plain Python beam search over the float64
// reference (tests/reference/make_beam_search.py) on a tiny random model; on the real model the
// beams share their blocks (peak blocks held counted against W independent sequences), a beam
// search gives the same hypotheses alone, batched with other requests and under preemption,
// and an abort frees everything with one request_done.

#include <QtTest>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <map>
#include <memory>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/engine/engine.h"
#include "engine/gguf/gguf_file.h"
#include "engine/chat/chat_model.h"
#include "engine/model/model.h"
#include "engine/tokenizer/byte_tokenizer.h"
#include "support/test_env.h"

using namespace pagedchat;

namespace {

struct Hypothesis {
  std::vector<int32_t> tokens;
  double logprob = 0.0;
  std::string reason;
  bool operator==(const Hypothesis& o) const { return tokens == o.tokens && reason == o.reason; }
};

struct Outcome {
  std::map<RequestId, std::vector<Hypothesis>> hyps;  // per request, by rank
  std::map<RequestId, int> done;
  std::map<RequestId, std::string> errors;
  int32_t peak_used_blocks = 0;
  EngineStats stats;
};

Outcome run(Engine& engine, const std::vector<Request>& requests, int abort_after_steps = -1) {
  Outcome out;
  engine.subscribe([&](const EngineEvent& e) {
    if (e.request_done) ++out.done[e.request];
    if (e.kind == EngineEventKind::error) out.errors[e.request] = e.reason;
    if (e.kind != EngineEventKind::token && e.kind != EngineEventKind::finished) return;
    auto& h = out.hyps[e.request];
    if (h.size() <= static_cast<size_t>(e.index)) h.resize(e.index + 1);
    if (e.kind == EngineEventKind::token) h[e.index].tokens.push_back(e.token);
    if (e.kind == EngineEventKind::finished) {
      h[e.index].logprob = e.cumulative_logprob;
      h[e.index].reason = e.reason;
    }
  });
  std::vector<RequestId> ids;
  for (const Request& r : requests) ids.push_back(engine.submit(r));
  int steps = 0;
  while (engine.step()) {
    if (std::string bad = engine.kv().check_invariants(); !bad.empty()) qFatal("KV invariant broken: %s", bad.c_str());
    out.peak_used_blocks = std::max(out.peak_used_blocks, engine.stats().kv.num_used_blocks);
    if (++steps == abort_after_steps)
      for (RequestId id : ids) engine.abort(id);
    if (steps > 20000) qFatal("the engine did not finish");
  }
  out.stats = engine.stats();
  return out;
}

Request beam(const std::vector<int32_t>& prompt, int width, int max_tokens, int n = -1) {
  Request r;
  r.prompt = prompt;
  r.beam_width = width;
  r.n = n < 0 ? width : n;
  r.params.max_tokens = max_tokens;
  return r;
}

}  // namespace

class TestBeamSearch : public QObject {
  Q_OBJECT

  std::unique_ptr<Model> model_;
  ChatModel chat_;  // model_ with its own chat template
  std::unique_ptr<CpuBackend> backend_;

 private slots:
  void initTestCase() {
    PC_REQUIRE_ENV(path, "PAGEDCHAT_TEST_MODEL");
    model_ = Model::load(path);
    chat_ = ChatModel(*model_, ChatModel::own_template(*model_));
    backend_ = std::make_unique<CpuBackend>(model_->weights, 2);
  }

  // The reference cases: the same hypotheses, token for token, in the same order, with the same
  // summed log-probabilities (f32 against float64: within 1e-3 of sums near -30).
  void hypothesesEqualTheReferenceBeamSearch() {
    PC_REQUIRE_ENV(dir, "PAGEDCHAT_REFERENCE_DIR");
    QFile f(QString::fromStdString(dir) + "/beam_search/cases.json");
    QVERIFY2(f.open(QIODevice::ReadOnly), "beam_search/cases.json is missing (reference_make_beam_search runs first)");
    const QJsonObject doc = QJsonDocument::fromJson(f.readAll()).object();
    Model tiny;
    tiny.weights = ModelWeights::load(GgufFile::open(dir + "/beam_search/" + doc["gguf"].toString().toStdString()));
    tiny.tokenizer = std::make_unique<ByteTokenizer>(tiny.weights.config.vocab_size);
    CpuBackend backend(tiny.weights, 2, KvType::F32, cpu::MatmulPrecision::kFloatActivations);
    const QJsonArray cases = doc["cases"].toArray();
    QCOMPARE(cases.size(), 3);
    for (const QJsonValue& v : cases) {
      const QJsonObject c = v.toObject();
      std::vector<int32_t> prompt;
      for (const QJsonValue& t : c["prompt"].toArray()) prompt.push_back(t.toInt());
      const int width = c["width"].toInt();
      EngineConfig config;
      config.block_size = 4;  // many blocks: forks share and copy partial ones often
      Engine engine(tiny, backend, config);
      Outcome out = run(engine, {beam(prompt, width, c["max_tokens"].toInt())});
      const QJsonArray expected = c["hypotheses"].toArray();
      QCOMPARE(out.hyps[1].size(), static_cast<size_t>(expected.size()));
      QCOMPARE(out.done[1], 1);
      for (int i = 0; i < expected.size(); ++i) {
        std::vector<int32_t> tokens;
        for (const QJsonValue& t : expected[i].toObject()["tokens"].toArray()) tokens.push_back(t.toInt());
        QCOMPARE(out.hyps[1][static_cast<size_t>(i)].tokens, tokens);
        QCOMPARE(out.hyps[1][static_cast<size_t>(i)].reason, std::string("length"));
        const double lp = expected[i].toObject()["logprob"].toDouble();
        QVERIFY2(std::abs(out.hyps[1][static_cast<size_t>(i)].logprob - lp) < 1e-3,
                 qPrintable(QString("width %1, hypothesis %2: %3 against %4").arg(width).arg(i)
                                .arg(out.hyps[1][static_cast<size_t>(i)].logprob).arg(lp)));
      }
      QCOMPARE(out.stats.kv.num_used_blocks, 0);
    }
  }

  // W beams hold the prompt's blocks once and their common prefixes once: the peak of blocks in
  // use stays below what W sequences of the same length hold apart.
  void beamsShareTheirBlocks() {
    const std::vector<int32_t> prompt = chat_.encode_chat({{"user", "Write one sentence about the ocean."}});
    for (int width : {4, 8}) {
      const int max_tokens = 24;
      EngineConfig config;
      Engine engine(*model_, *backend_, config);
      Outcome out = run(engine, {beam(prompt, width, max_tokens)});
      QCOMPARE(out.done[1], 1);
      QVERIFY(!out.hyps[1].empty());
      const int32_t per_sequence = (static_cast<int32_t>(prompt.size()) + max_tokens + 15) / 16;
      qInfo("width %d: peak %d blocks in use, %d for %d independent sequences", width, out.peak_used_blocks,
            width * per_sequence, width);
      QVERIFY(out.peak_used_blocks < width * per_sequence);
      QVERIFY(out.peak_used_blocks >= per_sequence);
      QCOMPARE(out.stats.kv.num_used_blocks, 0);
      // The hypotheses are ranked: summed log-probability over length, best first.
      for (size_t i = 1; i < out.hyps[1].size(); ++i) {
        const auto score = [](const Hypothesis& h) {
          return h.logprob / static_cast<double>(h.tokens.size() + (h.reason == "stop" ? 1 : 0));
        };
        QVERIFY(score(out.hyps[1][i - 1]) >= score(out.hyps[1][i]));
      }
    }
  }

  // Alone, batched with a plain request and another beam search, and in a pool so small that
  // sequences are preempted: the same hypotheses.
  void sameHypothesesBatchedAndPreempted() {
    const std::vector<int32_t> a = chat_.encode_chat({{"user", "Name a colour."}});
    const std::vector<int32_t> b = chat_.encode_chat({{"user", "What is two plus two?"}});
    Request plain;
    plain.prompt = b;
    plain.params.max_tokens = 16;
    auto alone = [&](const Request& r) {
      Engine engine(*model_, *backend_, EngineConfig{});
      return run(engine, {r}).hyps[1];
    };
    const auto ha = alone(beam(a, 3, 16)), hb = alone(beam(b, 4, 12, 2)), hp = alone(plain);
    for (int32_t blocks : {0, 8}) {
      EngineConfig config;
      config.num_blocks = blocks;
      Engine engine(*model_, *backend_, config);
      Outcome out = run(engine, {beam(a, 3, 16), plain, beam(b, 4, 12, 2)});
      QCOMPARE(out.hyps[1], ha);
      QCOMPARE(out.hyps[2], hp);
      QCOMPARE(out.hyps[3], hb);
      QCOMPARE(out.hyps[3].size(), size_t(2));
      for (RequestId id : {1, 2, 3}) QCOMPARE(out.done[id], 1);
      if (blocks) QVERIFY(out.stats.num_preempted > 0);
      QCOMPARE(out.stats.kv.num_used_blocks, 0);
    }
  }

  void abortFreesEveryBeamAndBadRequestsAreRefused() {
    const std::vector<int32_t> a = chat_.encode_chat({{"user", "Tell me a story."}});
    Engine engine(*model_, *backend_, EngineConfig{});
    Outcome out = run(engine, {beam(a, 4, 64)}, 5);
    QCOMPARE(out.done[1], 1);
    QCOMPARE(out.stats.kv.num_used_blocks, 0);
    Request too_many = beam(a, 2, 8, 3);
    Request too_wide = beam(a, 33, 8, 1);
    Request parked = beam(a, 2, 8);
    parked.park_when_done = true;
    Engine again(*model_, *backend_, EngineConfig{});
    Outcome bad = run(again, {too_many, too_wide, parked});
    QVERIFY2(bad.errors[1].find("more than the beam width") != std::string::npos, bad.errors[1].c_str());
    QVERIFY2(bad.errors[2].find("beam_width must be") != std::string::npos, bad.errors[2].c_str());
    QVERIFY2(bad.errors[3].find("parks no sequence") != std::string::npos, bad.errors[3].c_str());
    for (RequestId id : {1, 2, 3}) QCOMPARE(bad.done[id], 1);
  }
};

QTEST_APPLESS_MAIN(TestBeamSearch)
#include "test_beam_search.moc"
