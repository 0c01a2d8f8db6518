// `bench throughput`: many requests through the continuous-batching engine, at most
// --concurrency in flight (another is submitted as one finishes), greedy with EOS ignored so
// every output has its exact length. Reports requests/s, output tok/s, decode tok/s (tokens
// sampled in steps that computed no prompt or recomputed token, over those steps' time), time
// to first token and inter-token latency (p50, p99), peak KV blocks, preemptions, tokens
// recomputed after them, and prefix hit rate.
// `--batching`: the "batching pays" check: the same fixed-length requests at concurrency 1,
// then 16 (or --concurrency) in one run, and the ratio of their decode tok/s; `--rounds N`
// alternates the two N times and reports the median ratio.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include "app/cli/backend_choice.h"
#include "app/cli/cli_args.h"
#include "app/cli/commands.h"
#include "engine/bench/synthetic_chat.h"
#include "engine/common/error.h"
#include "engine/engine/engine.h"
#include "engine/model/model.h"

namespace pagedchat::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * (v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

struct Job {
  std::vector<int32_t> prompt;
  int32_t output_len = 0;
};

struct Result {
  int concurrency = 0, num_requests = 0, num_errors = 0;
  int64_t prompt_tokens = 0, output_tokens = 0, decode_tokens = 0;
  double wall_s = 0, decode_s = 0;
  double ttft_p50 = 0, ttft_p99 = 0, itl_p50 = 0, itl_p99 = 0;  // seconds
  int32_t peak_blocks = 0, num_blocks = 0;
  int64_t preemptions = 0, swap_outs = 0, recomputed_tokens = 0;
  double prefix_hit_rate = 0;
};

Result run_jobs(const Model& model, Backend& backend, const EngineConfig& ec, const std::vector<Job>& jobs, int concurrency) {
  Engine engine(model, backend, ec);
  struct Track {
    Clock::time_point submitted, last;
    bool any = false;
  };
  std::map<RequestId, Track> live;
  std::vector<double> ttft, itl;
  Result r;
  r.concurrency = concurrency;
  r.num_requests = static_cast<int>(jobs.size());
  engine.subscribe([&](const EngineEvent& e) {
    auto it = live.find(e.request);
    if (it == live.end()) return;
    if (e.kind == EngineEventKind::error) {
      std::fprintf(stderr, "request %lld failed: %s\n", static_cast<long long>(e.request), e.reason.c_str());
      ++r.num_errors;
    } else if (e.kind == EngineEventKind::token) {
      Clock::time_point now = Clock::now();
      (it->second.any ? itl : ttft).push_back(seconds(it->second.any ? it->second.last : it->second.submitted, now));
      it->second.any = true;
      it->second.last = now;
      ++r.output_tokens;
    }
    if (e.request_done) live.erase(it);  // its slot is free for the next job
  });

  size_t next = 0;
  auto submit_more = [&] {
    while (next < jobs.size() && static_cast<int>(live.size()) < concurrency) {
      Request q;
      q.prompt = jobs[next].prompt;
      q.params.max_tokens = jobs[next].output_len;
      q.params.ignore_eos = true;
      r.prompt_tokens += static_cast<int64_t>(q.prompt.size());
      Clock::time_point now = Clock::now();
      live[engine.submit(std::move(q))] = Track{now, now, false};
      ++next;
    }
  };
  const Clock::time_point start = Clock::now();
  submit_more();
  while (true) {
    // Prompt and recompute work both make a step slower than a pure decode step.
    auto prompt_work = [](const EngineStats& s) { return s.num_prefill_tokens + s.num_recomputed_tokens; };
    const int64_t prompt_work_before = prompt_work(engine.stats());
    const int64_t tokens_before = r.output_tokens;
    const Clock::time_point t0 = Clock::now();
    bool more = engine.step();
    const Clock::time_point t1 = Clock::now();
    EngineStats s = engine.stats();
    if (prompt_work(s) == prompt_work_before && r.output_tokens > tokens_before) {
      r.decode_tokens += r.output_tokens - tokens_before;
      r.decode_s += seconds(t0, t1);
    }
    r.peak_blocks = std::max(r.peak_blocks, s.kv.num_used_blocks);
    submit_more();
    if (!more && live.empty() && next >= jobs.size()) break;
    if (!more && !engine.has_work() && !live.empty()) fail("the engine stopped with %zu requests unfinished", live.size());
  }
  r.wall_s = seconds(start, Clock::now());
  EngineStats s = engine.stats();
  r.num_blocks = s.kv.num_blocks;
  r.preemptions = s.num_preempted;
  r.swap_outs = s.num_swapped_out;
  r.recomputed_tokens = s.num_recomputed_tokens;
  r.prefix_hit_rate = s.kv.prefix_hit_rate();
  r.ttft_p50 = percentile(ttft, 0.5);
  r.ttft_p99 = percentile(ttft, 0.99);
  r.itl_p50 = percentile(itl, 0.5);
  r.itl_p99 = percentile(itl, 0.99);
  return r;
}

void print_result(const Result& r, bool json, const char* label) {
  const double rps = (r.num_requests - r.num_errors) / r.wall_s, otps = r.output_tokens / r.wall_s;
  const double dtps = r.decode_s > 0 ? r.decode_tokens / r.decode_s : 0.0;
  if (json) {
    std::printf(
        "{\"bench\":\"throughput\",\"workload\":\"%s\",\"concurrency\":%d,\"requests\":%d,\"errors\":%d,"
        "\"prompt_tokens\":%lld,\"output_tokens\":%lld,\"wall_s\":%.3f,\"requests_s\":%.3f,\"output_tok_s\":%.2f,"
        "\"decode_tok_s\":%.2f,\"ttft_p50_ms\":%.1f,\"ttft_p99_ms\":%.1f,\"itl_p50_ms\":%.1f,\"itl_p99_ms\":%.1f,"
        "\"peak_kv_blocks\":%d,\"kv_blocks\":%d,\"preemptions\":%lld,\"swap_outs\":%lld,\"recomputed_tokens\":%lld,"
        "\"prefix_hit_rate\":%.4f}\n",
        label, r.concurrency, r.num_requests, r.num_errors, static_cast<long long>(r.prompt_tokens),
        static_cast<long long>(r.output_tokens), r.wall_s, rps, otps, dtps, 1e3 * r.ttft_p50, 1e3 * r.ttft_p99,
        1e3 * r.itl_p50, 1e3 * r.itl_p99, r.peak_blocks, r.num_blocks, static_cast<long long>(r.preemptions),
        static_cast<long long>(r.swap_outs), static_cast<long long>(r.recomputed_tokens), r.prefix_hit_rate);
  } else {
    std::printf(
        "%-15s conc %3d  %4d req (%d failed)  %lld prompt + %lld output tokens in %.2f s\n"
        "  %.3f req/s  output %.1f tok/s  decode %.1f tok/s\n"
        "  TTFT p50 %.1f ms p99 %.1f ms   ITL p50 %.1f ms p99 %.1f ms\n"
        "  peak KV %d / %d blocks  preemptions %lld (+%lld swapped, %lld tokens recomputed)  prefix hit rate %.1f%%\n",
        label, r.concurrency, r.num_requests, r.num_errors, static_cast<long long>(r.prompt_tokens),
        static_cast<long long>(r.output_tokens), r.wall_s, rps, otps, dtps, 1e3 * r.ttft_p50, 1e3 * r.ttft_p99,
        1e3 * r.itl_p50, 1e3 * r.itl_p99, r.peak_blocks, r.num_blocks, static_cast<long long>(r.preemptions),
        static_cast<long long>(r.swap_outs), static_cast<long long>(r.recomputed_tokens), 100 * r.prefix_hit_rate);
  }
  std::fflush(stdout);
}

std::vector<Job> fixed_jobs(uint64_t seed, int n, int input_len, int output_len, int32_t vocab) {
  std::vector<Job> jobs;
  for (auto& p : make_random_prompts(seed, n, input_len, vocab)) jobs.push_back({std::move(p), output_len});
  return jobs;
}

}  // namespace

