// A chat's hold on the engine between turns (engine/chat/chat_session.h), on the real default
// model: a next turn appends only what it adds to the parked sequence, and its greedy reply
// equals that of the same tokens submitted fresh; a fork shares the parent's blocks only when
// it holds exactly what the parent holds; a compare's samples stay parked until one is picked;
// a refused turn and a released chat leave nothing behind.

#include <QtTest>

#include <memory>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/chat/chat_session.h"
#include "engine/engine/engine.h"
#include "engine/engine/request_tracker.h"
#include "engine/chat/chat_model.h"
#include "engine/model/model.h"
#include "support/chat_turn.h"
#include "support/test_env.h"

using namespace pagedchat;

class TestChatSession : public QObject {
  Q_OBJECT

  std::unique_ptr<Model> model_;
  ChatModel chat_;  // model_ with its own chat template
  std::unique_ptr<CpuBackend> backend_;

  static EngineConfig config() {
    EngineConfig c;
    c.block_size = 16;
    c.num_blocks = 256;
    c.max_context = 1024;
    return c;
  }

  // Submits the planned turn greedily (n samples), steps to its end; returns the done output.
  RequestOutput runTurn(Engine& engine, RequestTracker& tracker, ChatSession& chat, ChatSession::Turn turn, int n = 1,
                        int max_tokens = 8) {
    turn.request.params.temperature = n > 1 ? 1.0f : 0.0f;
    turn.request.params.max_tokens = max_tokens;
    turn.request.params.ignore_eos = true;
    turn.request.n = n;
    return test::run_chat_turn(engine, tracker, chat, std::move(turn), &lastContext_);
  }
  int lastContext_ = -1;

  // The greedy reply (8 tokens) to `tokens` submitted fresh, to an engine with an empty cache.
  std::vector<int32_t> freshReply(const std::vector<int32_t>& tokens) {
    Engine fresh(*model_, *backend_, config());
    RequestTracker tracker(fresh);
    Request ref;
    ref.prompt = tokens;
    ref.params.temperature = 0.0f;
    ref.params.max_tokens = 8;
    ref.params.ignore_eos = true;
    const RequestId id = fresh.submit(ref);
    tracker.track(id, 1);
    while (fresh.step()) {}
    return tracker.output(id)->samples[0].tokens;
  }

  static std::vector<ChatMessage> extend(std::vector<ChatMessage> chat, const std::string& reply, const std::string& next) {
    chat.push_back({"assistant", reply});
    chat.push_back({"user", next});
    return chat;
  }

 private slots:
  void initTestCase() {
    PC_REQUIRE_ENV(path, "PAGEDCHAT_TEST_MODEL");
    model_ = Model::load(path);
    chat_ = ChatModel(*model_, ChatModel::own_template(*model_));
    backend_ = std::make_unique<CpuBackend>(model_->weights, 2);
  }

  void aNextTurnAppendsOnlyWhatItAdds() {
    Engine engine(*model_, *backend_, config());
    RequestTracker tracker(engine);
    ChatSession chat;
    const std::vector<ChatMessage> first = {{"system", "Be brief."}, {"user", "Name a colour."}};
    ChatSession::Turn t1 = chat.plan_turn(engine, chat_, first);
    QCOMPARE(t1.request.continue_seq, SequenceId{-1});
    QCOMPARE(t1.request.prompt, chat_.encode_chat(first));
    QVERIFY(t1.request.park_when_done);
    const std::vector<int32_t> prompt1 = t1.request.prompt;
    const RequestOutput r1 = runTurn(engine, tracker, chat, std::move(t1));
    QVERIFY(r1.ok());
    QCOMPARE(lastContext_, chat.context_used());
    QCOMPARE(chat.context_used(), static_cast<int>(prompt1.size() + r1.samples[0].tokens.size()));
    const SequenceId held = chat.held_sequence();
    QCOMPARE(held, r1.samples[0].seq);
    QCOMPARE(engine.sequence(held)->state, SequenceState::parked);

    const std::vector<ChatMessage> second = extend(first, r1.samples[0].text, "And another?");
    const int64_t before = engine.stats().num_prefill_tokens;
    ChatSession::Turn t2 = chat.plan_turn(engine, chat_, second);
    QCOMPARE(t2.request.continue_seq, held);
    QVERIFY(t2.request.prompt.size() < 20);  // the reply's end and the new user turn, not the chat
    // The sequence will hold what it stores, then the prompt: the reference submits exactly that.
    std::vector<int32_t> whole = engine.stored_tokens(held);
    whole.insert(whole.end(), t2.request.prompt.begin(), t2.request.prompt.end());
    QCOMPARE(t2.prompt_tokens, whole);
    const int64_t submitted = t2.num_submitted;
    const RequestOutput r2 = runTurn(engine, tracker, chat, std::move(t2));
    QCOMPARE(engine.stats().num_prefill_tokens - before, submitted);

    QCOMPARE(r2.samples[0].tokens, freshReply(whole));  // bit for bit the same reply
  }

