// `bench kv-quality`: what a smaller KV element type costs in the model's predictions. A real
// text (default: the GNU GPL version 3, which Debian ships as /usr/share/common-licenses/GPL-3)
// runs through the model once per KV type, in prefill chunks as a chat's would, with the logits
// of every position kept; each type's next-token distributions are compared with f32 KV's:
// KL(f32 || type) (mean, 99th percentile, max), top-1 agreement, and each type's perplexity.
// --float-activations runs the matmuls on f32 activations instead of the 8-bit ones of the fast
// path, whose rounding turns any small change upstream into a few flipped quanta: with it, what
// is left is the KV type's own cost.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "engine/quantize/next_token_stats.h"
#include "app/cli/cli_args.h"
#include "app/cli/commands.h"
#include "app/cli/model_argument.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/common/error.h"
#include "engine/model/model.h"

namespace pagedchat::cli {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read the text '%s'", path.c_str());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct TypeStats {
  KvType type;
  NextTokenStats s;
};

}  // namespace

int cmd_bench_kv_quality(const std::vector<std::string>& argv) {
  Args args(argv, {"model", "text", "tokens", "threads", "chunk"}, {"json", "float-activations"});
  const cpu::MatmulPrecision precision =
      args.flag("float-activations") ? cpu::MatmulPrecision::kFloatActivations : cpu::MatmulPrecision::kQuantizedActivations;
  auto model = Model::load(resolve_model_path(args.get_or("model", "")));
  const std::string text_path = args.get_or("text", "/usr/share/common-licenses/GPL-3");
  const int want = args.get_int("tokens", 4000, 16, 1 << 20);
  const int threads = args.get_int("threads", 0, 0, 1024);
  const int chunk = args.get_int("chunk", 512, 1, 1 << 16);
  const bool json = args.flag("json");
  const ModelConfig& c = model->config();

  std::vector<int32_t> tokens = model->tokenizer->encode(read_text(text_path), true, false);
  if (static_cast<int>(tokens.size()) < want)
    fail("the text '%s' has %zu tokens, fewer than --tokens %d", text_path.c_str(), tokens.size(), want);
  if (want > c.context_length) fail("--tokens %d is past the model's context of %d", want, c.context_length);
  tokens.resize(want);

  const int block_size = 16;
  const int num_blocks = (want + block_size - 1) / block_size;
  std::vector<int32_t> table(num_blocks);
  for (int i = 0; i < num_blocks; ++i) table[i] = i;
  std::vector<std::unique_ptr<CpuBackend>> backends;
  std::vector<TypeStats> stats;
  for (KvType t : {KvType::F32, KvType::F16, KvType::Q8_0}) {
    backends.push_back(std::make_unique<CpuBackend>(model->weights, threads, t, precision));
    backends.back()->allocate_kv({c.num_layers, c.num_kv_heads, c.head_dim, num_blocks, block_size});
    stats.push_back({t, {}});
  }

  std::vector<std::vector<float>> logits(backends.size());
  std::vector<double> ref, other;
  for (int start = 0; start < want; start += chunk) {
    const int n = std::min(chunk, want - start);
    ForwardBatch batch;
    batch.add_sequence(tokens.data() + start, n, start, table, block_size, false);
    batch.logits_indices.resize(n);
    for (int i = 0; i < n; ++i) batch.logits_indices[i] = i;
    for (size_t b = 0; b < backends.size(); ++b) backends[b]->forward(batch, logits[b]);
    for (int i = 0; i < n; ++i) {
      const int pos = start + i;
      log_softmax(logits[0].data() + static_cast<size_t>(i) * c.vocab_size, c.vocab_size, ref);
      for (size_t b = 0; b < backends.size(); ++b) {
        log_softmax(logits[b].data() + static_cast<size_t>(i) * c.vocab_size, c.vocab_size, other);
        stats[b].s.add(ref, other, pos + 1 < want ? tokens[pos + 1] : -1);
      }
    }
  }

  if (!json)
    std::printf("model %s, text %s, %d tokens, prefill chunks of %d, %s activations,\n"
                "KL(f32 KV || type) of the next-token distribution\n"
                "%6s %12s %12s %12s %10s %12s %14s\n",
                c.name.c_str(), text_path.c_str(), want, chunk,
                precision == cpu::MatmulPrecision::kFloatActivations ? "f32" : "8-bit", "kv", "mean KL", "p99 KL", "max KL", "top-1 same",
                "perplexity", "KV B/token");
  for (TypeStats& t : stats) {
    const NextTokenStats& s = t.s;
    const double mean = s.mean_kl(), p99 = s.quantile_kl(0.99), top1 = s.top1(), ppl = s.perplexity();
    const int64_t token_bytes = kv_token_bytes(t.type, c.num_layers, c.num_kv_heads, c.head_dim);
    if (json)
      std::printf("{\"bench\":\"kv-quality\",\"activations\":\"%s\",\"kv_type\":\"%s\",\"tokens\":%d,\"mean_kl\":%.3e,\"p99_kl\":%.3e,"
                  "\"max_kl\":%.3e,\"top1_agreement\":%.5f,\"perplexity\":%.4f,\"kv_bytes_per_token\":%lld}\n",
                  precision == cpu::MatmulPrecision::kFloatActivations ? "f32" : "8-bit", kv_type_name(t.type), want, mean, p99, s.max_kl(), top1, ppl, static_cast<long long>(token_bytes));
    else
      std::printf("%6s %12.3e %12.3e %12.3e %9.2f%% %12.4f %14lld\n", kv_type_name(t.type), mean, p99, s.max_kl(),
                  100.0 * top1, ppl, static_cast<long long>(token_bytes));
  }
  return 0;
}

}  // namespace pagedchat::cli
