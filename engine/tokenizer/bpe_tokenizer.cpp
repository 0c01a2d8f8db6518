// Byte-level BPE: the byte <-> unicode alphabet, merge ranks keyed by id pairs, and the
// merge loop over a linked list of symbols with a priority queue (lowest rank, then leftmost,
// the order the Hugging Face tokenizers library merges in).

#include "engine/tokenizer/bpe_tokenizer.h"

#include <algorithm>

#include "engine/common/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/utf8.h"

namespace pagedchat {

namespace {

// GPT-2's alphabet: printable bytes stand for themselves; the other 68 bytes (controls,
// space, DEL, NBSP, soft hyphen) map to U+0100 onwards, in byte order.
struct ByteAlphabet {
  std::array<uint32_t, 256> code_point{};
  std::array<int16_t, 324> byte_of{};  // code point -> byte, -1 if not in the alphabet

  ByteAlphabet() {
    byte_of.fill(-1);
    uint32_t extra = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
      code_point[b] = printable ? b : extra++;
      byte_of[code_point[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteAlphabet& alphabet() {
  static const ByteAlphabet a;
  return a;
}

std::string to_alphabet(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) append_utf8(out, alphabet().code_point[static_cast<uint8_t>(c)]);
  return out;
}

// The bytes of a token's text written in the alphabet; characters outside it pass through.
std::string from_alphabet(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t start = pos;
    const uint32_t cp = next_code_point(text, pos);
    if (cp < alphabet().byte_of.size() && alphabet().byte_of[cp] >= 0)
      out.push_back(static_cast<char>(alphabet().byte_of[cp]));
    else
      out.append(text.substr(start, pos - start));
  }
  return out;
}

}  // namespace

BpeTokenizer::BpeTokenizer(const GgufFile& file)
    : BpeTokenizer(file,
                   pre_tokenizer_spec(file.opt_string("tokenizer.ggml.pre").value_or("default"))) {}

BpeTokenizer::BpeTokenizer(const GgufFile& file, const PreTokenizerSpec& spec)
    : pre_(spec.patterns), ignore_merges_(spec.ignore_merges) {
  load_vocab(file, spec.default_add_bos);
  // Only a real unknown token stands in for a byte the vocabulary lacks; some files name a
  // control token (SmolLM2: <|endoftext|>), which would end the text for the model. Without
  // one the byte is dropped, as the Hugging Face tokenizers library does.
  const std::optional<int64_t> unk = file.opt_int("tokenizer.ggml.unknown_token_id");
  if (unk && *unk >= 0 && *unk < num_vocab() && type_of(static_cast<int32_t>(*unk)) == kUnknown)
    unk_id_ = static_cast<int32_t>(*unk);

  for (uint32_t b = 0; b < 256; ++b) {
    std::string ch;
    append_utf8(ch, alphabet().code_point[b]);
    byte_token_[b] = find_token(ch).value_or(-1);
  }

  const std::vector<std::string_view> merges = file.get_string_array("tokenizer.ggml.merges");
  if (merges.empty()) fail("tokenizer: metadata 'tokenizer.ggml.merges' is missing or empty");
  merges_.reserve(merges.size());
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string_view m = merges[rank];
    // "left right": the alphabet has no plain space, so the first space separates the two.
    const size_t space = m.find(' ', 1);
    if (space == std::string_view::npos)
      fail("tokenizer: merge %zu ('%.*s') is not two tokens separated by a space", rank,
           static_cast<int>(m.size()), m.data());
    const std::string_view left = m.substr(0, space), right = m.substr(space + 1);
    joined.assign(left).append(right);
    const auto l = find_token(left), r = find_token(right), result = find_token(joined);
    // A merge whose parts or result are not in the vocabulary can never apply.
    if (!l || !r || !result) continue;
    merges_.emplace(pair_key(*l, *r),
                    Merge{static_cast<int32_t>(rank), *result});  // first rank wins
  }