  void aForkSharesOnlyWhatTheParentHolds() {
    Engine engine(*model_, *backend_, config());
    RequestTracker tracker(engine);
    ChatSession parent, child, other;
    const std::vector<ChatMessage> first = {{"user", "Count to three."}};
    const RequestOutput r = runTurn(engine, tracker, parent, parent.plan_turn(engine, chat_, first));
    std::vector<ChatMessage> held = first;
    held.push_back({"assistant", r.samples[0].text});
    // A chat that is not the start of what the parent holds (an edited first message) shares nothing.
    QCOMPARE(parent.fork_into(engine, chat_, other, std::vector<ChatMessage>{{"user", "Something else."}}), SequenceId{-1});
    QCOMPARE(other.context_used(), 0);
    const SequenceId seq = parent.fork_into(engine, chat_, child, held);
    QVERIFY(seq >= 0);
    QCOMPARE(child.context_used(), parent.context_used());
    const int64_t steps = engine.stats().num_steps;
    engine.step();  // applies the fork command; nothing to compute
    QCOMPARE(engine.stats().num_steps, steps);
    QCOMPARE(engine.sequence(seq)->block_table, engine.sequence(parent.held_sequence())->block_table);
    QCOMPARE(engine.stats().num_parked, 2);
    // The child's next turn appends to the shared sequence.
    ChatSession::Turn t = child.plan_turn(engine, chat_, extend(first, r.samples[0].text, "Now backwards."));
    QCOMPARE(t.request.continue_seq, seq);
    // While a turn is in flight, a fork shares nothing.
    ChatSession third;
    child.turn_started(engine.submit(t.request), std::move(t));
    QCOMPARE(child.fork_into(engine, chat_, third, std::nullopt), SequenceId{-1});
  }

