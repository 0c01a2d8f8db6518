// `bench chat`: the prompt tokens one growing chat computes under three ways of keeping its
// context, on the same scripted conversation (a system prompt, N turns, one edited message,
// two regenerated replies): its sequence parked between turns and cut back with fork/rewind
// for the edit and the regenerations (`rewind`); the whole chat resubmitted each turn over the
// prefix cache (`prefix_cache`, what a stateless server does); the whole chat on an empty
// engine each turn (`no_cache`). Counts prompt and recomputed tokens, not decode tokens.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "app/cli/backend_choice.h"
#include "app/cli/cli_args.h"
#include "app/cli/commands.h"
#include "engine/chat/chat_continuation.h"
#include "engine/chat/chat_session.h"
#include "engine/common/error.h"
#include "engine/engine/engine.h"
#include "engine/engine/request_tracker.h"
#include "engine/model/model.h"

namespace pagedchat::cli {
namespace {

using Clock = std::chrono::steady_clock;

// --- The script: fixed text, so every run and every strategy sees the same chat ---------------

const char* kSystemPrompt =
    "You are a patient gardening assistant for people who are growing vegetables for the first time. "
    "Answer in plain words and short paragraphs, and give one concrete step the reader can take today. "
    "When a question depends on the climate, the soil or the season, say so and give the usual range "
    "rather than a single number. If the reader sounds worried, begin with what is going well in their garden "
    "before you suggest a change. Never recommend a product by its brand name, and say plainly when you "
    "do not know something.";

// Varied lengths on purpose: a one-word thanks appends a few tokens, a long question many.
const char* kQuestions[] = {
    "Hi! Can you help me plan a small vegetable garden?",
    "What should I plant first?",
    "How much sun do tomatoes need, and does it matter if the afternoon sun is very hot where I live?",
    "Thanks.",
    "Which vegetables grow well together in one bed?",
    "I have a lot of slugs. What can I do about them without poison, since my neighbour's cat visits every day?",
    "How often should I water?",
    "Should I use compost or fertilizer?",
    "When do I harvest carrots?",
    "Can I grow herbs indoors in winter?",
    "Why are the leaves of my beans turning yellow at the edges, starting with the oldest ones near the soil?",
    "Ok.",
    "How do I save seeds for next year?",
    "Is rainwater better than tap water?",
    "What tools does a beginner really need?",
    "My lettuce bolted. What does that mean, and can I still eat it?",
    "How deep should a raised bed be?",
    "Any tips for growing potatoes in bags on a balcony that gets about five hours of sun a day?",
    "What is mulch?",
    "Thank you, that is all for now.",
};
constexpr int kNumQuestions = static_cast<int>(sizeof(kQuestions) / sizeof(kQuestions[0]));

const char* kEditedQuestion =
    "Let me ask that differently: is a soil test kit worth buying, or can I tell what my soil needs by looking at it?";

struct Step {
  enum class Kind { ask, edit, regenerate };
  Kind kind = Kind::ask;
  int turn = 0;      // 1-based
  std::string text;  // ask, edit: the user's message
  uint64_t seed = 0; // one per (turn, attempt), so a regenerated reply differs from the first
};

struct Script {
  std::vector<Step> steps;
  int edit_turn = 0, regenerate_turns[2] = {0, 0};
};

// The edit at about 2/5 of the chat (never the first turn: it cuts back to the previous
// reply), the regenerations at about 1/4 and 13/20, each on a turn of its own.
Script make_script(int turns) {
  Script s;
  s.edit_turn = std::max(2, turns * 2 / 5);
  s.regenerate_turns[0] = std::max(1, turns / 4);
  s.regenerate_turns[1] = std::max(s.edit_turn + 1, turns * 13 / 20);
  for (int t = 1; t <= turns; ++t) {
    const uint64_t seed = 1000 * static_cast<uint64_t>(t);
    s.steps.push_back({Step::Kind::ask, t, kQuestions[(t - 1) % kNumQuestions], seed});
    if (t == s.edit_turn) s.steps.push_back({Step::Kind::edit, t, kEditedQuestion, seed + 1});
    if (t == s.regenerate_turns[0] || t == s.regenerate_turns[1])
      s.steps.push_back({Step::Kind::regenerate, t, {}, seed + 1});
  }
  return s;
}

const char* step_name(Step::Kind k) {
  return k == Step::Kind::ask ? "reply" : k == Step::Kind::edit ? "edit" : "regeneration";
}

// The chat a step answers, from the chat so far (which ends with the previous reply).
void apply_step(std::vector<ChatMessage>& chat, const Step& step) {
  if (step.kind == Step::Kind::ask) {
    chat.push_back({"user", step.text});
  } else if (step.kind == Step::Kind::regenerate) {
    chat.pop_back();  // the reply is discarded; the same user message is answered again
  } else {
    chat.pop_back();  // the reply to the old message goes with it
    chat.back() = {"user", step.text};
  }
}

// Seeded samples, so a regenerated reply differs from the first. A reply ends at the model's
// end of turn, as in a real chat, or at reply_tokens. Not ignore_eos: past an end of turn the
// model writes control tokens (<|im_end|>, <|im_start|>) that a reply's text does not show, so
// the whole chat, tokenized again from its text, would not be the tokens the parked sequence
// holds, and the strategies would no longer run the same chat.
SamplingParams reply_params(const Step& step, int reply_tokens) {
  SamplingParams p;
  p.temperature = 0.8f;
  p.top_p = 0.95f;
  p.seed = step.seed;
  p.max_tokens = reply_tokens;
  return p;
}

// --- The strategies --------------------------------------------------------------------------

struct Reply {
  std::vector<int32_t> prompt;  // what the sequence held when the reply began
  std::vector<int32_t> tokens;
  std::string text;
};

// Steps the engine until tracked request `id` is done; its output, whose one sample must have
// ended at the end of turn or at its full length (cut shorter, the context bound below was too
// small: our bug).
RequestOutput wait_for(Engine& engine, RequestTracker& tracker, RequestId id, int reply_tokens) {
  while (!tracker.output(id)->done)
    if (!engine.step() && !tracker.output(id)->done)
      fail("the engine stopped before request %lld ended", static_cast<long long>(id));
  RequestOutput out = tracker.take_output(id);
  if (!out.ok()) fail("%s", out.error.c_str());
  if (out.samples.size() != 1 ||
      (out.samples[0].finish_reason != "stop" && static_cast<int>(out.samples[0].tokens.size()) != reply_tokens))
    fail("request %lld ended after %zu of %d reply tokens (%s)", static_cast<long long>(id),
         out.samples.empty() ? size_t{0} : out.samples[0].tokens.size(), reply_tokens,
         out.samples.empty() ? "no sample" : out.samples[0].finish_reason.c_str());
  return out;
}

int64_t prompt_work(const EngineStats& s) { return s.num_prefill_tokens + s.num_recomputed_tokens; }

// The counts compare strategies only if the pool was big enough that nothing was dropped.
void check_nothing_dropped(const EngineStats& s, const char* strategy) {
  if (s.kv.num_evictions || s.num_preempted || s.kv.num_reclaims)
    fail("%s: the KV pool of %d blocks was too small (%lld evictions, %lld preemptions, %lld reclaims); the counts "
         "would not compare",
         strategy, s.kv.num_blocks, static_cast<long long>(s.kv.num_evictions), static_cast<long long>(s.num_preempted),
         static_cast<long long>(s.kv.num_reclaims));
}

class ChatStrategy {
 public:
  virtual ~ChatStrategy() = default;
  // The reply to `chat` (which ends with the user's message) for `step`.
  virtual Reply answer(const Step& step, const std::vector<ChatMessage>& chat, const SamplingParams& params) = 0;
  virtual void finish() {}  // after the last step, before the count
  virtual int64_t prompt_tokens_computed() const = 0;
  // Later turns that had to submit the whole chat although the sequence was parked.
  virtual int num_whole_chat_turns() const { return 0; }
};

// The chat's sequence stays parked; normal turns are the app's own (ChatSession::plan_turn
// appends what the chat adds). An edit forks the sequence at the end of the previous turn
// (the old branch stays parked, as an app keeps an edited message's old version, and is
// released at the end); a regeneration rewinds it to where the reply began.
class RewindChat : public ChatStrategy {
 public:
  RewindChat(const ChatModel& chat_model, Backend& backend, const EngineConfig& ec)
      : model_(chat_model), engine_(chat_model.model(), backend, ec), tracker_(engine_) {}

