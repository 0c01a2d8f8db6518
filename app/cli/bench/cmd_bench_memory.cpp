// `bench memory`: the synthetic chat workload through the paged KV manager (bookkeeping only,
// no model) and through a contiguous allocator that reserves max_len slots per request.
// Requests are admitted in order, each holding its prompt and its whole output, until the
// next one does not fit the pool; we report how many fit and the share of the reserved
// slots that hold real tokens. With a model (--model, or the default model when it is there),
// also what the pool costs in bytes in each KV element type: a block's bytes, and the tokens a
// GiB holds.

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "app/cli/cli_args.h"
#include "app/cli/commands.h"
#include "app/cli/model_argument.h"
#include "engine/backend/kv_type.h"
#include "models/model_paths.h"
#include "engine/model/model.h"
#include "engine/bench/synthetic_chat.h"
#include "engine/common/error.h"
#include "engine/kv/kv_manager.h"

namespace pagedchat::cli {
namespace {

// Bytes of one token's K and V, all layers, in each KV type; "" when no model is at hand.
std::string kv_bytes_lines(const Args& args, int block_size, int num_blocks, bool json) {
  const std::string given = args.get_or("model", "");
  if (given.empty() && !std::filesystem::exists(default_model_path())) return "";
  const std::unique_ptr<Model> model = Model::load(resolve_model_path(given));
  const ModelConfig& c = model->config();
  std::string out = json ? "\"model\":\"" + c.name + "\",\"kv_bytes_per_token\":{" : "";
  if (!json)
    out = format("KV memory of %s (%d layers, %d KV heads of %d), this pool of %d x %d tokens:\n", c.name.c_str(),
                 c.num_layers, c.num_kv_heads, c.head_dim, num_blocks, block_size);
  bool first = true;
  for (KvType t : {KvType::F32, KvType::F16, KvType::Q8_0}) {
    if (!kv_type_fits(t, c.head_dim)) continue;
    const int64_t token = kv_token_bytes(t, c.num_layers, c.num_kv_heads, c.head_dim);
    if (json)
      out += format("%s\"%s\":%lld", first ? "" : ",", kv_type_name(t), static_cast<long long>(token));
    else
      out += format("  %-5s %8.2f KiB a token, pool %8.1f MiB, a GiB holds %lld tokens\n", kv_type_name(t), token / 1024.0,
                    static_cast<double>(token) * block_size * num_blocks / 1048576.0,
                    static_cast<long long>((1ll << 30) / token));
    first = false;
  }
  return json ? out + "}," : out;
}

}  // namespace

int cmd_bench_memory(const std::vector<std::string>& argv) {
  Args args(argv, {"block-size", "num-blocks", "max-len", "num-requests", "seed", "model"}, {"json"});
  SyntheticChatConfig wc;
  wc.seed = args.get_u64("seed", 1);
  wc.num_requests = args.get_int("num-requests", 2000, 1, 1 << 20);
  const int block_size = args.get_block_size();
  const int num_blocks = args.get_int("num-blocks", 2048, 1, 1 << 24);
  const int max_len = args.get_int("max-len", 2048, 1, 1 << 24);
  if (max_len < wc.prompt_max + wc.output_max)
    fail("--max-len %d is shorter than the longest request (%d tokens)", max_len, wc.prompt_max + wc.output_max);
  const bool json = args.flag("json");
  const std::vector<SyntheticRequest> work = make_synthetic_chat(wc);
  const int64_t pool_slots = static_cast<int64_t>(num_blocks) * block_size;

  // Paged: each admitted request starts through the prefix cache (the shared system prompt's
  // full blocks are held once), then appends the rest of its prompt and its output.
  KvManagerConfig kc;
  kc.num_blocks = num_blocks;
  kc.block_size = block_size;
  KvManager kv(kc);
  int paged_fit = 0;
  int64_t paged_tokens = 0;  // tokens of the admitted sequences, shared ones counted per sequence
  std::vector<int64_t> slots;
  for (const SyntheticRequest& r : work) {
    std::vector<int32_t> tokens = r.prompt;
    tokens.resize(r.prompt.size() + r.output_len, 0);  // the output's ids do not matter here
    PrefixHit hit = kv.find_prefix(r.prompt);
    int32_t rest = static_cast<int32_t>(tokens.size()) - hit.num_tokens;
    if (kv.num_blocks_to_start(hit, rest) > kv.num_available_blocks()) break;
    kv.start(paged_fit, hit);
    slots.clear();
    kv.append(paged_fit, std::span<const int32_t>(tokens).subspan(hit.num_tokens), slots);
    ++paged_fit;
    paged_tokens += static_cast<int64_t>(tokens.size());
  }
  std::string broken = kv.check_invariants();
  if (!broken.empty()) fail("KV manager invariant broken: %s", broken.c_str());
  KvStats ks = kv.stats();
  int64_t paged_reserved = static_cast<int64_t>(ks.num_used_blocks) * block_size;
  double paged_used = paged_reserved ? static_cast<double>(ks.num_tokens_stored) / paged_reserved : 0.0;

  // Contiguous: every request reserves max_len slots, whatever its length.
  int contiguous_fit = static_cast<int>(std::min<int64_t>(pool_slots / max_len, static_cast<int64_t>(work.size())));
  int64_t contiguous_tokens = 0;
  for (int i = 0; i < contiguous_fit; ++i) contiguous_tokens += work[i].prompt.size() + work[i].output_len;
  int64_t contiguous_reserved = static_cast<int64_t>(contiguous_fit) * max_len;
  double contiguous_used = contiguous_reserved ? static_cast<double>(contiguous_tokens) / contiguous_reserved : 0.0;

  if (paged_fit == static_cast<int>(work.size()))
    std::fprintf(stderr, "note: all %d requests fit the paged pool; raise --num-requests to fill it\n", paged_fit);
  if (json) {
    std::printf(
        "{\"bench\":\"memory\",%s\"seed\":%llu,\"block_size\":%d,\"num_blocks\":%d,\"pool_slots\":%lld,\"max_len\":%d,"
        "\"paged\":{\"sequences\":%d,\"tokens\":%lld,\"tokens_stored\":%lld,\"blocks_used\":%d,\"used_share\":%.4f,"
        "\"waste\":%.4f,\"shared_blocks\":%d},"
        "\"contiguous\":{\"sequences\":%d,\"tokens\":%lld,\"reserved_slots\":%lld,\"used_share\":%.4f,\"waste\":%.4f}}\n",
        kv_bytes_lines(args, block_size, num_blocks, true).c_str(), static_cast<unsigned long long>(wc.seed), block_size, num_blocks, static_cast<long long>(pool_slots), max_len,
        paged_fit, static_cast<long long>(paged_tokens), static_cast<long long>(ks.num_tokens_stored),
        ks.num_used_blocks, paged_used, 1.0 - paged_used, ks.num_shared_blocks, contiguous_fit,
        static_cast<long long>(contiguous_tokens), static_cast<long long>(contiguous_reserved), contiguous_used,
        1.0 - contiguous_used);
    return 0;
  }
  std::printf("synthetic chat (seed %llu), pool %d blocks x %d tokens = %lld slots, contiguous max_len %d\n",
              static_cast<unsigned long long>(wc.seed), num_blocks, block_size, static_cast<long long>(pool_slots), max_len);
  std::printf("%-11s %10s %12s %14s %12s %8s\n", "allocator", "sequences", "tokens", "reserved", "used share", "waste");
  std::printf("%-11s %10d %12lld %14lld %11.1f%% %7.1f%%\n", "paged", paged_fit,
              static_cast<long long>(ks.num_tokens_stored), static_cast<long long>(paged_reserved), 100 * paged_used,
              100 * (1 - paged_used));
  std::printf("%-11s %10d %12lld %14lld %11.1f%% %7.1f%%\n", "contiguous", contiguous_fit,
              static_cast<long long>(contiguous_tokens), static_cast<long long>(contiguous_reserved),
              100 * contiguous_used, 100 * (1 - contiguous_used));
  std::printf("paged: %lld tokens of %d sequences in %d blocks (%d shared: the system prompt's full blocks)\n",
              static_cast<long long>(paged_tokens), paged_fit, ks.num_used_blocks, ks.num_shared_blocks);
  std::fputs(kv_bytes_lines(args, block_size, num_blocks, false).c_str(), stdout);
  return 0;
}

}  // namespace pagedchat::cli
