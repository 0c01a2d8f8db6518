// The GGUF reader: values of every type read back, the default model's header, and every
// broken file of the corpus (plus random mutations and all truncations of a valid file)
// rejected with an Error that names the problem, never a crash.

#include <QtTest>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "engine/common/error.h"
#include "engine/gguf/gguf_file.h"
#include "support/gguf_builder.h"
#include "support/test_env.h"

using namespace pagedchat;
using pagedchat::test::GgufBuilder;

namespace {
std::vector<uint8_t> sample_file() {
  GgufBuilder b;
  b.add_string("general.architecture", "llama");
  b.add_u32("llama.block_count", 7);
  b.add_i32("some.negative", -5);
  b.add_f32("some.float", 0.25f);
  b.add_bool("some.flag", true);
  b.add_u64("some.big", 1ull << 40);
  b.add_string_array("some.strings", {"a", "", "ü€😀"});
  b.add_f32_array("some.floats", {1.5f, -2.0f});
  b.add_i32_array("some.ints", {3, -4, 5});
  std::vector<uint8_t> w(64 * 2 * 4, 0);
  b.add_tensor("w", 0, {64, 2}, w);
  b.add_tensor("q", 2, {32}, std::vector<uint8_t>(18, 1));
  return b.build();
}
}  // namespace

class TestGguf : public QObject {
  Q_OBJECT
 private slots:
  void readsEveryValueType() {
    auto bytes = sample_file();
    GgufFile f = GgufFile::from_memory(bytes);
    QCOMPARE(f.version(), 3u);
    QCOMPARE(f.get_string("general.architecture"), std::string("llama"));
    QCOMPARE(f.get_uint("llama.block_count"), uint64_t(7));
    QCOMPARE(*f.opt_int("some.negative"), int64_t(-5));
    QCOMPARE(*f.opt_float("some.float"), 0.25);
    QCOMPARE(*f.opt_bool("some.flag"), true);
    QCOMPARE(f.get_uint("some.big"), uint64_t(1) << 40);
    auto strings = f.get_string_array("some.strings");
    QCOMPARE(strings.size(), size_t(3));
    QCOMPARE(std::string(strings[2]), std::string("ü€😀"));
    QCOMPARE(f.get_float_array("some.floats"), (std::vector<float>{1.5f, -2.0f}));
    QCOMPARE(f.get_int_array("some.ints"), (std::vector<int64_t>{3, -4, 5}));
    QVERIFY(!f.opt_string("missing"));
    QCOMPARE(f.tensors().size(), size_t(2));
    const GgufTensorInfo* w = f.find_tensor("w");
    QVERIFY(w);
    QCOMPARE(w->num_bytes, uint64_t(64 * 2 * 4));
    QCOMPARE(w->num_rows(), int64_t(2));
    const GgufTensorInfo* q = f.find_tensor("q");
    QCOMPARE(q->num_bytes, uint64_t(18));
    QCOMPARE(f.tensor_data(*q)[0], uint8_t(1));
    QCOMPARE((f.tensor_data(*q) - bytes.data()) % 32, ptrdiff_t(0));  // aligned within the file
  }

  void readsVersion2() {
    GgufBuilder b;
    b.add_string("general.architecture", "llama");
    b.add_tensor("w", 0, {32}, std::vector<uint8_t>(128, 0));
    auto bytes = b.build(2);
    GgufFile f = GgufFile::from_memory(bytes);
    QCOMPARE(f.version(), 2u);
    QCOMPARE(f.get_string("general.architecture"), std::string("llama"));
    QCOMPARE(f.tensors().size(), size_t(1));
  }

  void wrongTypesAreNamed() {
    auto bytes = sample_file();
    GgufFile f = GgufFile::from_memory(bytes);
    auto expect = [](auto fn, const char* needle) {
      try {
        fn();
        QFAIL("no error");
      } catch (const Error& e) {
        QVERIFY2(std::string(e.what()).find(needle) != std::string::npos, e.what());
      }
    };
    expect([&] { f.get_string("llama.block_count"); }, "'llama.block_count' is uint32, expected a string");
    expect([&] { f.get_uint("some.negative"); }, "negative");
    expect([&] { f.get_uint("missing.key"); }, "'missing.key' is missing");
    expect([&] { f.get_string_array("some.floats"); }, "expected an array of strings");
    expect([&] { f.get_int_array("some.floats"); }, "expected integers");
  }

