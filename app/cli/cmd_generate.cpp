// `generate`: one prompt (a user message under the chat template unless --raw) served by the
// engine like any other request, the reply streamed to stdout, the statistics to stderr. A
// thinking model's thinking (<think>, gpt-oss's analysis channel: engine/chat/reasoning.h) goes
// to stderr between [thinking] and [/thinking], and its markup to neither, so that stdout is the
// answer alone, as a script piping it wants; --raw-reply prints the reply as the model wrote it.

#include <algorithm>
#include <cstdio>
#include <optional>

#include "app/cli/backend_choice.h"
#include "app/cli/cli_args.h"
#include "app/cli/commands.h"
#include "engine/chat/reasoning.h"
#include "engine/common/error.h"
#include "engine/engine/request_runner.h"
#include "engine/model/model.h"

namespace pagedchat::cli {

namespace {

// --max-tokens, --temperature, --seed, --top-k/-p, --min-p and the penalties, --stop, --ignore-eos.
SamplingParams sampling_params(const Args& args) {
  SamplingParams sp;
  sp.max_tokens = args.get_int("max-tokens", 256, 1, 1 << 20);
  sp.temperature = static_cast<float>(args.get_double("temperature", 0.0, 0.0, 100.0));
  sp.seed = args.get_u64("seed", 0);
  sp.top_k = args.get_int("top-k", 0, 0, 1 << 24);
  sp.top_p = static_cast<float>(args.get_double("top-p", 1.0, 1e-6, 1.0));
  sp.min_p = static_cast<float>(args.get_double("min-p", 0.0, 0.0, 1.0));
  sp.repetition_penalty = static_cast<float>(args.get_double("repeat-penalty", 1.0, 0.01, 100.0));
  sp.frequency_penalty = static_cast<float>(args.get_double("frequency-penalty", 0.0, -2.0, 2.0));
  sp.presence_penalty = static_cast<float>(args.get_double("presence-penalty", 0.0, -2.0, 2.0));
  sp.ignore_eos = args.flag("ignore-eos");
  sp.stop = args.get_all("stop");
  return sp;
}

// The prompt's tokens, and how its reply is read: a raw prompt in the model's own format (its
// special tokens parsed), whose reply is printed as written, or a user message (after --system)
// under the chat template, whose reply's thinking is split from its answer when the model thinks
// (the server's reading of it: server/api/api_server.cpp).
struct Prompt {
  std::vector<int32_t> tokens;
  std::optional<ReasoningSplitter> reasoning;  // unset: the reply is printed as written
};

Prompt chat_prompt(const Args& args, const Model& model, const std::string& prompt) {
  if (args.flag("raw")) return {model.encode_raw(prompt), std::nullopt};
  std::vector<ChatMessage> messages;
  if (auto sys = args.get("system")) messages.push_back({"system", *sys});
  messages.push_back({"user", prompt});
  const ChatModel chat = chat_model(args, model);
  try {
    const PromptText text = chat.chat_template().apply(messages, true);
    Prompt p{chat.encode_prompt(text), std::nullopt};
    if (args.flag("raw-reply")) return p;
    if (chat.chat_template().harmony()) p.reasoning = ReasoningSplitter::harmony();
    else if (chat.chat_template().thinks()) p.reasoning.emplace(prompt_opens_thinking(text.str()));
    return p;
  } catch (const ChatTemplateError& e) {
    fail("%s (--chat-template builtin uses %s instead)", e.what(), chat.chat_template().builtin().describe().c_str());
  }
}

// A reply's pieces printed as they come: the answer to stdout, the thinking to stderr between
// [thinking] and [/thinking] (or nowhere, with --hide-thinking).
class ReplyPrinter {
 public:
  ReplyPrinter(std::optional<ReasoningSplitter> reasoning, bool hide_thinking)
      : reasoning_(std::move(reasoning)), hide_thinking_(hide_thinking) {}
  void push(std::string_view text) {
    if (!reasoning_) return answer(text);
    print(reasoning_->push(text));
  }
  void finish() {
    if (reasoning_) print(reasoning_->finish());
    close_thinking();
  }

