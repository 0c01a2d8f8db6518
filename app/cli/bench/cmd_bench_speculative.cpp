// `bench speculative`: decode tok/s of plain decoding against speculative decoding with prompt
// lookup and with a draft model, on two workloads: copy-heavy (the reply repeats spans of the
// prompt: repeat, correct or rename in a given text or code) and free-form chat. Greedy, one
// request at a time; the drafters alternate within each round so the machine's drift hits
// them alike. Every speculative output is compared with the plain one (it must be identical).
// It also measures what one more token in a decode step costs (the speculation plan's
// token_cost) at each thread count.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include "app/cli/backend_choice.h"
#include "app/cli/cli_args.h"
#include "app/cli/commands.h"
#include "app/cli/model_argument.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/chat/chat_model.h"
#include "engine/common/error.h"
#include "engine/engine/request_runner.h"

namespace pagedchat::cli {
namespace {

const char* const kCopyPrompts[] = {
    "Repeat this text exactly, word for word:\n\nThe committee met on Tuesday to discuss the new budget. After a long "
    "debate, the members agreed to spend more on the library and the public parks, and less on new office furniture. "
    "The final vote will take place next month, once the treasurer has checked the numbers.",
    "Rename the variable `n` to `count` in this Python function and reply with the whole function:\n\n"
    "def total(n):\n    result = 0\n    for i in range(n):\n        if i % 2 == 0:\n            result += i * n\n"
    "    return result\n",
    "Correct the spelling mistakes in this paragraph and give back the whole paragraph:\n\nThe wether was very "
    "nice yesterday, so we went to the beach. We swam in the see and ate sandwitches on the sand. In the evening "
    "we walked back home and watched a movie together.",
    "Copy this list and add a fourth item at the end:\n\n1. Buy milk and eggs at the shop.\n2. Call the plumber "
    "about the kitchen sink.\n3. Send the report to Anna before Friday.",
};
const char* const kChatPrompts[] = {
    "Write a short story about a robot who learns to paint.",
    "What are three tips for learning a new language?",
    "Explain how a bicycle works.",
    "Give me a simple recipe for pancakes.",
};

struct Drafter {
  std::string name;  // "plain", "ngram", "draft_model"
  SpeculationOptions options;
};

struct Tally {
  double seconds = 0;
  int64_t tokens = 0, drafted = 0, accepted = 0, steps = 0;
  bool identical = true;
  void add(const RequestRun& r) {
    seconds += r.decode_seconds;
    tokens += static_cast<int64_t>(r.tokens.size()) - 1;
    drafted += r.spec.drafted;
    accepted += r.spec.accepted;
    steps += r.spec.decode_steps;
  }
  double tok_s() const { return tokens / std::max(seconds, 1e-9); }
};

// What one more token costs in a decode step of one sequence, as a fraction of a one-token
// step: from the best of several timed forward passes of 1 and of 1 + 8 tokens at position 256.
double measure_token_cost(const Model& model, int threads) {
  CpuBackend backend(model.weights, threads);
  EngineConfig ec;
  ec.max_context = 512;
  Engine engine(model, backend, ec);  // allocates the pool this writes into
  std::vector<int32_t> table;
  for (int32_t b = 0; b < 512 / ec.block_size; ++b) table.push_back(b);
  std::vector<float> logits;
  auto best_seconds = [&](int32_t n) {
    double best = 1e9;
    for (int rep = 0; rep < 12; ++rep) {
      ForwardBatch batch;
      std::vector<int32_t> tokens(static_cast<size_t>(n), 42);
      batch.add_sequence(tokens.data(), n, 256, table, ec.block_size, false);
      batch.want_last_logits(n);
      const auto t0 = std::chrono::steady_clock::now();
      backend.forward(batch, logits);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
  };
  const double one = best_seconds(1), nine = best_seconds(9);
  return (nine - one) / (8.0 * one);
}

using Workloads = std::map<std::string, std::vector<std::vector<int32_t>>>;
using Tallies = std::map<std::string, std::vector<Tally>>;  // [workload][drafter]

// Every prompt of every workload under every drafter, `rounds` times alternated; each drafter's
// tokens checked against plain decoding's (drafters[0]).
Tallies run_drafters(const Model& model, Backend& backend, const std::vector<Drafter>& drafters,
                     const std::vector<EngineConfig>& configs, const Workloads& workloads, int rounds, int max_tokens) {
  Tallies tally;
  std::map<std::string, std::vector<std::vector<int32_t>>> plain_out;
  for (int round = 0; round < rounds; ++round)
    for (const auto& [workload, prompts] : workloads) {
      auto& t = tally[workload];
      t.resize(drafters.size());
      for (size_t i = 0; i < prompts.size(); ++i)
        for (size_t d = 0; d < drafters.size(); ++d) {
          Engine engine(model, backend, configs[d]);
          RequestRunner runner(engine);
          Request r;
          r.prompt = prompts[i];
          r.params.max_tokens = max_tokens;
          RequestRun run = runner.run(std::move(r));
          if (!run.ok()) fail("%s", run.error.c_str());
          t[d].add(run);
          auto& reference = plain_out[workload];
          if (reference.size() <= i) reference.resize(i + 1);
          if (d == 0) reference[i] = run.tokens;
          else if (run.tokens != reference[i]) t[d].identical = false;
        }
    }
  return tally;
}

// One thread count's table, or its JSON object appended to out_json.
void report(int threads, double token_cost, const std::vector<Drafter>& drafters, const Tallies& tally, bool json,
            bool first_thread, std::string& out_json) {
  if (!json) {
    std::printf("\n%d threads (one more token in a decode step costs %.2f of a step)\n", threads, token_cost);
    std::printf("%-6s %-12s %10s %8s %10s %10s %10s\n", "work", "drafter", "decode t/s", "speedup", "accepted", "tok/step",
                "identical");
  }
  out_json += std::string(first_thread ? "" : ",") + "{\"threads\":" + std::to_string(threads) +
              ",\"token_cost\":" + std::to_string(token_cost) + ",\"workloads\":{";
  bool first_workload = true;
  for (const auto& [workload, t] : tally) {
    out_json += std::string(first_workload ? "" : ",") + "\"" + workload + "\":{";
    first_workload = false;
    for (size_t d = 0; d < drafters.size(); ++d) {
      const double speedup = t[d].tok_s() / t[0].tok_s();
      const double acceptance = t[d].drafted ? static_cast<double>(t[d].accepted) / t[d].drafted : 0.0;
      const double per_step = t[d].steps ? static_cast<double>(t[d].tokens) / t[d].steps : 1.0;
      if (!json)
        std::printf("%-6s %-12s %10.1f %7.2fx %9.0f%% %10.2f %10s\n", workload.c_str(), drafters[d].name.c_str(), t[d].tok_s(),
                    speedup, 100.0 * acceptance, per_step, t[d].identical ? "yes" : "NO");
      char buf[320];
      std::snprintf(buf, sizeof buf,
                    "%s\"%s\":{\"decode_tok_s\":%.2f,\"speedup\":%.4f,\"acceptance\":%.4f,\"drafted\":%lld,"
                    "\"tokens_per_step\":%.3f,\"identical\":%s}",
                    d ? "," : "", drafters[d].name.c_str(), t[d].tok_s(), speedup, acceptance, static_cast<long long>(t[d].drafted),
                    per_step, t[d].identical ? "true" : "false");
      out_json += buf;
    }
    out_json += "}";
  }
  out_json += "}}";
}

}  // namespace

int cmd_bench_speculative(const std::vector<std::string>& argv) {
  Args args(argv, {"model", "threads", "max-tokens", "rounds", "draft-model", "draft-tokens", "ngram-tokens"},
            {"json", "fixed-draft"});
  const std::string model_path = resolve_model_path(args.get_or("model", ""));
  auto model = Model::load(model_path);
  const std::vector<int> thread_list = args.get_int_list("threads", "1,2", 1024);
  const int max_tokens = args.get_int("max-tokens", 128, 2, 4096);
  const int rounds = args.get_int("rounds", 2, 1, 100);
  const bool json = args.flag("json");
  // Without --draft-model the target drafts for itself: acceptance near 100%, at the cost of a
  // whole target step per drafted token (the only model sharing its vocabulary we ship).
  const std::string draft_path = args.get_or("draft-model", model_path);

  std::vector<Drafter> drafters(3);
  drafters[0].name = "plain";
  drafters[1].name = "ngram";
  drafters[1].options.speculate = "ngram:" + std::to_string(args.get_int("ngram-tokens", 6, 1, 16));
  drafters[2].name = "draft_model";
  drafters[2].options.draft_model = draft_path;
  drafters[2].options.draft_tokens = args.get_int("draft-tokens", 4, 1, 16);
  for (Drafter& d : drafters) d.options.adaptive = !args.flag("fixed-draft");

  const Workloads workloads = [&] {
    Workloads w;
    const ChatModel chat(*model, ChatModel::own_template(*model));
    for (const char* p : kCopyPrompts) w["copy"].push_back(chat.encode_chat({{"user", p}}));
    for (const char* p : kChatPrompts) w["chat"].push_back(chat.encode_chat({{"user", p}}));
    return w;
  }();

  if (!json)
    std::printf("model %s, %d tokens a reply, greedy, %d rounds alternated, K: ngram %s, draft model %d (%s)%s\n",
                model->config().name.c_str(), max_tokens, rounds, drafters[1].options.speculate.c_str(),
                drafters[2].options.draft_tokens, draft_path.substr(draft_path.find_last_of('/') + 1).c_str(),
                args.flag("fixed-draft") ? ", fixed K" : ", adaptive");
  std::string out_json = "{\"bench\":\"speculative\",\"model\":\"" + model->config().name + "\",\"threads\":[";
  bool first_thread = true;
  for (int threads : thread_list) {
    const double token_cost = measure_token_cost(*model, threads);
    CpuBackend backend(model->weights, threads);
    std::vector<EngineConfig> configs(drafters.size());
    for (size_t d = 0; d < drafters.size(); ++d) {
      drafters[d].options.threads = threads;
      configs[d].max_context = 2048;
      configure_speculation(drafters[d].options, *model, configs[d]);
    }
    report(threads, token_cost, drafters, run_drafters(*model, backend, drafters, configs, workloads, rounds, max_tokens), json,
           first_thread, out_json);
    first_thread = false;
  }
  out_json += "]}";
  if (json) std::printf("%s\n", out_json.c_str());
  return 0;
}

}  // namespace pagedchat::cli
