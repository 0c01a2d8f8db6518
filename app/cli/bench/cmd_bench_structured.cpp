// `bench structured`: what structured output costs. Replies under a JSON schema of 50 members
// (strings, integers, enums, booleans), for 1 and 16 streams on one engine: the time spent
// finding each position's allowed tokens (the grammar masks, engine/grammar/token_masker.h) per
// token and as a share of the engine's time, in two rounds: the first meets every grammar state
// for the first time (cold caches), the second (other seeds, the same schema) finds most masks
// in the caches, as a server's later requests with one schema do. Every reply is checked whole
// (finish "stop"); the figures of one run compare, runs on this noisy machine less so.
// Then jump-forward: one greedy reply under a schema of 12 members with long names, with and
// without it: the steps (forward passes) and the time, and how many tokens the grammar forced.

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "app/cli/cli_args.h"
#include "app/cli/commands.h"
#include "app/cli/model_argument.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/chat/chat_model.h"
#include "engine/common/error.h"
#include "engine/engine/request_runner.h"
#include "engine/grammar/json_schema.h"

namespace pagedchat::cli {
namespace {

// 50 members, every one required, in four kinds, so a reply is about 400 tokens.
std::string fifty_member_schema() {
  std::string props, required;
  const char* kinds[] = {R"({"type": "string", "maxLength": 12})", R"({"type": "integer"})",
                         R"({"enum": ["low", "medium", "high"]})", R"({"type": "boolean"})"};
  for (int i = 0; i < 50; ++i) {
    const std::string name = "field_" + std::to_string(i);
    props += (i ? ", \"" : "\"") + name + "\": " + kinds[i % 4];
    required += (i ? ", \"" : "\"") + name + "\"";
  }
  return R"({"type": "object", "properties": {)" + props + R"(}, "required": [)" + required +
         R"(], "additionalProperties": false})";
}

// 12 members with long fixed names: most of a reply's text is forced.
std::string long_key_schema() {
  const char* names[] = {"customer_full_legal_name", "customer_shipping_address_first_line", "customer_shipping_postal_code",
                         "customer_preferred_contact_telephone", "order_identifier_from_the_web_shop", "number_of_items_in_the_order",
                         "requested_delivery_window_description", "payment_method_chosen_at_checkout", "gift_wrapping_was_requested",
                         "loyalty_programme_membership_level", "free_text_note_left_by_the_customer", "warehouse_that_will_ship_it"};
  std::string props, required;
  for (int i = 0; i < 12; ++i) {
    const char* kind = i % 3 == 0 ? R"({"type": "string", "maxLength": 10})" : i % 3 == 1 ? R"({"type": "integer"})" : R"({"type": "boolean"})";
    props += std::string(i ? ", \"" : "\"") + names[i] + "\": " + kind;
    required += std::string(i ? ", \"" : "\"") + names[i] + "\"";
  }
  return R"({"type": "object", "properties": {)" + props + R"(}, "required": [)" + required + R"(], "additionalProperties": false})";
}

struct Round {
  int64_t tokens = 0, steps = 0, masked = 0, hits = 0, walks = 0;
  double seconds = 0, mask_seconds = 0;
};

Round run_round(Engine& engine, RequestRunner& runner, const Request& base, int streams, uint64_t seed) {
  const EngineStats before = engine.stats();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<RequestId> ids;
  Request r = base;
  r.n = streams;  // the prompt once, then `streams` samples side by side
  r.params.seed = seed;
  const RequestOutput out = runner.run_all(r);
  if (!out.ok()) fail("%s", out.error.c_str());
  Round round;
  round.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const SampleOutput& s : out.samples) {
    if (s.finish_reason != "stop") fail("a reply ended with '%s' after %zu tokens", s.finish_reason.c_str(), s.tokens.size());
    round.tokens += static_cast<int64_t>(s.tokens.size());
  }
  const EngineStats after = engine.stats();
  round.steps = after.num_steps - before.num_steps;
  round.masked = after.num_masked_tokens - before.num_masked_tokens;
  round.hits = after.num_mask_cache_hits - before.num_mask_cache_hits;
  round.walks = after.num_mask_walks - before.num_mask_walks;
  round.mask_seconds = after.mask_seconds - before.mask_seconds;
  return round;
}

}  // namespace