  void readsTheDefaultModel() {
    std::string path = pagedchat::test::env_path("PAGEDCHAT_TEST_MODEL");
    QVERIFY2(!path.empty(), "PAGEDCHAT_TEST_MODEL is not set");
    GgufFile f = GgufFile::open(path);
    QCOMPARE(f.version(), 3u);
    QCOMPARE(f.get_string("general.architecture"), std::string("llama"));
    QCOMPARE(f.get_uint("llama.block_count"), uint64_t(30));
    QCOMPARE(f.get_uint("llama.embedding_length"), uint64_t(576));
    QCOMPARE(f.tensors().size(), size_t(272));
    QCOMPARE(f.get_string_array("tokenizer.ggml.tokens").size(), size_t(49152));
    const GgufTensorInfo* e = f.find_tensor("token_embd.weight");
    QVERIFY(e);
    QCOMPARE(e->type, GgmlType::Q8_0);
    QCOMPARE(e->shape, (std::vector<int64_t>{576, 49152}));
    QCOMPARE(f.find_tensor("blk.0.attn_q.weight")->type, GgmlType::Q4_1);
  }

  void rejectsEveryFileOfTheBrokenCorpus() {
    std::string dir = pagedchat::test::env_path("PAGEDCHAT_TEST_DATA") + "/gguf_broken/";
    std::ifstream manifest(dir + "manifest.tsv");
    QVERIFY2(manifest.good(), "tests/data/gguf_broken/manifest.tsv is missing");
    std::string line;
    int cases = 0;
    while (std::getline(manifest, line)) {
      auto tab = line.find('\t');
      std::string file = line.substr(0, tab), needle = line.substr(tab + 1);
      try {
        GgufFile::open(dir + file);
        QFAIL(qPrintable(QString::fromStdString(file + " was accepted")));
      } catch (const Error& e) {
        std::string what = e.what();
        QVERIFY2(what.find(needle) != std::string::npos, qPrintable(QString::fromStdString(file + ": " + what)));
        QVERIFY2(what.find(file) != std::string::npos, "the error names the file");
      }
      ++cases;
    }
    QCOMPARE(cases, 30);
    GgufFile good = GgufFile::open(dir + "good.bin");
    QCOMPARE(good.tensors().size(), size_t(1));
  }

  void rejectsEveryTruncation() {
    auto bytes = sample_file();
    for (size_t n = 0; n < bytes.size(); ++n) {
      std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + n);
      QVERIFY_THROWS_EXCEPTION(Error, GgufFile::from_memory(cut));
    }
  }

  // Random byte flips of a valid file either parse or throw Error; each parsed file's
  // tensors lie inside the buffer. (The libFuzzer target in tests/fuzz goes further.)
  void survivesRandomMutations() {
    auto bytes = sample_file();
    std::mt19937 rng(1234);
    int accepted = 0, rejected = 0;
    for (int iter = 0; iter < 20000; ++iter) {
      std::vector<uint8_t> m = bytes;
      int flips = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < flips; ++k) m[rng() % m.size()] = static_cast<uint8_t>(rng());
      try {
        GgufFile f = GgufFile::from_memory(m);
        for (const auto& t : f.tensors()) {
          const uint8_t* p = f.tensor_data(t);
          QVERIFY(p >= m.data() && p + t.num_bytes <= m.data() + m.size());
        }
        ++accepted;
      } catch (const Error&) {
        ++rejected;
      }
    }
    QVERIFY(accepted > 0);
    QVERIFY(rejected > 0);
  }

  void missingFileIsNamed() {
    try {
      GgufFile::open("/nonexistent/model.gguf");
      QFAIL("no error");
    } catch (const Error& e) {
      QVERIFY(std::string(e.what()).find("/nonexistent/model.gguf") != std::string::npos);
    }
  }
};

QTEST_APPLESS_MAIN(TestGguf)
#include "test_gguf.moc"