  pieces_.resize(vocab_.size());
  for (int32_t id = 0; id < num_vocab(); ++id)
    if (type_of(id) != kControl && type_of(id) != kUserDefined && type_of(id) != kUnknown)
      pieces_[id] = from_alphabet(vocab_[id]);
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text, bool add_special,
                                          bool parse_special) const {
  return encode_with_specials(text, add_special, parse_special);
}

void BpeTokenizer::encode_plain(std::string_view text, std::vector<int32_t>& out) const {
  std::vector<std::string_view> words;
  words.reserve(text.size() / 4 + 1);
  // PCRE2 needs valid UTF-8: run the regexes over the valid stretches; a malformed byte is a
  // word of its own (byte-level BPE can still encode it exactly).
  size_t pos = 0, run = 0;
  while (pos < text.size()) {
    const Utf8Step step = utf8_scan(text.substr(pos));
    if (step.status == Utf8Status::complete) {
      pos += step.len;
      continue;
    }
    pre_.split(text.substr(run, pos - run), words);
    for (size_t k = 0; k < step.len; ++k) words.push_back(text.substr(pos + k, 1));
    pos += step.len;
    run = pos;
  }
  pre_.split(text.substr(run), words);
  for (std::string_view word : words) encode_word(word, out);
}

void BpeTokenizer::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  auto emit_byte = [&](uint8_t b) {
    if (byte_token_[b] >= 0)
      out.push_back(byte_token_[b]);
    else if (unk_id_)
      out.push_back(*unk_id_);  // a vocabulary without this byte's token
  };
  if (word.size() == 1) {
    emit_byte(static_cast<uint8_t>(word[0]));
    return;
  }
  if (ignore_merges_) {
    if (const auto whole = find_token(to_alphabet(word))) {
      out.push_back(*whole);
      return;
    }
  }

  // Symbols: one per byte at first, as a doubly linked list; merged ones are unlinked.
  // The buffers live per thread so that a word costs no allocation.
  struct Symbol {
    int32_t id, prev, next;
  };
  struct Candidate {
    int32_t rank, left, left_id, right_id, result;
    // Heap order: the lowest rank on top, then the leftmost.
    bool operator<(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : left > o.left;
    }
  };
  thread_local std::vector<Symbol> symbols;
  thread_local std::vector<Candidate> heap;
  const int32_t n = static_cast<int32_t>(word.size());
  symbols.resize(static_cast<size_t>(n));
  heap.clear();
  for (int32_t i = 0; i < n; ++i)
    symbols[i] = {byte_token_[static_cast<uint8_t>(word[i])], i - 1, i + 1 < n ? i + 1 : -1};

  auto consider = [&](int32_t left) {
    if (left < 0) return;
    const int32_t right = symbols[left].next;
    if (right < 0 || symbols[left].id < 0 || symbols[right].id < 0) return;
    const auto it = merges_.find(pair_key(symbols[left].id, symbols[right].id));
    if (it == merges_.end()) return;
    heap.push_back({it->second.rank, left, symbols[left].id, symbols[right].id, it->second.result});
    std::push_heap(heap.begin(), heap.end());
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    const Candidate c = heap.back();
    heap.pop_back();
    Symbol& left = symbols[c.left];
    // Stale: the left symbol was merged into its neighbour or changed since.
    if (left.id != c.left_id || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    if (right.id != c.right_id) continue;
    left.id = c.result;
    right.id = -2;  // unlinked
    left.next = right.next;
    if (left.next >= 0) symbols[left.next].prev = c.left;
    consider(left.prev);
    consider(c.left);
  }

  for (int32_t i = 0; i >= 0; i = symbols[i].next) {
    if (symbols[i].id >= 0)
      out.push_back(symbols[i].id);
    else
      emit_byte(static_cast<uint8_t>(word[i]));  // a byte without its token
  }
}

std::string BpeTokenizer::token_to_piece(int32_t id, bool render_special) const {
  if (!in_range(id)) return {};
  switch (type_of(id)) {
    case kControl:
    case kUnknown:
      return render_special || always_rendered(id) ? vocab_[id] : std::string();
    case kUserDefined:
      return vocab_[id];  // stored as plain text, not in the byte alphabet
    default:
      return pieces_[id];
  }
}

}  // namespace pagedchat
