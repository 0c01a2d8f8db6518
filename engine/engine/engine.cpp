// The engine loop: commands, schedule, transfers, one forward pass, sampling, events.
#include "engine/engine/engine.h"
#include "engine/engine/engine_live.h"

#include <algorithm>
#include <chrono>
#include <cassert>

#include "engine/common/error.h"
#include "engine/kv/kv_transfers.h"
#include "engine/sample/logprobs.h"
#include "engine/sample/sampler.h"
#include "engine/sample/reply_text.h"

namespace pagedchat {

struct Engine::Command {
  enum class Kind { submit, abort, hold, unhold, fork, rewind, release } kind;
  RequestId request = -1;
  Request body;
  SequenceId seq = -1, child = -1;
  int32_t num_tokens = -1;  // fork: at_token; rewind: where to cut
};

Engine::Engine(const Model& model, Backend& backend, EngineConfig config)
    : model_(model),
      backend_(backend),
      config_(config),
      kv_([&] {
        if (config_.max_context <= 0) config_.max_context = model.config().context_length;
        if (config_.block_size <= 0) fail("bad block size %d", config_.block_size);
        if (config_.num_blocks <= 0) config_.num_blocks = (config_.max_context + config_.block_size - 1) / config_.block_size;
        return KvManagerConfig{config_.num_blocks, config_.block_size, std::max(config_.num_host_blocks, 0),
                               0x5061676564ull, {}};
      }()),
      scheduler_({config_.max_batched_tokens, config_.max_num_seqs,
                  config_.num_host_blocks > 0 ? PreemptMode::swap : PreemptMode::recompute}) {
  const ModelConfig& c = model.config();
  step_cost_ = StepCostModel(model.weights, static_cast<int64_t>(backend_.kv_block_bytes(1)));
  backend_.allocate_kv({c.num_layers, c.num_kv_heads, c.head_dim, config_.num_blocks, config_.block_size, config_.max_context});
  if (config_.num_host_blocks > 0) backend_.allocate_host_kv(config_.num_host_blocks);
  open_disk_tier();
  kv_.set_event_sink([this](const KvEvent& e) {
    EngineEvent ev;
    ev.kind = EngineEventKind::kv;
    ev.seq = e.seq;
    if (auto it = live_.find(e.seq); it != live_.end()) {
      ev.request = it->second->request;
      RequestCount& count = requests_[ev.request];
      // A block read from disk is as much a prompt token not computed as a cache hit.
      if ((e.kind == KvEventKind::cache_hit || e.kind == KvEventKind::disk_read) && !count.sampled) ++count.num_cache_hit_blocks;
      if (e.kind == KvEventKind::disk_read && !count.sampled) {
        // The disk's blocks follow the pool's hits of the prompt's first admission: where they
        // start, taken at the first (a preempted prompt re-admitted counts its hits again).
        if (count.num_disk_blocks == 0) count.disk_start_block = count.num_cache_hit_blocks - 1;
        ++count.num_disk_blocks;
      }
    }
    ev.kv = e;
    publish(ev);
  });
}

Engine::~Engine() { save_prompt_rate(); }

// --- Commands (any thread) --------------------------------------------------------------

RequestId Engine::submit(Request request) {
  std::lock_guard lock(mutex_);
  RequestId id = next_request_++;
  commands_.push_back({Command::Kind::submit, id, std::move(request)});
  return id;
}

void Engine::abort(RequestId id) {
  std::lock_guard lock(mutex_);
  commands_.push_back({Command::Kind::abort, id, {}});
}

void Engine::hold(RequestId id, bool held) {
  std::lock_guard lock(mutex_);
  commands_.push_back({held ? Command::Kind::hold : Command::Kind::unhold, id, {}});
}

SequenceId Engine::fork(SequenceId parent, int32_t at_token) {
  std::lock_guard lock(mutex_);
  SequenceId child = next_seq_++;
  commands_.push_back({Command::Kind::fork, -1, {}, parent, child, at_token});
  return child;
}

void Engine::rewind(SequenceId parked, int32_t num_tokens) {
  std::lock_guard lock(mutex_);
  commands_.push_back({Command::Kind::rewind, -1, {}, parked, -1, num_tokens});
}

void Engine::release(SequenceId parked) {
  std::lock_guard lock(mutex_);
  commands_.push_back({Command::Kind::release, -1, {}, parked});
}

// --- Engine thread ----------------------------------------------------------------------

void Engine::subscribe(EventSink sink) { sinks_.push_back(std::move(sink)); }

void Engine::set_cache_figures(EngineEvent& e, RequestId request) {
  RequestCount& count = requests_[request];
  e.num_cached_prompt_tokens = count.num_cache_hit_blocks * config_.block_size;
  e.num_disk_prompt_tokens = count.num_disk_blocks * config_.block_size;
  e.disk_read_seconds = count.disk_read_seconds;
  if (count.num_disk_blocks > 0 && count.estimated_disk_blocks != count.num_disk_blocks) {
    count.disk_prompt_seconds = prompt_seconds(static_cast<int32_t>(count.disk_start_block * config_.block_size),
                                               static_cast<int32_t>(e.num_disk_prompt_tokens));
    count.estimated_disk_blocks = count.num_disk_blocks;  // said once per count: it does not drift with the rate
  }
  e.disk_prompt_seconds = count.disk_prompt_seconds;
}

double Engine::prompt_seconds(int32_t start, int32_t num_tokens) const {
  if (prompt_rate_.flops_per_second() <= 0 || num_tokens <= 0) return 0;
  StepRecord prompt;
  prompt.chunks.push_back({.seq = -1, .start = start, .num_tokens = num_tokens, .num_logits = 1});
  return step_cost_.cost(prompt).flops / prompt_rate_.flops_per_second();
}

void Engine::publish(const EngineEvent& e) {
  for (const EventSink& sink : sinks_) sink(e);
}

bool Engine::has_work() const {
  std::lock_guard lock(mutex_);
  return !commands_.empty() || scheduler_.has_work();
}

EngineStats Engine::stats() const {
  EngineStats s = counters_;
  s.num_waiting = scheduler_.num_waiting();
  s.num_running = scheduler_.num_running();
  s.num_swapped = scheduler_.num_swapped();
  s.num_parked = static_cast<int32_t>(parked_.size());
  if (masker_) {
    s.num_mask_cache_hits = masker_->counts().state_hits;
    s.num_mask_walks = masker_->counts().local_walks;
  }
  for (const auto& [seq, live] : live_) s.num_held += live->s.held ? 1 : 0;
  s.kv = kv_.stats(backend_.kv_block_bytes(backend_.kv_shape().block_size));
  s.disk_tier = disk_ != nullptr;
  if (disk_) s.disk = disk_->stats();
  return s;
}

std::optional<SequenceView> Engine::sequence(SequenceId seq) const {
  if (!kv_.has_sequence(seq)) return std::nullopt;
  std::span<const int32_t> table = kv_.block_table(seq);
  return SequenceView{kv_.state(seq), kv_.num_tokens(seq), {table.begin(), table.end()}};
}

std::vector<int32_t> Engine::stored_tokens(SequenceId seq) const {
  return kv_.has_sequence(seq) ? kv_.stored_tokens(seq) : std::vector<int32_t>{};
}

void Engine::apply_commands() {
  std::vector<Command> commands;
  {
    std::lock_guard lock(mutex_);
    commands.swap(commands_);
  }
  for (Command& c : commands) {
    switch (c.kind) {
      case Command::Kind::submit: start_request(c.request, std::move(c.body)); break;
      case Command::Kind::abort: abort_request(c.request, "abort"); break;
      case Command::Kind::hold: hold_request(c.request, true); break;
      case Command::Kind::unhold: hold_request(c.request, false); break;
      case Command::Kind::fork: fork_sequence(c.seq, c.child, c.num_tokens); break;
      case Command::Kind::rewind: rewind_parked(c.seq, c.num_tokens); break;
      case Command::Kind::release: release_parked(c.seq); break;
    }
  }
}

void Engine::start_request(RequestId id, Request request) {
  const int vocab = model_.config().vocab_size;
  std::string error = request.params.validate();
  if (error.empty() && (request.n < 1 || request.n > 256)) error = "n must be 1 to 256";
  if (error.empty() && !request.sample_params.empty() && static_cast<int>(request.sample_params.size()) != request.n)
    error = "sample_params has " + std::to_string(request.sample_params.size()) + " entries for n = " + std::to_string(request.n);
  for (size_t i = 0; i < request.sample_params.size() && error.empty(); ++i)
    if (std::string e = request.sample_params[i].validate(); !e.empty()) error = "sample " + std::to_string(i) + ": " + e;
  if (error.empty() && request.prompt.empty()) error = "the prompt is empty";
  const bool beam = request.beam_width >= 2;
  if (error.empty() && (request.beam_width < 0 || request.beam_width > 32)) error = "beam_width must be 0 (off) or 2 to 32";
  if (error.empty() && beam && request.n > request.beam_width)
    error = "n is " + std::to_string(request.n) + ", more than the beam width " + std::to_string(request.beam_width);
  if (error.empty() && beam && (!request.sample_params.empty() || request.park_when_done))
    error = "beam search takes no per-sample settings and parks no sequence";
  if (error.empty() && beam && !(request.length_penalty >= -10.0f && request.length_penalty <= 10.0f))
    error = "length_penalty must be from -10 to 10";
  for (int32_t t : request.prompt)
    if (error.empty() && (t < 0 || t >= vocab))
      error = "prompt token " + std::to_string(t) + " is outside the vocabulary (" + std::to_string(vocab) + ")";
  if (error.empty() && request.continue_seq >= 0 && !parked_.count(request.continue_seq))
    error = "sequence " + std::to_string(request.continue_seq) + " is not parked (finished, released or reclaimed)";
  std::vector<int32_t> held;  // what the continued sequence stores
  if (error.empty() && request.continue_seq >= 0) held = kv_.stored_tokens(request.continue_seq);
  const int64_t len = static_cast<int64_t>(held.size() + request.prompt.size());
  if (error.empty() && len >= config_.max_context)
    error = "the prompt has " + std::to_string(len) + " tokens; the context holds " + std::to_string(config_.max_context);
  if (error.empty() && !kv_.fits_ever(len))
    error = "the prompt needs " + std::to_string(kv_.num_blocks_for(len)) + " KV blocks of " +
            std::to_string(config_.block_size) + " tokens; the whole pool has " + std::to_string(kv_.num_blocks());
  if (!error.empty()) {
    EngineEvent e;
    e.kind = EngineEventKind::error;
    e.request = id;
    e.reason = "request " + std::to_string(id) + ": " + error;
    e.request_done = true;
    publish(e);
    return;
  }
  auto live = std::make_unique<Live>(request.sample_params.empty() ? request.params : request.sample_params[0]);
  live->s.arrival = next_arrival_++;
  live->request = id;
  live->num_to_fork = beam ? 0 : request.n - 1;
  if (beam) {
    auto group = std::make_unique<BeamGroup>();
    group->request = id;
    group->width = request.beam_width;
    group->num_return = request.n;
    group->length_penalty = request.length_penalty;
    group->params = request.params;
    live->beam = group.get();
    beams_[id] = std::move(group);
  }
  if (!request.sample_params.empty())
    live->fork_params.assign(request.sample_params.begin() + 1, request.sample_params.end());
  live->num_prompt = static_cast<int32_t>(held.size() + request.prompt.size());
  live->park_when_done = request.park_when_done;
  live->s.cache_salt = request.cache_salt;
  if (request.continue_seq >= 0) {
    // Resumed where it stopped: only the new tokens are computed.
    live->s.id = request.continue_seq;
    live->s.tokens = std::move(held);
    live->s.num_computed = static_cast<int32_t>(live->s.tokens.size());
    live->s.tokens.insert(live->s.tokens.end(), request.prompt.begin(), request.prompt.end());
    live->s.in_kv = true;
    parked_.erase(request.continue_seq);
    kv_.resume(request.continue_seq);
    scheduler_.add_running(&live->s);
  } else {
    live->s.id = new_sequence_id();
    live->s.tokens = std::move(request.prompt);
  }
  if (!live->s.in_kv) scheduler_.add_waiting(&live->s);
  if (live->beam) live->beam->live.push_back(live->s.id);
  requests_[id] = {1, 1, 0, false};
  live_.emplace(live->s.id, std::move(live));
}

void Engine::abort_request(RequestId id, const char* reason) {
  std::vector<Live*> victims;
  for (auto& [seq, live] : live_)
    if (live->request == id) victims.push_back(live.get());
  std::sort(victims.begin(), victims.end(), [](Live* a, Live* b) { return a->s.id < b->s.id; });
  for (Live* live : victims) {
    live->park_when_done = false;
    live->beam = nullptr;  // an aborted beam search ends as its beams do, with no hypotheses
    finish(*live, reason);
  }
  beams_.erase(id);
}

void Engine::hold_request(RequestId id, bool held) {
  for (auto& [seq, live] : live_)
    if (live->request == id) live->s.held = held;
}

bool Engine::step() {
  apply_commands();
  // Beam selections that waited for a beam to come back (swapped out, or recomputed).
  std::vector<BeamGroup*> waiting;
  for (auto& [id, group] : beams_) waiting.push_back(group.get());
  std::sort(waiting.begin(), waiting.end(), [](const BeamGroup* a, const BeamGroup* b) { return a->request < b->request; });
  for (BeamGroup* g : waiting) select_beams(*g);
  last_step_ = {};
  if (!scheduler_.has_work()) return has_work();
  propose_drafts();
  stage_from_disk();
  ScheduledStep step = scheduler_.schedule(kv_);
  for (SequenceId id : step.reclaimed) parked_.erase(id);
  counters_.num_preempted += static_cast<int64_t>(step.preempted.size());
  counters_.num_swapped_out += static_cast<int64_t>(step.swapped_out.size());
  record_step(step);  // before the forward: a sequence that finishes in it is gone after
  run_forward(step);
  last_step_.step_index = counters_.num_steps;
  drop_unverified_drafts();
  return has_work();
}

void Engine::record_step(const ScheduledStep& step) {
  for (const ScheduledChunk& c : step.chunks)
    last_step_.chunks.push_back({c.seq->id, c.start, c.num_tokens, c.is_decode, c.num_recomputed, c.num_logits()});
  last_step_.preempted = step.preempted;
  last_step_.swapped_out = step.swapped_out;
  last_step_.swapped_in = step.swapped_in;
  last_step_.reclaimed = step.reclaimed;
}

// Transfers, then the forward pass over every chunk, then sampling where a chunk reached the
// end of its sequence's tokens.
void Engine::run_forward(const ScheduledStep& step) {
  ForwardBatch batch;
  std::vector<int32_t> table;
  for (const ScheduledChunk& c : step.chunks) {
    std::span<const int32_t> t = kv_.block_table(c.seq->id);
    table.assign(t.begin(), t.end());
    const int32_t rows = c.num_logits();
    batch.add_sequence(c.seq->tokens.data() + c.start, c.num_tokens, c.start, table, c.slot_mapping, rows == 1);
    if (rows > 1) batch.want_last_logits(rows);
  }
  try {
    for (const TransferBatch& tb : batch_transfers(kv_.take_transfers())) {
      switch (tb.kind) {
        case TransferKind::copy: backend_.copy_blocks(tb.pairs); break;
        case TransferKind::swap_out: backend_.swap_out(tb.pairs); break;
        case TransferKind::swap_in: backend_.swap_in(tb.pairs); break;
        case TransferKind::from_disk: load_from_disk(tb.pairs); break;
      }
    }
    if (step.empty()) return;  // only transfers (a swap-out) this step
    const auto t0 = std::chrono::steady_clock::now();
    backend_.forward(batch, logits_);
    last_step_.forward_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    last_step_.experts_run = backend_.experts_run_last_forward();
    last_step_.cost = step_cost_.cost(last_step_);
    int32_t prompt_tokens = 0;
    for (const StepRecord::Chunk& c : last_step_.chunks)
      if (!c.is_decode) prompt_tokens += c.num_tokens;
    // Saved for the next run as soon as there is a figure, and again as it settles (a decode
    // step counts nothing and saves nothing).
    if (prompt_rate_.observe(prompt_tokens, last_step_.cost.flops, last_step_.forward_seconds))
      if (const int64_t n = prompt_rate_.num_samples(); (n & (n - 1)) == 0 && n <= 1024) save_prompt_rate();
  } catch (const std::exception& e) {
    kv_.take_sealed();  // the batch's blocks hold no K/V
    fail_batch(step, e.what());
    return;
  }
  write_sealed_to_disk();  // before drafts are cut off (a block they filled holds their K/V: valid for those tokens)
  ++counters_.num_steps;
  const size_t vocab = static_cast<size_t>(model_.config().vocab_size);
  size_t row = 0;
  for (const ScheduledChunk& c : step.chunks) {
    count_computed(c);
    const int32_t rows = c.num_logits();
    if (rows == 0) continue;
    Live& live = *live_.at(c.seq->id);
    std::span<const float> logits = std::span<const float>(logits_).subspan(row * vocab, rows * vocab);
    row += static_cast<size_t>(rows);
    if (c.is_decode) {
      ++live.spec.decode_steps;
      ++(rows > 1 ? counters_.num_spec_decodes : counters_.num_plain_decodes);
    }
    if (live.beam) beam_logits(live, logits);
    else if (rows > 1) verify_drafts(live, c, logits);
    else after_logits(live, logits);
  }
}

// Splits a computed chunk into recompute (K/V a preemption dropped), then prompt tokens, then
// generated ones (a decode, or the last sampled token computed at the end of a recompute).
void Engine::count_computed(const ScheduledChunk& c) {
  const int32_t fresh_start = c.start + c.num_recomputed;
  const int32_t fresh = c.num_tokens - c.num_recomputed;
  const int32_t prompt = std::clamp(live_.at(c.seq->id)->num_prompt - fresh_start, 0, fresh);
  counters_.num_recomputed_tokens += c.num_recomputed;
  counters_.num_prefill_tokens += prompt;
  counters_.num_decode_tokens += fresh - prompt;
}

// The step's forward failed: its sequences' new blocks hold no K/V, so they are discarded
// (never served from the prefix cache) and their requests fail (an error, then each sequence
// finishes with reason "error"); the others go on.
void Engine::fail_batch(const ScheduledStep& step, const std::string& message) {
  std::vector<RequestId> failed;
  for (const ScheduledChunk& c : step.chunks) failed.push_back(live_.at(c.seq->id)->request);
  for (const ScheduledChunk& c : step.chunks) {
    kv_.discard(c.seq->id);
    c.seq->in_kv = false;
  }
  std::sort(failed.begin(), failed.end());
  failed.erase(std::unique(failed.begin(), failed.end()), failed.end());
  for (RequestId id : failed) {
    EngineEvent e;
    e.kind = EngineEventKind::error;
    e.request = id;
    e.reason = "request " + std::to_string(id) + ": the forward pass failed: " + message;
    publish(e);
    abort_request(id, "error");
  }
}

// A sequence's logits: the first ones of a request with n > 1 fork the samples off (the prompt
// was computed once; the children share its blocks), then each sequence samples.
void Engine::after_logits(Live& live, std::span<const float> logits) {
  std::vector<Live*> samplers{&live};
  for (int i = 1; i <= live.num_to_fork; ++i) {
    SamplingParams p = live.params;
    p.seed += static_cast<uint64_t>(i);
    if (!live.fork_params.empty()) p = live.fork_params[static_cast<size_t>(i - 1)];
    samplers.push_back(&add_child(live, new_sequence_id(), p));
    assert(samplers.back()->index == i);
  }
  live.num_to_fork = 0;
  live.fork_params.clear();
  for (Live* l : samplers) sample(*l, logits);
}

// A sequence's next token: sampled under its grammar's mask (none while it thinks), or its
// thinking's end written when its budget is spent; then what the grammar forces (jump-forward).
void Engine::sample(Live& live, std::span<const float> logits) {
  if (live.in_reasoning && live.params.reasoning_budget >= 0 && live.num_reasoning_tokens >= live.params.reasoning_budget) {
    // The thinking has had its tokens: its end is written for it, and the answer follows.
    if (append_forced(live, "\n" + live.params.reasoning_end + "\n\n", false) && live.matcher && live.params.jump_forward) jump_forward(live);
    return;
  }
  const uint64_t* allowed = nullptr;
  if (live.matcher && !live.in_reasoning) {
    const grammar::TokenMask& mask = allowed_tokens(*live.matcher);
    if (mask.count() == 0) return grammar_dead_end(live);
    allowed = mask.words.data();
  }
  if (take_token(live, live.sampler.sample(logits, live.s.tokens, allowed), logits) && live.matcher && live.params.jump_forward)
    jump_forward(live);
}


// A sampled token: appended and published, or the end of the sequence. Returns whether the
// sequence goes on (false: finished, and `live` is gone).
bool Engine::take_token(Live& live, int32_t next, std::span<const float> logits) {
  const Tokenizer& tok = *model_.tokenizer;
  ++counters_.num_generated;
  RequestCount& count = requests_[live.request];
  count.sampled = true;
  // Under a grammar an end-of-generation token comes only once the reply is whole, and ends it.
  if ((!live.params.ignore_eos || live.matcher) && tok.is_eog(next)) {
    finish(live, "stop");
    return false;
  }
  if (live.in_reasoning) {
    follow_reasoning(live, tok.token_to_piece(next));
  } else if (live.matcher) {
    [[maybe_unused]] const bool allowed = live.matcher->accept(tok.token_to_piece(next));
    assert(allowed);  // sampled under the grammar's mask
  }
  live.s.tokens.push_back(next);
  ++live.num_generated;
  EngineEvent e = token_event(live, next, tok.token_to_piece(next));
  if (live.params.num_logprobs >= 0) {
    TokenLogprobs lp = token_logprobs(logits, next, live.params.num_logprobs);
    e.logprob = lp.logprob;
    e.top_logprobs = std::move(lp.top);
  }
  publish(e);
  const char* reason = nullptr;
  if (live.text.stopped() || (live.matcher && !live.in_reasoning && live.matcher->finished())) reason = "stop";
  else if (at_length_limit(live)) reason = "length";
  if (!reason) return true;
  finish(live, reason);
  return false;
}

// A token of the sequence as its event: its text is the reply's next shown text (stop strings
// and partial characters held back).
EngineEvent Engine::token_event(Live& live, int32_t token, const std::string& piece) {
  EngineEvent e;
  e.kind = EngineEventKind::token;
  e.request = live.request;
  e.seq = live.s.id;
  e.index = live.index;
  e.token = token;
  e.text = live.text.push(piece);
  set_cache_figures(e, live.request);
  e.spec = live.spec;
  return e;
}

// A sequence that may not grow: its max_tokens generated, the context full, or more tokens than
// the whole pool holds.
bool Engine::at_length_limit(const Live& live) const {
  const auto len = static_cast<int64_t>(live.s.tokens.size());
  return live.num_generated >= live.params.max_tokens || len >= config_.max_context || !kv_.fits_ever(len);
}

// Ends a sequence: parked (still resident) or freed, and forgotten by the scheduler.
void Engine::finish(Live& live, const char* reason) {
  EngineEvent e;
  e.kind = EngineEventKind::finished;
  e.request = live.request;
  e.seq = live.s.id;
  e.index = live.index;
  e.reason = reason;
  e.text = live.text.flush();
  e.spec = live.spec;
  scheduler_.remove(live.s.id);
  if (config_.drafter) config_.drafter->forget(live.s.id);
  if (live.s.in_kv && live.park_when_done) {
    // A reply that ended inside a verified draft holds K/V past its last sampled token.
    if (kv_.num_tokens(live.s.id) > live.s.num_computed) kv_.rewind(live.s.id, live.s.num_computed);
    kv_.park(live.s.id);
    parked_.insert(live.s.id);
    e.parked = true;
  } else if (live.s.in_kv) {
    kv_.free(live.s.id);
  }
  RequestCount& count = requests_[live.request];
  set_cache_figures(e, live.request);
  e.request_done = --count.num_live == 0;
  if (e.request_done) requests_.erase(live.request);
  SequenceId id = live.s.id;
  publish(e);
  live_.erase(id);
}

const char* engine_event_name(EngineEventKind k) {
  switch (k) {
    case EngineEventKind::token: return "token";
    case EngineEventKind::finished: return "finished";
    case EngineEventKind::error: return "error";
    case EngineEventKind::kv: return "kv";
  }
  return "?";
}

}  // namespace pagedchat
