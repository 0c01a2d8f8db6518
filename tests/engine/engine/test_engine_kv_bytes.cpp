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
  KvElementBackend(Backend& inner, int bytes, const ModelConfig& m) : inner_(inner), bytes_(bytes), m_(m) {}
  std::string_view name() const override { return "kv-element-double"; }
  void allocate_kv(const KvCacheShape& shape) override { inner_.allocate_kv(shape); }
  const KvCacheShape& kv_shape() const override { return inner_.kv_shape(); }
  uint64_t kv_block_bytes(int32_t block_size) const override {
    return 2ull * m_.num_layers * block_size * m_.num_kv_heads * m_.head_dim * bytes_;
  }
  void copy_blocks(std::span<const BlockCopy> copies) override { inner_.copy_blocks(copies); }
  void forward(const ForwardBatch& batch, std::vector<float>& logits) override { inner_.forward(batch, logits); }

 private:
  Backend& inner_;
  int bytes_;
  ModelConfig m_;
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
    CpuBackend cpu(model_->weights, 1, KvType::F32);
    KvElementBackend half(cpu, 2, model_->config());
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
    QCOMPARE(kv_blocks_for_budget(block4, 10 * block4), 10);
    QCOMPARE(kv_blocks_for_budget(block4 / 2, 10 * block4), 20);  // 2-byte elements: twice the blocks
    QCOMPARE(kv_blocks_for_budget(block4, 1), 1);                 // never an empty pool
    // Assembled from options: the CPU backend's KV type decides.
    EngineOptions o;
    o.backend.threads = 1;
    o.backend.kv_type = "f32";
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

  // The CPU pool's element type sets a block's bytes, so the blocks a budget buys, and the
  // engine's figures follow it; the CUDA pool keeps its 16-bit type and refuses q8_0.
  void theKvTypeSetsTheBlockBytes() {
    // tiny: 2 layers, 2 KV heads of 64; a 16-token block, K and V.
    QCOMPARE(CpuBackend(model_->weights, 1, KvType::F32).kv_block_bytes(16), uint64_t{32768});
    QCOMPARE(CpuBackend(model_->weights, 1, KvType::F16).kv_block_bytes(16), uint64_t{16384});
    QCOMPARE(CpuBackend(model_->weights, 1, KvType::Q8_0).kv_block_bytes(16), uint64_t{8704});  // 68-byte rows
    std::shared_ptr<const Model> model = make_random_model("tiny", 3, 1);
    EngineOptions o;
    o.backend.threads = 1;
    o.engine.block_size = 16;
    o.kv_budget_bytes = 10 * 32768;
    struct Want {
      const char* type;
      int32_t blocks;
      uint64_t block_bytes;
    };
    for (const Want& w : {Want{"f32", 10, 32768}, Want{"f16", 20, 16384}, Want{"q8_0", 37, 8704}}) {
      const std::string type = w.type;
      o.backend.kv_type = type;
      AssembledEngine a = assemble_engine(model, o);
      QCOMPARE(a.num_blocks, w.blocks);
      QCOMPARE(a.engine->stats().kv.bytes_per_block, w.block_bytes);
      QVERIFY2(a.backend_description.find(type + " KV") != std::string::npos, a.backend_description.c_str());
    }
    o.backend.kv_type = "q4";
    QVERIFY_THROWS_EXCEPTION(Error, assemble_engine(model, o));
    o.backend.name = "cuda";
    o.backend.kv_type = "q8_0";
    try {
      assemble_engine(model, o);
      QFAIL("assembled");
    } catch (const Error& e) {
      const char* why = backend_built("cuda") ? "16-bit type" : "no cuda backend";
      QVERIFY2(std::string(e.what()).find(why) != std::string::npos, e.what());
    }
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
