// The backend options as the CLI, the server and the app take them (runtime/backend_args.h):
// every value either accepted with the options it gives, or refused with a sentence naming the
// option, as a usage error (exit 2) or as a backend this machine cannot run (exit 1).

#include <QtTest>

#include "runtime/backend_args.h"

using pagedchat::BackendArgError;
using pagedchat::BackendArgValues;
using pagedchat::check_backend_args;

namespace {
// The message of the refusal, and whether it was a usage error; empty when accepted.
std::pair<QString, bool> refusal(const BackendArgValues& v) {
  try {
    check_backend_args(v);
  } catch (const BackendArgError& e) {
    return {QString::fromStdString(e.what()), e.usage()};
  }
  return {};
}
}  // namespace

class TestBackendArgs : public QObject {
  Q_OBJECT
 private slots:
  void nothingGivenIsTheCpuWithItsDefaultKv() {
    const pagedchat::BackendOptions o = check_backend_args({});
    QCOMPARE(o.name, std::string("cpu"));
    QCOMPARE(o.kv_type, std::string());  // the backend's default (f16)
    QCOMPARE(o.dtype, std::string());
    QCOMPARE(o.gpu_memory_fraction, 0.0);
  }

  void everyCpuKvTypeIsAccepted() {
    QCOMPARE(pagedchat::cpu_kv_types(), (std::vector<std::string>{"f16", "q8_0", "f32"}));
    for (const std::string& t : pagedchat::cpu_kv_types()) QCOMPARE(check_backend_args({"cpu", t, {}, {}}).kv_type, t);
  }

  void badValuesAreUsageErrorsNamingTheOption() {
    const struct {
      BackendArgValues given;
      const char* says;
    } cases[] = {
        {{"gpu", {}, {}, {}}, "--backend: unknown backend 'gpu' (cpu, cuda)"},
        {{{}, "q4", {}, {}}, "--kv-type must be f32, f16 or q8_0 (got 'q4')"},
        {{"cpu", {}, "f16", {}}, "--dtype and --gpu-memory-fraction are for --backend cuda"},
        {{{}, {}, {}, "0.5"}, "--dtype and --gpu-memory-fraction are for --backend cuda"},
        {{"cuda", "q8_0", {}, {}}, "--kv-type must be the cuda --dtype, bf16 or f16 (got 'q8_0')"},
        {{"cuda", {}, "fp8", {}}, "--dtype must be bf16 or f16 (got 'fp8')"},
        {{"cuda", "f16", "bf16", {}}, "--kv-type f16 differs from --dtype bf16: cuda keeps KV in its --dtype"},
        {{"cuda", {}, {}, "2"}, "--gpu-memory-fraction must be a number from 0.01 to 1 (got '2')"},
        {{"cuda", {}, {}, "0.5x"}, "--gpu-memory-fraction must be a number from 0.01 to 1 (got '0.5x')"},
        {{"cuda", {}, {}, ""}, "--gpu-memory-fraction must be a number from 0.01 to 1 (got '')"},
    };
    for (const auto& c : cases) {
      const auto [said, usage] = refusal(c.given);
      QCOMPARE(said, QString::fromLatin1(c.says));
      QVERIFY(usage);
    }
  }

  // Good cuda values pass their checks, then meet this machine: without CUDA or a GPU, a
  // refusal that is not a usage error; with one, the options.
  void goodCudaValuesAreRefusedOnlyByTheMachine() {
    const BackendArgValues good[] = {{"cuda", {}, {}, {}}, {"cuda", "f16", {}, "0.5"}, {"cuda", {}, "f16", {}}};
    for (const BackendArgValues& v : good) {
      if (pagedchat::backend_built("cuda") && pagedchat::cuda_available()) {
        const pagedchat::BackendOptions o = check_backend_args(v);
        QCOMPARE(o.dtype, v.dtype.value_or(v.kv_type.value_or("bf16")));
        QCOMPARE(o.gpu_memory_fraction, v.gpu_memory_fraction ? 0.5 : 0.9);
        continue;
      }
      const auto [said, usage] = refusal(v);
      QVERIFY2(said.startsWith("--backend cuda"), qPrintable(said));
      QVERIFY(!usage);
    }
  }

  void theHelpListsEachOptionOnce() {
    QStringList names;
    for (const pagedchat::BackendArgHelp& h : pagedchat::backend_arg_help()) names << QString::fromLatin1(h.name);
    QCOMPARE(names, (QStringList{"backend", "dtype", "kv-type", "gpu-memory-fraction"}));
  }
};

QTEST_APPLESS_MAIN(TestBackendArgs)
#include "test_backend_args.moc"