int cmd_bench_structured(const std::vector<std::string>& argv) {
  Args args(argv, {"model", "threads", "streams"}, {"json"});
  auto model = Model::load(resolve_model_path(args.get_or("model", "")));
  const std::vector<int> stream_list = args.get_int_list("streams", "1,16", 64);
  CpuBackend backend(model->weights, args.get_int("threads", 0, 0, 1024));
  const ChatModel chat(*model, ChatModel::own_template(*model));
  Request base;
  base.prompt = chat.encode_chat({{"user", "Fill in this record of a machine's settings as JSON."}});
  base.params.max_tokens = 1500;
  base.params.temperature = 0.7f;
  base.params.grammar = std::make_shared<const grammar::Grammar>(grammar::json_schema_grammar(fifty_member_schema()));
  const bool json = args.flag("json");
  if (!json)
    std::printf("a 50-member schema, temperature 0.7; mask: finding a position's allowed tokens\n"
                "%8s %6s %8s %7s %9s %14s %12s %11s %7s\n",
                "streams", "round", "tokens", "steps", "tok/s", "mask us/token", "mask share", "cache hits", "walks");
  std::string out = "{\"bench\":\"structured\",\"rows\":[";
  bool first = true;
  for (const int streams : stream_list) {
    EngineConfig config;
    config.max_num_seqs = std::max(streams, 1);
    Engine engine(*model, backend, config);
    RequestRunner runner(engine);
    for (int round = 1; round <= 2; ++round) {
      const Round r = run_round(engine, runner, base, streams, static_cast<uint64_t>(round) * 1000);
      const double per_token_us = r.masked ? 1e6 * r.mask_seconds / static_cast<double>(r.masked) : 0.0;
      const double share = r.mask_seconds / r.seconds;
      const double hit_rate = r.masked ? static_cast<double>(r.hits) / static_cast<double>(r.masked) : 0.0;
      if (!json)
        std::printf("%8d %6d %8lld %7lld %9.1f %14.1f %11.1f%% %10.0f%% %7lld\n", streams, round, static_cast<long long>(r.tokens),
                    static_cast<long long>(r.steps), static_cast<double>(r.tokens) / r.seconds, per_token_us, 100.0 * share,
                    100.0 * hit_rate, static_cast<long long>(r.walks));
      char row[300];
      std::snprintf(row, sizeof row,
                    "%s{\"streams\":%d,\"round\":%d,\"tokens\":%lld,\"steps\":%lld,\"seconds\":%.4f,\"mask_seconds\":%.4f,"
                    "\"masked\":%lld,\"cache_hits\":%lld,\"walks\":%lld}",
                    first ? "" : ",", streams, round, static_cast<long long>(r.tokens), static_cast<long long>(r.steps), r.seconds,
                    r.mask_seconds, static_cast<long long>(r.masked), static_cast<long long>(r.hits), static_cast<long long>(r.walks));
      first = false;
      out += row;
    }
  }
  out += "],\"jump_forward\":[";
  // Jump-forward: the same greedy reply's steps with and without it.
  Request jump = base;
  jump.params.temperature = 0.0f;
  jump.params.grammar = std::make_shared<const grammar::Grammar>(grammar::json_schema_grammar(long_key_schema()));
  if (!json)
    std::printf("\njump-forward, one greedy reply, 12 members with long names\n%8s %8s %8s %8s %9s\n", "jump", "tokens", "forced", "steps",
                "seconds");
  for (const bool on : {false, true}) {
    jump.params.jump_forward = on;
    Engine engine(*model, backend, EngineConfig{});
    RequestRunner runner(engine);
    const auto t0 = std::chrono::steady_clock::now();
    const RequestOutput result = runner.run_all(jump);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!result.ok() || result.samples[0].finish_reason != "stop") fail("the jump-forward reply did not end whole");
    const EngineStats st = engine.stats();
    if (!json)
      std::printf("%8s %8zu %8lld %8lld %9.3f\n", on ? "on" : "off", result.samples[0].tokens.size(),
                  static_cast<long long>(st.num_forced_tokens), static_cast<long long>(st.num_steps), seconds);
    char row[200];
    std::snprintf(row, sizeof row, "%s{\"on\":%s,\"tokens\":%zu,\"forced\":%lld,\"steps\":%lld,\"seconds\":%.4f}", on ? "," : "",
                  on ? "true" : "false", result.samples[0].tokens.size(), static_cast<long long>(st.num_forced_tokens),
                  static_cast<long long>(st.num_steps), seconds);
    out += row;
  }
  out += "]}";
  if (json) std::printf("%s\n", out.c_str());
  return 0;
}

}  // namespace pagedchat::cli