  Reply answer(const Step& step, const std::vector<ChatMessage>& chat, const SamplingParams& params) override {
    ChatSession::Turn turn = step.kind == Step::Kind::ask      ? session_.plan_turn(engine_, model_, chat)
                             : step.kind == Step::Kind::edit ? edit_turn(step.turn, chat)
                                                             : regenerate_turn(chat);
    if (step.kind == Step::Kind::ask && step.turn > 1 && turn.request.continue_seq < 0) ++num_whole_chat_turns_;
    turn.request.params = params;
    Reply reply{turn.prompt_tokens, {}, {}};
    const RequestId id = engine_.submit(turn.request);
    tracker_.track(id, 1);
    session_.turn_started(id, std::move(turn));
    const RequestOutput output = wait_for(engine_, tracker_, id, params.max_tokens);
    session_.turn_ended(engine_, output);
    const SampleOutput& s = output.samples[0];
    if (!s.parked || session_.held_sequence() != s.seq) fail("rewind: the reply's sequence was not parked");
    reply.tokens = s.tokens;
    reply.text = s.text;
    remember(step.turn, chat, reply);
    return reply;
  }

  // The old branches go only now: an edit keeps the old version until the chat is done.
  void finish() override {
    for (SequenceId seq : old_branches_) engine_.release(seq);
    session_.release(engine_);
    while (engine_.step()) {}
  }
  int64_t prompt_tokens_computed() const override {
    check_nothing_dropped(engine_.stats(), "rewind");
    return prompt_work(engine_.stats());
  }
  // Only when the template renders a past reply differently from how it was generated.
  int num_whole_chat_turns() const override { return num_whole_chat_turns_; }

