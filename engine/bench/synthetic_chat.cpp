// The synthetic chat workload. The draws use our own log-normal (Box-Muller over mt19937_64)
// instead of std::lognormal_distribution, whose output differs between standard libraries.

#include "engine/bench/synthetic_chat.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "engine/common/error.h"

namespace pagedchat {
namespace {

class Draws {
 public:
  explicit Draws(uint64_t seed) : rng_(seed) {}
  double uniform() { return (rng_() >> 11) * (1.0 / 9007199254740992.0); }  // [0, 1), 53 bits
  double normal() {
    double u1 = 1.0 - uniform();  // (0, 1]: log() stays finite
    double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * 3.14159265358979323846 * u2);
  }
  int log_normal(double median, double sigma, int lo, int hi) {
    double v = std::round(median * std::exp(sigma * normal()));
    return static_cast<int>(std::clamp(v, static_cast<double>(lo), static_cast<double>(hi)));
  }
  int32_t token(int32_t vocab_size) { return static_cast<int32_t>(rng_() % static_cast<uint64_t>(vocab_size)); }

 private:
  std::mt19937_64 rng_;
};

}  // namespace

std::vector<SyntheticRequest> make_synthetic_chat(const SyntheticChatConfig& c) {
  if (c.vocab_size < 1) fail("synthetic chat: the vocabulary is empty");
  if (c.num_requests < 0) fail("synthetic chat: %d requests", c.num_requests);
  if (c.prompt_min < 1 || c.prompt_min > c.prompt_max) fail("synthetic chat: prompt lengths [%d, %d]", c.prompt_min, c.prompt_max);
  if (c.output_min < 1 || c.output_min > c.output_max) fail("synthetic chat: output lengths [%d, %d]", c.output_min, c.output_max);
  if (c.system_prompt_len < 0 || c.system_prompt_len >= c.prompt_max)
    fail("synthetic chat: a system prompt of %d tokens with prompts of at most %d", c.system_prompt_len, c.prompt_max);
  if (!(c.prompt_median > 0) || !(c.output_median > 0) || !(c.prompt_sigma >= 0) || !(c.output_sigma >= 0))
    fail("synthetic chat: medians must be positive and sigmas non-negative");

  Draws draws(c.seed);
  std::vector<int32_t> system(c.system_prompt_len);
  for (int32_t& t : system) t = draws.token(c.vocab_size);

  std::vector<SyntheticRequest> out(c.num_requests);
  for (SyntheticRequest& r : out) {
    int prompt_len = draws.log_normal(c.prompt_median, c.prompt_sigma, c.prompt_min, c.prompt_max);
    r.output_len = draws.log_normal(c.output_median, c.output_sigma, c.output_min, c.output_max);
    r.has_system_prompt = c.system_prompt_len > 0 && draws.uniform() < c.system_prompt_share;
    if (r.has_system_prompt) {
      // The drawn length counts the system prompt; the user's turn keeps at least one token.
      prompt_len = std::max(prompt_len, c.system_prompt_len + 1);
      r.prompt = system;
    }
    while (static_cast<int>(r.prompt.size()) < prompt_len) r.prompt.push_back(draws.token(c.vocab_size));
  }
  return out;
}

std::vector<std::vector<int32_t>> make_random_prompts(uint64_t seed, int num_prompts, int len, int32_t vocab_size) {
  if (vocab_size < 1) fail("random prompts: the vocabulary is empty");
  Draws draws(seed);
  std::vector<std::vector<int32_t>> out(std::max(num_prompts, 0), std::vector<int32_t>(std::max(len, 0)));
  for (auto& p : out)
    for (int32_t& t : p) t = draws.token(vocab_size);
  return out;
}

}  // namespace pagedchat