 private:
  void print(const ReasoningDelta& d) {
    if (!d.reasoning.empty() && !hide_thinking_) {
      if (!thinking_open_) std::fputs("[thinking]\n", stderr);
      thinking_open_ = true;
      std::fwrite(d.reasoning.data(), 1, d.reasoning.size(), stderr);
      std::fflush(stderr);
    }
    if (!d.content.empty()) {
      close_thinking();
      answer(d.content);
    }
  }
  void close_thinking() {
    if (thinking_open_) std::fputs("\n[/thinking]\n", stderr);
    thinking_open_ = false;
  }
  static void answer(std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  }
  std::optional<ReasoningSplitter> reasoning_;
  bool hide_thinking_;
  bool thinking_open_ = false;
};

struct BeamChoice {
  int width = 0;  // 0: no beam search
  int shown = 1;  // --n: the best hypotheses printed
  float length_penalty = 1.0f;
};

BeamChoice beam_choice(const Args& args) {
  BeamChoice b;
  b.width = args.get_int("beam-width", 0, 2, 32);
  b.shown = args.get_int("n", 1, 1, 32);
  b.length_penalty = static_cast<float>(args.get_double("length-penalty", 1.0, -10.0, 10.0));
  if (b.width == 0 && (args.get("n") || args.get("length-penalty"))) fail("--n and --length-penalty are for --beam-width W");
  if (b.width > 0 && b.shown > b.width) fail("--n %d is more than --beam-width %d", b.shown, b.width);
  return b;
}

// The n best hypotheses, best first; nothing streams (beams change until the end).
int print_beams(Engine& engine, Request request, const BeamChoice& beams, const Prompt& prompt, bool hide_thinking,
                const std::string& backend) {
  request.beam_width = beams.width;
  request.n = beams.shown;
  request.length_penalty = beams.length_penalty;
  int64_t peak_blocks = 0;
  RequestRunner runner(engine);
  const RequestOutput out = runner.run_all(std::move(request), [&] {
    peak_blocks = std::max<int64_t>(peak_blocks, engine.stats().kv.num_used_blocks);
  });
  if (!out.ok()) fail("%s", out.error.c_str());
  for (size_t i = 0; i < out.samples.size(); ++i) {
    const SampleOutput& s = out.samples[i];
    if (out.samples.size() > 1) std::printf("%s[beam %zu]\n", i ? "\n" : "", i + 1);
    std::fflush(stdout);
    ReplyPrinter printer(prompt.reasoning, hide_thinking);
    printer.push(s.text);
    printer.finish();
    std::printf("\n");
    std::fprintf(stderr, "beam %zu: %zu tokens, log-probability %.3f, score %.4f, finish: %s\n", i + 1, s.tokens.size(),
                 s.cumulative_logprob, s.beam_score, s.finish_reason.c_str());
  }
  std::fprintf(stderr, "beam search: width %d | peak %lld KV blocks in use | %s\n", beams.width,
               static_cast<long long>(peak_blocks), backend.c_str());
  return 0;
}

// The reply streamed to stdout as it comes, the figures to stderr.
int stream_reply(Engine& engine, Request request, ReplyPrinter& printer, const EngineConfig& ec,
                 const SpeculationOptions& speculation, const std::string& backend) {
  RequestRunner runner(engine);
  const int num_prompt_tokens = static_cast<int>(request.prompt.size());
  RequestRun r = runner.run(std::move(request), [&](std::string_view s) { printer.push(s); });
  if (!r.ok()) fail("%s", r.error.c_str());
  printer.finish();
  std::fputc('\n', stdout);
  std::fflush(stdout);
  int gen_tokens = static_cast<int>(r.tokens.size());
  std::fprintf(stderr,
               "prompt tokens: %d, prompt %.1f tok/s | generated tokens: %d, decode %.1f tok/s | finish: %s | "
               "%s\n",
               num_prompt_tokens, num_prompt_tokens / std::max(r.prompt_seconds, 1e-9), gen_tokens,
               gen_tokens > 1 ? (gen_tokens - 1) / std::max(r.decode_seconds, 1e-9) : 0.0, r.finish_reason.c_str(),
               backend.c_str());
  if (ec.drafter) {
    const SpeculationCounts& sc = r.spec;
    std::fprintf(stderr, "speculation: %s | drafted %lld, accepted %lld (%.0f%%) | %.2f tokens per decode step\n",
                 speculation_description(speculation, ec).c_str(), static_cast<long long>(sc.drafted),
                 static_cast<long long>(sc.accepted), sc.drafted ? 100.0 * sc.accepted / sc.drafted : 0.0,
                 sc.decode_steps ? static_cast<double>(gen_tokens - 1) / sc.decode_steps : 0.0);
  }
  return 0;
}

}  // namespace

int cmd_generate(const std::vector<std::string>& argv) {
  Args args(argv,
            with_speculation_options(with_backend_options({"prompt", "prompt-file", "system", "max-tokens", "temperature", "seed", "top-k", "top-p", "min-p",
                                  "repeat-penalty", "frequency-penalty", "presence-penalty", "stop", "threads",
                                  "block-size", "beam-width", "n", "length-penalty", "endpoint", "api-key", "remote-model"})),
            {"raw", "raw-reply", "hide-thinking", "ignore-eos", "fixed-draft"});
  std::optional<std::string> prompt = args.get("prompt");
  if (auto file = args.get("prompt-file")) {
    // A prompt too long for a command line (a whole document): read as is, "-" for stdin.
    if (prompt) fail("give --prompt or --prompt-file, not both");
    prompt = read_text_file(*file, "--prompt-file");
  }
  if (!prompt) fail("generate needs --prompt TEXT or --prompt-file PATH");
  if (auto endpoint = args.get("endpoint")) {
    // Nothing local is loaded: the server's model generates; --n is its samples.
    if (args.get("model") || args.flag("raw") || args.get("beam-width"))
      fail("--endpoint runs on the server's model: --model, --raw and --beam-width are for local generation");
    return generate_remote(args, *endpoint, *prompt);
  }
  if (args.get("api-key") || args.get("remote-model")) fail("--api-key and --remote-model are for --endpoint URL");

  if (args.flag("raw") && (args.flag("raw-reply") || args.flag("hide-thinking")))
    fail("--raw prints the reply as written: --raw-reply and --hide-thinking are for chat prompts");
  const SamplingParams sp = sampling_params(args);
  const int threads = args.get_int("threads", 0, 0, 1024);
  const int block_size = args.get_block_size();
  const BeamChoice beams = beam_choice(args);
  auto model = load_model(args);
  Prompt chat = chat_prompt(args, *model, *prompt);

  // The pool holds this one request (below), so the CUDA backend's max_num_blocks is not used.
  BuiltBackend choice = make_backend(args, *model, threads, 512, block_size);
  EngineConfig ec;
  ec.block_size = block_size;
  // The pool holds this one request and no more.
  ec.max_context = std::min(model->config().context_length, static_cast<int>(chat.tokens.size()) + sp.max_tokens + 1);
  const SpeculationOptions speculation = speculation_options(args, threads);
  configure_speculation(speculation, *model, ec);
  // W beams at most hold W sequences' blocks (they share the prompt's and common prefixes).
  if (beams.width > 0) ec.num_blocks = beams.width * ((ec.max_context + block_size - 1) / block_size);
  Engine engine(*model, *choice.backend, ec);
  Request request;
  request.prompt = std::move(chat.tokens);
  request.params = sp;
  const bool hide_thinking = args.flag("hide-thinking");
  if (beams.width > 0) return print_beams(engine, std::move(request), beams, chat, hide_thinking, choice.description);
  ReplyPrinter printer(std::move(chat.reasoning), hide_thinking);
  return stream_reply(engine, std::move(request), printer, ec, speculation, choice.description);
}

}  // namespace pagedchat::cli
