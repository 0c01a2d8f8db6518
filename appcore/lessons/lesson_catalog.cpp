// The lessons' catalogue (LessonRunner::lessons): what each is called, what its introduction
// tells the class, the event it is reached at, and the engine it needs. Their scenes are
// lesson_runner.cpp's.
#include <QCoreApplication>

#include "appcore/lessons/lesson_runner.h"

using pagedchat::KvEventKind;

namespace {
QString tr(const char* text) { return QCoreApplication::translate("LessonRunner", text); }
constexpr int kPool = AppSettings::kTeachingBlocks;

LessonInfo lesson(const char* id, const char* title, const char* intro, KvEventKind key, int poolBlocks = kPool) {
  LessonInfo l;
  l.id = QString::fromLatin1(id);
  l.title = tr(title);
  l.intro = tr(intro);
  l.keyEvent = key;
  l.poolBlocks = poolBlocks;
  return l;
}
}  // namespace

const QVector<LessonInfo>& LessonRunner::lessons() {
  static const QVector<LessonInfo> all = [] {
    QVector<LessonInfo> v;
    v << lesson("allocation", "Blocks on demand",
                "Chat A's prompt is about to be computed. Paged memory gives it blocks of 4 tokens as its tokens arrive, not a "
                "slab for its whole context: only its last block has empty slots. Press Next event.",
                KvEventKind::allocate);
    LessonInfo contiguous = lesson(
        "contiguous", "Contiguous slabs against paged blocks",
        "Three chats start at once. Given a slab of their whole context each (256 tokens, as before paging), the pool's 512 "
        "slots would hold two of them and the third could not start; paged, each takes blocks of 4 as its tokens come. The "
        "two bars under the pool's numbers draw the same chats both ways. Press Next event until Chat C gets its blocks.",
        KvEventKind::allocate);
    contiguous.keyChat = tr("Chat C");
    contiguous.onlyHere = tr("a remote server's frames do not say how long a context it gives each request");
    v << contiguous;
    v << lesson("fork", "A fork shares its blocks, then copies on write",
                "Chat B is a fork of Chat A: it holds every block of A (ref count 2), nothing copied. Its first new token goes "
                "into the shared, partly filled last block, which must be copied first. Press Next event.",
                KvEventKind::copy_on_write);
    v.back().onlyHere = tr("on a remote server a fork is a new request, whose blocks its prefix cache shares (nothing is copied on write)");
    v << lesson("prefix", "A shared system prompt through the prefix cache",
                "Chat A has read the shared system prompt; Chat B starts with the same one. Its prompt's full blocks are found "
                "in the prefix cache and shared, not computed again. Press Next event.",
                KvEventKind::cache_hit);
    v << lesson("parallel", "Parallel sampling: three samples of one prompt",
                "Chat A asks for three samples of one answer. The prompt is computed once; the two other samples are forks "
                "that share its blocks (ref count 3), and each copies only the last, partly filled block when it writes its "
                "own first token. Press Next event.",
                KvEventKind::share);
    v << lesson("eviction", "Cached blocks evicted, least recently used first",
                "The pool (48 blocks) is nearly full of earlier chats' blocks. Chat D's prompt needs more than is free: the "
                "oldest parked chat is reclaimed (its full blocks stay cached), then cached blocks are evicted, least "
                "recently used first. Press Next event until a block is evicted.",
                KvEventKind::evict, 48);
    v << lesson("recompute", "Preemption by recompute",
                "Chats A and B each write a long story in a pool of 64 blocks, one context. Together they outgrow it: the "
                "latest to arrive is preempted, its blocks freed, and its tokens are computed again when there is room. "
                "Press Next event until the preemption (or Step ×10).",
                KvEventKind::preempt, 64);
    LessonInfo swap = lesson("swap", "Preemption by swap to host memory",
                             "The same two stories in the same pool, now with 64 blocks of host memory to swap to: the chat "
                             "preempted is copied out to host blocks (h0, h1, ...) and back in later, nothing computed again, "
                             "its text unchanged. Press Next event until the swap (or Step ×10).",
                             KvEventKind::swap_out, 64);
    swap.hostBlocks = 64;
    v << swap;
    LessonInfo prefill = lesson(
        "prefill", "Prefill against decode: compute-bound and memory-bound steps",
        "Chat A's prompt is about to be computed, 32 tokens a step, then its answer, one token a step. The Roofline tab "
        "draws this machine's limits, measured just now: the slope is memory (bytes read per second), the flat roof is "
        "arithmetic (FLOP per second), and they meet at the ridge. Every step must read all the weights once: a prompt "
        "step multiplies each weight it reads by 32 tokens and lands right of the ridge, under the compute roof; a decode "
        "step reads every weight and the whole context for one token and lands far left, under the memory slope. Press "
        "Step.",
        KvEventKind::allocate);
    prefill.keyStep = LessonInfo::KeyStep::decodeAfterPrompt;
    prefill.history = LessonInfo::History::roofline;
    prefill.measuresRoofline = true;
    prefill.onlyHere = tr("a remote server's frames carry its blocks, not what each step computed nor how long it took");
    v << prefill;
    LessonInfo batching = lesson(
        "batching", "Continuous batching: a long prompt in chunks beside decodes",
        "Chat A is writing its answer, one token a step. Chat B sends a long text: the engine computes it in chunks (32 tokens "
        "a step at most) in the same forward pass as Chat A's next token, so A never stops. The Steps tab draws each step "
        "as a column. Press Step.",
        KvEventKind::allocate);
    batching.keyStep = LessonInfo::KeyStep::mixed;
    batching.history = LessonInfo::History::steps;
    batching.onlyHere = tr("a remote server's frames carry its blocks, not what each step computed");
    v << batching;
    v << lesson("beams", "Beam search: beams are forks that share blocks",
                "Chat A asks for the best of 4 beams. After the prompt, each beam is a fork of it: the prompt's blocks are "
                "shared four ways, and a beam's tokens are written into its own blocks only where it differs (copy on "
                "write). Each step keeps the 4 best continuations: a beam that falls behind is dropped and its blocks go "
                "back to the pool while the others go on. Press Next event until a beam is dropped.",
                KvEventKind::finish);
    v.back().onlyHere = tr("a remote server's frames do not say which sequences are beams of one request");
    LessonInfo speculative = lesson(
        "speculative", "Speculative decoding: drafts written, checked, cut back",
        "Chat A is asked to repeat a sentence it was given. The engine guesses the next few tokens from the prompt "
        "(prompt lookup), writes them into Chat A's blocks as drafts, and checks them all in one forward pass: the ones "
        "the model agrees with stay, and from the first it does not the drafts are cut off (rewind), their slots and "
        "any block they alone filled going back to the pool. Press Next event until a cut.",
        KvEventKind::rewind);
    speculative.speculates = true;
    speculative.onlyHere = tr("a remote server drafts (or not) by its own settings");
    v << speculative;
    LessonInfo window = lesson(
        "window", "A sliding window: blocks the local layers no longer read",
        "Gemma 3 attends in two ways: on five layers of six (local) a token sees only the last 512 positions, on every "
        "sixth (global) it sees them all. This lesson runs such a model (yours, or the smallest one found on this "
        "machine) with blocks of 16 tokens, and Chat A's text is about 600 tokens long: as its chunks are computed, the "
        "window's start moves along its blocks, and the pool marks the blocks wholly before it (dotted). Press Next "
        "event until the first block falls out of the window.",
        KvEventKind::allocate, 80);
    window.slidingWindow = true;
    window.blockSize = 16;
    window.context = 1024;
    window.keyIsWindowEdge = true;
    window.onlyHere = tr("a remote server's model is its own");
    v << window;
    LessonInfo kvTypes = lesson(
        "kvtypes", "KV element types: the same chat in f32, f16 and q8_0",
        "The same question was just asked twice, each time on a fresh engine whose pool had the same memory: as Chat A "
        "(f32), its keys and values stored as 4-byte floats, then as Chat A (f16), 2 bytes a number, where that memory "
        "holds twice the blocks. Now the engine stores them in q8_0, about a byte a number, and Chat A (q8_0) asks once "
        "more. Press Next event until it is parked: the same tokens, the same number of blocks, a quarter of the bytes; "
        "then compare the three replies.",
        KvEventKind::park, 32);
    kvTypes.kvType = QStringLiteral("f32");
    kvTypes.keyChat = tr("Chat A (q8_0)");
    kvTypes.onlyHere = tr("a remote server's KV element type is its own (pagedchat-server --kv-type)");
    v << kvTypes;
    LessonInfo disk = lesson(
        "disk", "Blocks on disk: a chat evicted, then read back",
        "Each full block was written to disk as it was computed (the event log said so). Since then Chats B, C and D have "
        "filled the pool: Chat A was reclaimed and its own blocks evicted (the system prompt's, shared by every chat, stay "
        "cached). Chat A now asks again: its history's blocks are read back from disk into fresh blocks instead of being "
        "computed. Press Next event.",
        KvEventKind::disk_read, 48);
    disk.kvDisk = true;
    disk.onlyHere = tr("a remote server's disk tier is its own (pagedchat-server --kv-disk)");
    v << disk;
    LessonInfo quantization = lesson(
        "quantization", "Quantizing weights: where the rounding error goes",
        "The model you chat with was just quantized to Q3_K_M on this machine, three ways: plainly, weighted by an "
        "importance matrix, and GPTQ-style (its own file stands for the original, widened to 16 bits if it was "
        "quantized; the engine read a calibration text with it first). Each then read a held-out text beside the original. The chart shows the input "
        "channels of the layer matrix with the loudest one, loudest first. Press Next event for each way's result.",
        KvEventKind::allocate);
    quantization.studiesQuantization = true;
    quantization.history = LessonInfo::History::quantization;
    quantization.onlyHere = tr("it quantizes the model on this machine");
    v << quantization;
    return v;
  }();
  return all;
}