int cmd_bench_throughput(const std::vector<std::string>& argv) {
  Args args(argv,
            with_backend_options({"threads", "num-requests", "input-len", "output-len", "dataset", "concurrency", "seed",
                                  "block-size", "num-blocks", "max-batched-tokens", "rounds", "write-workload", "kv-disk"}),
            {"json", "batching"});
  auto model = load_model(args);
  const int threads = args.get_int("threads", 2, 1, 1024);
  const uint64_t seed = args.get_u64("seed", 1);
  const bool json = args.flag("json");
  const std::string dataset = args.get_or("dataset", "");
  if (!dataset.empty() && dataset != "synthetic-chat") fail("--dataset must be synthetic-chat (got '%s')", dataset.c_str());
  if (!dataset.empty() && (args.get("input-len") || args.get("output-len")))
    fail("--dataset synthetic-chat draws its own lengths: drop --input-len and --output-len");
  EngineConfig ec;
  ec.block_size = args.get_block_size();
  ec.num_blocks = args.get_int("num-blocks", 0, 0, 1 << 24);
  ec.max_batched_tokens = args.get_int("max-batched-tokens", 512, 1, 1 << 20);
  ec.kv_disk.dir = args.get_or("kv-disk", "");  // the disk tier on: what its writing costs
  const int32_t vocab = model->config().vocab_size;
  BuiltBackend choice = make_backend(args, *model, threads, ec.max_batched_tokens, ec.block_size);
  Backend& backend = *choice.backend;
  if (ec.num_blocks == 0) ec.num_blocks = choice.max_num_blocks;  // 0 on the CPU: one max-context sequence

  if (!json)
    std::printf("model %s, %s, block size %d, %s, %s\n", model->config().name.c_str(), choice.description.c_str(),
                ec.block_size, ec.num_blocks ? format("%d KV blocks", ec.num_blocks).c_str() : "KV for one max-context sequence",
                dataset.empty() ? "fixed lengths, random token ids" : "synthetic chat");
  if (args.flag("batching")) {
    // Batching pays: one stream, then C streams, same request shape, one process.
    if (!dataset.empty()) fail("--batching uses fixed lengths; drop --dataset");
    const int c = args.get_int("concurrency", 16, 2, 1024);
    const int input_len = args.get_int("input-len", 32, 1, 1 << 16);
    const int output_len = args.get_int("output-len", 64, 2, 1 << 16);
    ec.max_num_seqs = std::max(ec.max_num_seqs, c);
    // Rounds alternate the two runs, so a neighbour's load on this shared machine falls on both;
    // the median ratio is the figure.
    const int rounds = args.get_int("rounds", 1, 1, 100);
    std::vector<double> ratios;
    double d1 = 0, dn = 0;
    for (int round = 0; round < rounds; ++round) {
      Result one = run_jobs(*model, backend, ec, fixed_jobs(seed, 2, input_len, output_len, vocab), 1);
      print_result(one, json, "single");
      Result many = run_jobs(*model, backend, ec, fixed_jobs(seed + 1, c, input_len, output_len, vocab), c);
      print_result(many, json, "batched");
      d1 = one.decode_tokens / one.decode_s;
      dn = many.decode_tokens / many.decode_s;
      ratios.push_back(dn / d1);
      if (!json && rounds > 1) std::printf("round %d: %.2fx\n", round + 1, dn / d1);
    }
    std::sort(ratios.begin(), ratios.end());
    const double median = ratios.size() % 2 ? ratios[ratios.size() / 2]
                                            : 0.5 * (ratios[ratios.size() / 2 - 1] + ratios[ratios.size() / 2]);
    if (json)
      std::printf("{\"bench\":\"batching\",\"single_decode_tok_s\":%.2f,\"batched_decode_tok_s\":%.2f,\"concurrency\":%d,"
                  "\"rounds\":%d,\"ratio\":%.2f}\n",
                  d1, dn, c, rounds, median);
    else
      std::printf("batching pays: decode %.1f tok/s at 1 stream, %.1f tok/s at %d streams (last round); median ratio of %d "
                  "round(s): %.2fx\n",
                  d1, dn, c, rounds, median);
    return 0;
  }

  const int num_requests = args.get_int("num-requests", 10, 1, 1 << 20);
  const int concurrency = args.get_int("concurrency", 4, 1, 1024);
  ec.max_num_seqs = std::max(ec.max_num_seqs, concurrency);
  std::vector<Job> jobs;
  if (dataset.empty()) {
    jobs = fixed_jobs(seed, num_requests, args.get_int("input-len", 128, 1, 1 << 16),
                      args.get_int("output-len", 64, 1, 1 << 16), vocab);
  } else {
    SyntheticChatConfig wc;
    wc.seed = seed;
    wc.num_requests = num_requests;
    wc.vocab_size = vocab;
    for (SyntheticRequest& q : make_synthetic_chat(wc)) jobs.push_back({std::move(q.prompt), q.output_len});
  }
  if (auto path = args.get("write-workload")) {
    // The requests' lengths, one JSON object a line, so another engine (tests/bench/hf_baseline.py)
    // can run the same workload.
    std::FILE* f = std::fopen(path->c_str(), "w");
    if (!f) fail("cannot write '%s'", path->c_str());
    for (const Job& j : jobs) std::fprintf(f, "{\"input_len\":%zu,\"output_len\":%d}\n", j.prompt.size(), j.output_len);
    std::fclose(f);
  }
  print_result(run_jobs(*model, backend, ec, jobs, concurrency), json, dataset.empty() ? "fixed" : "synthetic-chat");
  return 0;
}

}  // namespace pagedchat::cli