 private:
  // The chat as held after a turn's (last) reply.
  struct Held {
    std::vector<ChatMessage> messages;  // ending with the reply
    std::vector<int32_t> tokens;        // the prompt, then the reply (its last token unstored after "length")
    int32_t num_stored = 0;             // Engine::sequence(seq)->num_stored then
  };

  // Checks the bench's bookkeeping against what the engine stores (a refused rewind or fork
  // would otherwise go unnoticed), then keeps the turn's end and its reply's start.
  void remember(int turn, const std::vector<ChatMessage>& chat, const Reply& reply) {
    Held h{chat, reply.prompt, 0};
    h.messages.push_back({"assistant", reply.text});
    h.tokens.insert(h.tokens.end(), reply.tokens.begin(), reply.tokens.end());
    const std::vector<int32_t> stored = engine_.stored_tokens(session_.held_sequence());
    h.num_stored = static_cast<int32_t>(stored.size());
    if (stored.size() > h.tokens.size() || !std::equal(stored.begin(), stored.end(), h.tokens.begin()) ||
        h.tokens.size() - stored.size() > 1)
      fail("rewind: turn %d's sequence stores %zu tokens that are not the chat's %zu", turn, stored.size(),
           h.tokens.size());
    if (static_cast<int>(turn_ends_.size()) < turn) turn_ends_.resize(static_cast<size_t>(turn));
    turn_ends_[static_cast<size_t>(turn - 1)] = std::move(h);
    reply_start_ = reply.prompt;
  }

  // The turn that answers `chat` from a held chat `from` that the sequence `seq` stores:
  // the tokens it holds but does not store, then the text the chat adds.
  ChatSession::Turn continue_from(SequenceId seq, const Held& from, const std::vector<ChatMessage>& chat) const {
    const std::optional<PromptText> text = chat_continuation(model_.chat_template(), from.messages, chat);
    if (!text) fail("rewind: the chat template does not render the edited chat as a continuation of the turn before");
    ChatSession::Turn turn;
    turn.request.park_when_done = true;
    turn.request.continue_seq = seq;
    turn.request.prompt.assign(from.tokens.begin() + from.num_stored, from.tokens.end());
    const std::vector<int32_t> added = model_.model().tokenizer->encode_markup(text->str(), text->markup_spans());
    turn.request.prompt.insert(turn.request.prompt.end(), added.begin(), added.end());
    turn.prompt_tokens = from.tokens;
    turn.prompt_tokens.insert(turn.prompt_tokens.end(), added.begin(), added.end());
    turn.num_submitted = static_cast<int64_t>(turn.request.prompt.size());
    turn.messages = chat;
    return turn;
  }

