// Drafters built from options (see speculation_setup.h).
#include "runtime/speculation_setup.h"

#include <algorithm>
#include <charconv>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/common/error.h"
#include "engine/speculative/draft_model_drafter.h"
#include "engine/speculative/ngram_drafter.h"

namespace pagedchat {
namespace {

constexpr int32_t kMaxK = 16;

int32_t parse_k(const std::string& text, const char* what) {
  int32_t k = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), k);
  if (ec != std::errc() || end != text.data() + text.size() || k < 1 || k > kMaxK)
    fail("%s: '%s' is not a number of draft tokens from 1 to %d", what, text.c_str(), kMaxK);
  return k;
}

}  // namespace

void configure_speculation(const SpeculationOptions& o, const Model& target, EngineConfig& config) {
  config.speculation.adaptive = o.adaptive;
  const bool ngram = !o.speculate.empty() && o.speculate != "off";
  if (ngram && o.speculate != "ngram" && o.speculate.rfind("ngram:", 0) != 0)
    fail("--speculate: '%s' is not a drafter (ngram, ngram:K or off; a draft model is --draft-model PATH)",
         o.speculate.c_str());
  if (ngram && !o.draft_model.empty()) fail("--speculate ngram and --draft-model are two drafters; choose one");
  if (o.draft_tokens != 0 && (o.draft_tokens < 1 || o.draft_tokens > kMaxK))
    fail("--draft-tokens: %d is not a number of draft tokens from 1 to %d", o.draft_tokens, kMaxK);
  if (ngram) {
    config.speculation.max_draft_tokens = o.speculate == "ngram" ? 6 : parse_k(o.speculate.substr(6), "--speculate");
    config.drafter = std::make_shared<NgramDrafter>();
    return;
  }
  if (o.draft_model.empty()) {
    if (o.draft_tokens != 0) fail("--draft-tokens needs --draft-model");
    config.drafter = nullptr;
    return;
  }
  config.speculation.max_draft_tokens = o.draft_tokens > 0 ? o.draft_tokens : 4;
  std::shared_ptr<const Model> draft = Model::load(o.draft_model);
  auto backend = std::make_unique<CpuBackend>(draft->weights, o.threads);
  const int32_t block = std::max(config.block_size, 1);
  const int32_t context = config.max_context > 0 ? config.max_context : target.config().context_length;
  const int32_t blocks = std::max(config.num_blocks, (context + block - 1) / block);
  const double cost = draft_token_cost(draft->config(), target.config());
  config.drafter = std::make_shared<DraftModelDrafter>(draft, std::move(backend), target, blocks, block, cost);
}

std::string speculation_description(const SpeculationOptions& o, const EngineConfig& config) {
  if (!config.drafter) return "no speculation";
  std::string s = std::string(config.drafter->name()) + ", K = " + std::to_string(config.speculation.max_draft_tokens);
  if (!o.draft_model.empty()) {
    std::string file = o.draft_model.substr(o.draft_model.find_last_of('/') + 1);
    s += " (" + file + ")";
  }
  return s + (config.speculation.adaptive ? ", adaptive" : ", fixed");
}

}  // namespace pagedchat