  // A fork at an earlier message shares the tokens of the messages it keeps, by a fork at the
  // token where they end: after a reply (a fork "here"), or before a message (an edit: the
  // system prompt's tokens when the first message is edited). The child's next turn computes
  // only its new text and replies as the same tokens submitted fresh.
  void aForkAtAnEarlierMessageSharesItsTokens_data() {
    QTest::addColumn<int>("keep");  // messages the child keeps
    QTest::newRow("after the first reply") << 3;
    QTest::newRow("before the first user message") << 1;
    QTest::newRow("after the second reply") << 5;
  }
  void aForkAtAnEarlierMessageSharesItsTokens() {
    QFETCH(int, keep);
    Engine engine(*model_, *backend_, config());
    RequestTracker tracker(engine);
    ChatSession parent;
    std::vector<ChatMessage> chat = {{"system", "You answer in one short sentence."}, {"user", "Name a river."}};
    for (const char* next : {"Name a mountain.", "Name a desert.", ""}) {
      const RequestOutput r = runTurn(engine, tracker, parent, parent.plan_turn(engine, chat_, chat));
      QVERIFY(r.ok());
      if (*next) chat = extend(chat, r.samples[0].text, next);
      else chat.push_back({"assistant", r.samples[0].text});
    }
    QCOMPARE(chat.size(), size_t{7});  // system + 3 turns
    const std::vector<ChatMessage> kept(chat.begin(), chat.begin() + keep);
    ChatSession child;
    const SequenceId seq = parent.fork_into(engine, chat_, child, kept);
    QVERIFY(seq >= 0);
    engine.step();
    const std::vector<int32_t> shared = engine.stored_tokens(seq);
    QCOMPARE(static_cast<int>(shared.size()), child.context_used());
    const std::vector<int32_t> parentTokens = engine.stored_tokens(parent.held_sequence());
    QVERIFY(shared.size() < parentTokens.size() && std::equal(shared.begin(), shared.end(), parentTokens.begin()));
    if (keep == 1) {
      // The system prompt's tokens and the opening of the next user turn, which every chat
      // going on from here begins with.
      std::vector<ChatMessage> probe = kept;
      probe.push_back({"user", "x"});
      const PromptText text = chat_.chat_template().apply(probe, false);
      QCOMPARE(shared, chat_.encode_prompt(text.slice(0, text.str().rfind('x'))));
      const std::vector<int32_t> system = chat_.encode_chat(kept, false);
      QVERIFY(shared.size() > system.size() && std::equal(system.begin(), system.end(), shared.begin()));
    }

    // The child's next turn: only what it adds.
    std::vector<ChatMessage> next = kept;
    next.push_back({"user", "Name a lake instead."});
    ChatSession::Turn t = child.plan_turn(engine, chat_, next);
    QCOMPARE(t.request.continue_seq, seq);
    std::vector<int32_t> whole = shared;
    whole.insert(whole.end(), t.request.prompt.begin(), t.request.prompt.end());
    const int64_t submitted = t.num_submitted;
    QVERIFY(submitted < 20);
    const int64_t before = engine.stats().num_prefill_tokens;
    const RequestOutput r = runTurn(engine, tracker, child, std::move(t));
    QCOMPARE(engine.stats().num_prefill_tokens - before, submitted);
    QCOMPARE(r.samples[0].tokens, freshReply(whole));
    QCOMPARE(engine.kv().check_invariants(), std::string());
  }

  // Versions: a regenerated reply (the chat without its last reply) forks the held sequence at
  // the end of the reply before it and keeps the old version parked; going on from the old
  // version later appends to its sequence, computing only the new text.
  void versionsStayParkedAndSwitchingBackComputesNothingAgain() {
    Engine engine(*model_, *backend_, config());
    RequestTracker tracker(engine);
    ChatSession chat;
    std::vector<ChatMessage> c = {{"user", "Name a river."}};
    const RequestOutput r1 = runTurn(engine, tracker, chat, chat.plan_turn(engine, chat_, c));
    c = extend(c, r1.samples[0].text, "Name a mountain.");
    const RequestOutput r2 = runTurn(engine, tracker, chat, chat.plan_turn(engine, chat_, c));
    const SequenceId oldVersion = chat.held_sequence();
    // Regenerate the second reply: the chat as it was before it.
    ChatSession::Turn again = chat.plan_turn(engine, chat_, c);
    QVERIFY(again.request.continue_seq >= 0 && again.request.continue_seq != oldVersion);  // a fork of it
    QVERIFY2(again.num_submitted < 20, qPrintable(QString::number(again.num_submitted)));  // not the whole chat
    const int64_t before = engine.stats().num_prefill_tokens;
    const int64_t submitted = again.num_submitted;
    again.request.params.temperature = 1.5f;  // another reply than the greedy one
    again.request.params.seed = 99;
    again.request.params.max_tokens = 8;
    again.request.params.ignore_eos = true;
    const RequestOutput r2b = test::run_chat_turn(engine, tracker, chat, std::move(again));
    QVERIFY(r2b.samples[0].text != r2.samples[0].text);
    QCOMPARE(engine.stats().num_prefill_tokens - before, submitted);
    QCOMPARE(engine.sequence(oldVersion)->state, SequenceState::parked);  // the old version is kept
    QCOMPARE(chat.sequences().size(), size_t{2});
    // Back to the old version, and on from it: its own sequence, only the new text computed.
    const std::vector<ChatMessage> old = extend(c, r2.samples[0].text, "And a lake?");
    ChatSession::Turn on = chat.plan_turn(engine, chat_, old);
    QCOMPARE(on.request.continue_seq, oldVersion);
    QVERIFY(on.num_submitted < 20);
    // Released, the chat gives every version's blocks back.
    chat.release(engine);
    engine.step();
    QCOMPARE(engine.stats().num_parked, 0);
    QCOMPARE(engine.stats().kv.num_used_blocks, 0);
  }

