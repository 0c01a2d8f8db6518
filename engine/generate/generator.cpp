// The CLI's single-stream loop: chunked prefill, then one decode step per token.
#include "engine/generate/generator.h"

#include <algorithm>
#include <chrono>

#include "engine/common/error.h"
#include "engine/kv/block_allocator.h"
#include "engine/sample/sampler.h"
#include "engine/sample/reply_text.h"

namespace pagedchat {
namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Generator::Generator(const Model& model, Backend& backend, GeneratorConfig config)
    : model_(model), backend_(backend), config_(config) {
  if (config_.max_context <= 0) config_.max_context = model.config().context_length;
  const ModelConfig& c = model.config();
  int num_blocks = (config_.max_context + config_.block_size - 1) / config_.block_size;
  backend_.allocate_kv({c.num_layers, c.num_kv_heads, c.head_dim, num_blocks, config_.block_size});
}

GenerationResult Generator::generate(std::span<const int32_t> prompt, const SamplingParams& params,
                                     const std::function<bool(std::string_view)>& on_text, bool keep_logits,
                                     const std::function<bool()>& should_stop) {
  if (std::string err = params.validate(); !err.empty()) throw Error("bad sampling parameters: " + err);
  if (prompt.empty()) throw Error("the prompt is empty");
  const int vocab = model_.config().vocab_size;
  for (int32_t t : prompt)
    if (t < 0 || t >= vocab) fail("prompt token %d is outside the vocabulary (%d)", t, vocab);
  const int bs = config_.block_size;
  if (static_cast<int>(prompt.size()) >= config_.max_context)
    fail("the prompt has %zu tokens; the context holds %d", prompt.size(), config_.max_context);

  BlockAllocator blocks(backend_.kv_shape().num_blocks);
  std::vector<int32_t> table;
  auto ensure_capacity = [&](int tokens) {
    while (static_cast<int>(table.size()) * bs < tokens) {
      auto b = blocks.allocate();
      if (!b) fail("the KV pool is full");
      table.push_back(*b);
    }
  };

  GenerationResult r;
  r.prompt_tokens = static_cast<int>(prompt.size());
  std::vector<int32_t> history(prompt.begin(), prompt.end());
  std::vector<float> logits;
  Sampler sampler(params);
  ReplyText reply(params.stop);
  const Tokenizer& tok = *model_.tokenizer;

  // Prefill in chunks; only the last chunk asks for logits.
  auto t0 = std::chrono::steady_clock::now();
  for (int start = 0; start < r.prompt_tokens; start += config_.max_batch_tokens) {
    int n = std::min(config_.max_batch_tokens, r.prompt_tokens - start);
    ensure_capacity(start + n);
    ForwardBatch batch;
    batch.add_sequence(prompt.data() + start, n, start, table, bs, start + n == r.prompt_tokens);
    backend_.forward(batch, logits);
  }
  r.prompt_seconds = seconds_since(t0);

  auto t1 = std::chrono::steady_clock::now();
  bool cancelled = false;
  for (;;) {
    if (keep_logits) r.logits.push_back(logits);
    int32_t next = sampler.sample(logits, history);
    if (!params.ignore_eos && tok.is_eog(next)) {
      r.finish_reason = "stop";
      break;
    }
    r.tokens.push_back(next);
    history.push_back(next);
    std::string text = reply.push(tok.token_to_piece(next));
    r.text += text;
    if (on_text && !text.empty() && !on_text(text)) cancelled = true;
    if (reply.stopped()) {
      r.finish_reason = "stop";
      break;
    }
    if (cancelled || (should_stop && should_stop())) {
      r.finish_reason = "cancelled";
      break;
    }
    if (static_cast<int>(r.tokens.size()) >= params.max_tokens ||
        static_cast<int>(history.size()) >= config_.max_context) {
      r.finish_reason = "length";
      break;
    }
    int pos = static_cast<int>(history.size()) - 1;
    ensure_capacity(pos + 1);
    ForwardBatch batch;
    batch.add_sequence(&next, 1, pos, table, bs, true);
    backend_.forward(batch, logits);
  }
  std::string tail = reply.flush();
  r.text += tail;
  if (on_text && !tail.empty()) on_text(tail);
  r.decode_seconds = seconds_since(t1);
  return r;
}

}  // namespace pagedchat