  // The edited message's turn began at the end of the previous reply: a child forked there.
  ChatSession::Turn edit_turn(int turn, const std::vector<ChatMessage>& chat) {
    const Held& from = turn_ends_.at(static_cast<size_t>(turn - 2));
    const SequenceId old = session_.held_sequence();
    old_branches_.push_back(old);
    return continue_from(engine_.fork(old, from.num_stored), from, chat);
  }

  // Back to where the reply began. A request's prompt is never empty, so the cut is one token
  // earlier and that token is submitted again.
  ChatSession::Turn regenerate_turn(const std::vector<ChatMessage>& chat) {
    const SequenceId seq = session_.held_sequence();
    engine_.rewind(seq, static_cast<int32_t>(reply_start_.size()) - 1);
    ChatSession::Turn turn;
    turn.request.park_when_done = true;
    turn.request.continue_seq = seq;
    turn.request.prompt = {reply_start_.back()};
    turn.prompt_tokens = reply_start_;
    turn.num_submitted = 1;
    turn.messages = chat;
    return turn;
  }

  const ChatModel& model_;
  Engine engine_;
  RequestTracker tracker_;
  ChatSession session_;
  std::vector<Held> turn_ends_;       // [turn - 1]
  std::vector<int32_t> reply_start_;  // the last reply's prompt
  std::vector<SequenceId> old_branches_;
  int num_whole_chat_turns_ = 0;
};

// Each turn the whole chat as a new request; the prefix cache serves the full blocks that
// earlier turns (prompts and replies) left behind.
class PrefixCacheChat : public ChatStrategy {
 public:
  PrefixCacheChat(const ChatModel& chat_model, Backend& backend, const EngineConfig& ec)
      : model_(chat_model), engine_(chat_model.model(), backend, ec), tracker_(engine_) {}

  Reply answer(const Step&, const std::vector<ChatMessage>& chat, const SamplingParams& params) override {
    Request r;
    r.prompt = model_.encode_chat(chat);
    r.params = params;
    Reply reply{r.prompt, {}, {}};
    const RequestId id = engine_.submit(std::move(r));
    tracker_.track(id, 1);
    SampleOutput s = std::move(wait_for(engine_, tracker_, id, params.max_tokens).samples[0]);
    reply.tokens = std::move(s.tokens);
    reply.text = std::move(s.text);
    return reply;
  }

  int64_t prompt_tokens_computed() const override {
    check_nothing_dropped(engine_.stats(), "prefix_cache");
    return prompt_work(engine_.stats());
  }

 private:
  const ChatModel& model_;
  Engine engine_;
  RequestTracker tracker_;
};

// Each turn the whole chat on a new engine: every prompt token computed.
class NoCacheChat : public ChatStrategy {
 public:
  NoCacheChat(const ChatModel& chat_model, Backend& backend, const EngineConfig& ec)
      : model_(chat_model), backend_(backend), ec_(ec) {}

  Reply answer(const Step&, const std::vector<ChatMessage>& chat, const SamplingParams& params) override {
    Engine engine(model_.model(), backend_, ec_);
    RequestTracker tracker(engine);
    Request r;
    r.prompt = model_.encode_chat(chat);
    r.params = params;
    Reply reply{r.prompt, {}, {}};
    const RequestId id = engine.submit(std::move(r));
    tracker.track(id, 1);
    SampleOutput s = std::move(wait_for(engine, tracker, id, params.max_tokens).samples[0]);
    check_nothing_dropped(engine.stats(), "no_cache");
    computed_ += prompt_work(engine.stats());
    reply.tokens = std::move(s.tokens);
    reply.text = std::move(s.text);
    return reply;
  }

  int64_t prompt_tokens_computed() const override { return computed_; }

