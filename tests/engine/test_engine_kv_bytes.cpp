// The engine's memory figures follow the backend's own KV element size, not an assumed f32:
// with a backend whose K/V elements take 2 bytes (as the CUDA backend's f16/bf16 pool does),
// "bytes saved by sharing" is the shared references times a block's bytes at 2 bytes an
// element; and the one place that turns a memory budget into blocks (runtime/) counts blocks
// at the backend's size too.

#include <QtTest>

#include <memory>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/engine/engine.h"
#include "engine/model/random_model.h"
#include "runtime/engine_assembly.h"

using namespace pagedchat;

namespace {

// The CPU backend's forward pass under a backend that says its KV elements are `bytes` wide.
class KvElementBackend final : public Backend {
 public:
  KvElementBackend(Backend& inner, int bytes) : inner_(inner), bytes_(bytes) {}
  std::string_view name() const override { return "kv-element-double"; }
  void allocate_kv(const KvCacheShape& shape) override { inner_.allocate_kv(shape); }
  const KvCacheShape& kv_shape() const override { return inner_.kv_shape(); }
  int kv_element_bytes() const override { return bytes_; }
  void copy_blocks(std::span<const BlockCopy> copies) override { inner_.copy_blocks(copies); }
  void forward(const ForwardBatch& batch, std::vector<float>& logits) override { inner_.forward(batch, logits); }

 private:
  Backend& inner_;
  int bytes_;
};

}  // namespace

class TestEngineKvBytes : public QObject {
  Q_OBJECT

  std::unique_ptr<Model> model_ = make_random_model("tiny", 3, 1);

  // Two requests with the same 3-block prompt: the second shares the first's full blocks.
  KvStats sharedStats(Backend& backend) {
    EngineConfig c;
    c.block_size = 4;
    c.num_blocks = 64;
    Engine engine(*model_, backend, c);
    Request r;
    for (int i = 0; i < 13; ++i) r.prompt.push_back(10 + i);
    r.params.max_tokens = 8;
    r.params.ignore_eos = true;
    engine.submit(r);
    engine.step();  // the first prompt computed and indexed
    engine.submit(r);
    engine.step();  // the second finds its 3 full blocks in the prefix cache
    return engine.stats().kv;
  }

 private slots:
  void bytesSavedBySharingCountTheBackendsElementSize() {
    CpuBackend cpu(model_->weights, 1);
    KvElementBackend half(cpu, 2);
    const KvStats s = sharedStats(half);
    QCOMPARE(s.num_shared_refs, int64_t{3});
    const ModelConfig& m = model_->config();
    const uint64_t blockBytes = 2ull * m.num_layers * 4 * m.num_kv_heads * m.head_dim * 2;
    QCOMPARE(s.bytes_saved_by_sharing, 3 * blockBytes);
    // The same run on the f32 CPU backend: twice the bytes for the same sharing.
    QCOMPARE(sharedStats(cpu).bytes_saved_by_sharing, 2 * s.bytes_saved_by_sharing);
  }

  void aBudgetBecomesBlocksAtTheBackendsElementSize() {
    const ModelConfig& m = model_->config();
    const int64_t block4 = 2ll * m.num_layers * 16 * m.num_kv_heads * m.head_dim * 4;
    QCOMPARE(kv_blocks_for_budget(m, 16, 4, 10 * block4), 10);
    QCOMPARE(kv_blocks_for_budget(m, 16, 2, 10 * block4), 20);  // 2-byte elements: twice the blocks
    QCOMPARE(kv_blocks_for_budget(m, 16, 4, 1), 1);              // never an empty pool
    // Assembled from options: the CPU backend's f32 elements decide.
    EngineOptions o;
    o.backend.threads = 1;
    o.engine.block_size = 16;
    o.kv_budget_bytes = 7 * block4 + 5;
    std::shared_ptr<const Model> model = make_random_model("tiny", 3, 1);
    AssembledEngine a = assemble_engine(model, o);
    QCOMPARE(a.num_blocks, 7);
    QCOMPARE(a.engine->stats().kv.num_blocks, 7);
    QCOMPARE(a.max_context, model->config().context_length);
    // No budget and no count: room for num_contexts full contexts.
    o.kv_budget_bytes = 0;
    o.num_contexts = 3;
    o.engine.max_context = 64;
    a = assemble_engine(model, o);
    QCOMPARE(a.num_blocks, 3 * 4);
  }

  void optionsOfAnotherBackendAreRefused() {
    EngineOptions o;
    o.backend.dtype = "f16";  // a cuda option on the cpu backend
    std::shared_ptr<const Model> model = make_random_model("tiny", 3, 1);
    try {
      assemble_engine(model, o);
      QFAIL("assembled");
    } catch (const Error& e) {
      QVERIFY2(std::string(e.what()).find("cuda") != std::string::npos, e.what());
    }
    o = {};
    o.backend.name = "tpu";
    QVERIFY_THROWS_EXCEPTION(Error, assemble_engine(model, o));
    if (!backend_built("cuda") || !cuda_available()) {
      o = {};
      o.backend.name = "cuda";
      try {
        assemble_engine(model, o);
        QFAIL("assembled without a GPU");
      } catch (const Error& e) {
        QVERIFY2(std::string(e.what()).find("cuda") != std::string::npos, e.what());
      }
    }
  }
};

QTEST_APPLESS_MAIN(TestEngineKvBytes)
#include "test_engine_kv_bytes.moc"