  void aCompareStaysParkedUntilOneIsPicked() {
    Engine engine(*model_, *backend_, config());
    RequestTracker tracker(engine);
    ChatSession chat;
    ChatSession::Turn t = chat.plan_turn(engine, chat_, {{"user", "Invent a word."}});
    const size_t promptSize = t.prompt_tokens.size();
    const RequestId id = engine.submit([&] {
      Request r = t.request;
      r.n = 3;
      r.params.temperature = 1.0f;
      r.params.max_tokens = 6;
      r.params.ignore_eos = true;
      return r;
    }());
    tracker.track(id, 3);
    chat.turn_started(id, std::move(t));
    while (engine.step()) {}
    const RequestOutput out = tracker.take_output(id);
    QCOMPARE(chat.turn_ended(engine, out), static_cast<int>(promptSize + out.samples[0].tokens.size()));
    QVERIFY(chat.awaiting_pick());
    QCOMPARE(chat.sequences().size(), size_t{3});
    QCOMPARE(engine.stats().num_parked, 3);
    chat.pick(engine, 1);
    engine.step();
    QCOMPARE(engine.stats().num_parked, 1);
    QCOMPARE(chat.held_sequence(), out.samples[1].seq);
    QCOMPARE(chat.context_used(), static_cast<int>(promptSize + out.samples[1].tokens.size()));
    QVERIFY(!chat.awaiting_pick());
  }

  void refusedTurnsAndReleasedChatsHoldNothing() {
    EngineConfig c = config();
    c.max_context = 64;
    Engine engine(*model_, *backend_, c);
    RequestTracker tracker(engine);
    ChatSession chat;
    runTurn(engine, tracker, chat, chat.plan_turn(engine, chat_, {{"user", "Hi."}}));
    QVERIFY(chat.held_sequence() >= 0);
    // A chat past the context: the engine refuses the turn, and the chat holds nothing.
    std::string longText;
    while (model_->tokenizer->encode(longText, false, false).size() < 80) longText += "more words here ";
    ChatSession::Turn t = chat.plan_turn(engine, chat_, {{"user", "Hi."}, {"assistant", "x"}, {"user", longText}});
    const RequestOutput refused = runTurn(engine, tracker, chat, std::move(t));
    QVERIFY2(refused.error.find("context") != std::string::npos, refused.error.c_str());
    QCOMPARE(lastContext_, 0);
    QCOMPARE(chat.held_sequence(), SequenceId{-1});
    // Released with a compare unpicked: every block goes back.
    ChatSession::Turn t2 = chat.plan_turn(engine, chat_, {{"user", "Hello."}});
    t2.request.n = 2;
    const RequestId id = engine.submit(t2.request);
    tracker.track(id, 2);
    chat.turn_started(id, std::move(t2));
    while (engine.step()) {}
    chat.turn_ended(engine, tracker.take_output(id));
    chat.release(engine);
    engine.step();
    QCOMPARE(engine.stats().num_parked, 0);
    QCOMPARE(engine.stats().kv.num_used_blocks, 0);
  }
};

QTEST_APPLESS_MAIN(TestChatSession)
#include "test_chat_session.moc"