 private:
  const ChatModel& model_;
  Backend& backend_;
  EngineConfig ec_;
  int64_t computed_ = 0;
};

// --- The run ---------------------------------------------------------------------------------

struct Run {
  std::vector<Reply> replies;  // [step]
  int64_t prompt_tokens_computed = 0;
  int num_whole_chat_turns = 0;
  double seconds = 0;
};

// The script under one strategy, timed from its engine's making. The assistant messages are the
// strategy's own replies, or, given `conversation`, those of an earlier run: the chat is then
// the same text under every strategy even where their replies differ.
template <typename Make>
Run run_script(Make make, const Script& script, int reply_tokens, const std::vector<Reply>* conversation) {
  const Clock::time_point start = Clock::now();
  std::unique_ptr<ChatStrategy> strategy = make();  // the engine's pool allocation is timed too
  std::vector<ChatMessage> chat{{"system", kSystemPrompt}};
  Run run;
  for (size_t i = 0; i < script.steps.size(); ++i) {
    const Step& step = script.steps[i];
    apply_step(chat, step);
    Reply reply = strategy->answer(step, chat, reply_params(step, reply_tokens));
    chat.push_back({"assistant", conversation ? (*conversation)[i].text : reply.text});
    run.replies.push_back(std::move(reply));
  }
  strategy->finish();
  run.prompt_tokens_computed = strategy->prompt_tokens_computed();
  run.num_whole_chat_turns = strategy->num_whole_chat_turns();
  strategy.reset();
  run.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return run;
}

// An upper bound on the chat's length: every message of the script with empty replies, and
// each reply at twice its tokens (its text, tokenized again, may split differently).
int chat_token_bound(const ChatModel& model, const Script& script, int reply_tokens) {
  std::vector<ChatMessage> all{{"system", kSystemPrompt}};
  for (const Step& s : script.steps)
    if (!s.text.empty()) all.insert(all.end(), {{"user", s.text}, {"assistant", ""}});
  return static_cast<int>(model.encode_chat(all).size()) + static_cast<int>(script.steps.size()) * 2 * reply_tokens;
}

// The first step at which `b` differs from `a` in its prompt or its reply; -1: none.
int first_difference(const Run& a, const Run& b, bool prompts) {
  for (size_t i = 0; i < a.replies.size(); ++i)
    if (prompts ? a.replies[i].prompt != b.replies[i].prompt : a.replies[i].tokens != b.replies[i].tokens)
      return static_cast<int>(i);
  return -1;
}

// Where a strategy's replies part from rewind's, and why: a prompt that differs (the chat's
// text tokenized again splits a past reply otherwise than the model sampled it, e.g. "\n\n"
// as one token where two "\n" were sampled), or, with the same prompt, the engine.
void print_difference(const Script& script, const Run& rewind, const Run& other, const char* name) {
  const int reply = first_difference(rewind, other, false);
  if (reply < 0) return;
  const Step& s = script.steps[static_cast<size_t>(reply)];
  const int prompt = first_difference(rewind, other, true);
  std::printf("  %s: replies differ from rewind's from step %d (%s of turn %d): ", name, reply + 1, step_name(s.kind),
              s.turn);
  if (prompt >= 0 && prompt <= reply)
    std::printf("from step %d its prompt is not the tokens rewind's sequence holds (the chat's text tokenized again "
                "splits an earlier reply otherwise than the model sampled it)\n",
                prompt + 1);
  else
    std::printf("with the same prompt tokens, so the engine sampled otherwise (a bug)\n");
}

}  // namespace

int cmd_bench_chat(const std::vector<std::string>& argv) {
  Args args(argv, with_backend_options({"threads", "turns", "reply-tokens", "block-size"}), {"json"});
  const int threads = args.get_int("threads", 2, 1, 1024);
  const int turns = args.get_int("turns", 20, 4, 100);
  const int reply_tokens = args.get_int("reply-tokens", 24, 1, 512);
  const bool json = args.flag("json");
  EngineConfig one_chat;
  one_chat.block_size = args.get_block_size();
  auto model = load_model(args);
  const ChatModel chat = chat_model(args, *model);
  const Script script = make_script(turns);
  one_chat.max_context = chat_token_bound(chat, script, reply_tokens);
  if (model->config().context_length > 0 && one_chat.max_context > model->config().context_length)
    fail("--turns %d with --reply-tokens %d needs up to %d tokens of context; the model has %d", turns, reply_tokens,
         one_chat.max_context, model->config().context_length);
  BuiltBackend choice = make_backend(args, *model, threads, one_chat.max_batched_tokens, one_chat.block_size);
  Backend& backend = *choice.backend;
  // Room for four whole chats, so neither the old branch an edit keeps nor the cached blocks of
  // abandoned replies push anything out (the counts would not compare; checked after the run).
  EngineConfig four_chats = one_chat;
  const int32_t blocks_per_chat = (one_chat.max_context + one_chat.block_size - 1) / one_chat.block_size;
  one_chat.num_blocks = blocks_per_chat;
  four_chats.num_blocks = 4 * blocks_per_chat;
  if (choice.max_num_blocks > 0) {  // a GPU holds this many
    one_chat.num_blocks = std::min(one_chat.num_blocks, choice.max_num_blocks);
    four_chats.num_blocks = std::min(four_chats.num_blocks, choice.max_num_blocks);
  }

  if (!json)
    std::printf("model %s, %s, block size %d; %d turns with an edit at turn %d and regenerations at turns %d and %d, "
                "replies of up to %d tokens\n",
                model->config().name.c_str(), choice.description.c_str(), one_chat.block_size, turns, script.edit_turn,
                script.regenerate_turns[0], script.regenerate_turns[1], reply_tokens);
  std::fflush(stdout);
  // rewind runs first: its replies are the chat's assistant messages under the other two.
  const Run rewind = run_script([&] { return std::make_unique<RewindChat>(chat, backend, four_chats); }, script,
                                reply_tokens, nullptr);
  const Run prefix = run_script([&] { return std::make_unique<PrefixCacheChat>(chat, backend, four_chats); }, script,
                                reply_tokens, &rewind.replies);
  const Run none = run_script([&] { return std::make_unique<NoCacheChat>(chat, backend, one_chat); }, script,
                              reply_tokens, &rewind.replies);
  const bool identical = first_difference(rewind, prefix, false) < 0 && first_difference(rewind, none, false) < 0;

  if (json) {
    std::printf("{\"turns\":%d,\"edits\":1,\"regenerations\":2,"
                "\"rewind\":{\"prompt_tokens_computed\":%lld,\"seconds\":%.3f},"
                "\"prefix_cache\":{\"prompt_tokens_computed\":%lld,\"seconds\":%.3f},"
                "\"no_cache\":{\"prompt_tokens_computed\":%lld,\"seconds\":%.3f},\"identical\":%s}\n",
                turns, static_cast<long long>(rewind.prompt_tokens_computed), rewind.seconds,
                static_cast<long long>(prefix.prompt_tokens_computed), prefix.seconds,
                static_cast<long long>(none.prompt_tokens_computed), none.seconds, identical ? "true" : "false");
    return 0;
  }
  std::printf("%-14s %24s %10s %12s\n", "strategy", "prompt tokens computed", "seconds", "vs no_cache");
  const std::pair<const char*, const Run*> rows[] = {{"rewind", &rewind}, {"prefix_cache", &prefix}, {"no_cache", &none}};
  for (const auto& [name, r] : rows)
    std::printf("%-14s %24lld %10.2f %11.3fx\n", name, static_cast<long long>(r->prompt_tokens_computed), r->seconds,
                static_cast<double>(r->prompt_tokens_computed) / static_cast<double>(none.prompt_tokens_computed));
  std::printf("replies: %s\n", identical ? "the same tokens under the three strategies at every step"
                                         : "not the same tokens under the three strategies");
  print_difference(script, rewind, prefix, "prefix_cache");
  print_difference(script, rewind, none, "no_cache");
  if (rewind.num_whole_chat_turns > 0)
    std::printf("  rewind: %d later turns submitted the whole chat (the template renders a past reply differently)\n",
                rewind.num_whole_chat_turns);
  return 0;
}

}  // namespace pagedchat::cli
