// The regexes of each tokenizer.ggml.pre type and the PCRE2 splitting loop.
// The regexes are those of the models' tokenizer.json files (as llama.cpp also lists them per
// type); PCRE2 supports their Unicode classes, case-insensitive groups and lookaheads as is.

#include "engine/tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <initializer_list>

#include "engine/common/error.h"
#include "engine/tokenizer/utf8.h"

namespace pagedchat {

namespace {

// GPT-2's regex: contractions, words, numbers, punctuation runs, whitespace runs.
constexpr const char* kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
// Llama 3 / tiktoken cl100k style: numbers in groups of up to three digits.
constexpr const char* kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen 2: as Llama 3 with one digit per word.
constexpr const char* kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// GPT-4o (o200k): words split at case changes, contractions attached.
constexpr const char* kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Mistral's Tekken.
constexpr const char* kTekken =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)"
    R"(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kPoro =
    R"( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{0964}\x{06D4}\x{060C})]+)";
constexpr const char* kCjk = R"([\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}]+)";
// DeepSeek LLM: letters of the cased scripts (Latin, Greek, Cyrillic, Armenian, ...).
constexpr const char* kDeepseekLetters =
    R"(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293})"
    R"(\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A})"
    R"(\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556})"
    R"(\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF})"
    R"(\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D})"
    R"(\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D})"
    R"(\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3})"
    R"(\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107})"
    R"(\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D})"
    R"(\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184})"
    R"(\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D})"
    R"(\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF})"
    R"(\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F})"
    R"(\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2})"
    R"(\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)";

bool is_one_of(std::string_view s, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), s) != names.end();
}

}  // namespace

PreTokenizerSpec pre_tokenizer_spec(std::string_view pre) {
  if (pre.empty() || pre == "default")
    return {{R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}};
  if (is_one_of(pre, {"gpt-2", "gpt2", "phi-2", "mpt", "olmo", "jais", "jina-es", "jina-de",
                      "jina-v2-es", "jina-v2-de", "roberta-bpe", "exaone4", "trillion"}))
    return {{kGpt2}};
  if (is_one_of(pre, {"llama-bpe", "llama3", "llama-v3", "falcon3", "falcon-h1", "pixtral"}))
    return {{kLlama3}, /*ignore_merges=*/true, /*default_add_bos=*/true};
  if (is_one_of(pre, {"dbrx", "smaug-bpe", "chatglm-bpe", "glm4"})) return {{kLlama3}};
  if (is_one_of(pre, {"qwen2", "stablelm2", "deepseek-r1-qwen", "megrez", "hunyuan"}))
    return {{kQwen2}};
  if (is_one_of(
          pre, {"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b"}))
    return {{R"(\p{N})", kGpt2}};
  if (pre == "falcon") return {{R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}};
  if (pre == "deepseek-llm")
    return {{R"([\r\n])", kDeepseekLetters,
             R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)",
             R"(\s+$)", kCjk, R"(\p{N}+)"}};
  if (pre == "deepseek-coder")
    return {{R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kCjk, R"(\p{N})"}};
  if (pre == "deepseek-v3")
    return {
        {R"(\p{N}{1,3})", R"([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)",
         R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+)"
         R"(| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}};
  if (is_one_of(pre, {"gpt-4o", "llama4"})) return {{kGpt4o}};
  if (pre == "tekken") return {{kTekken}, /*ignore_merges=*/true, /*default_add_bos=*/true};
  if (is_one_of(pre, {"poro-chat", "bloom", "gpt3-finnish"})) return {{kPoro}};
  if (pre == "viking") return {{kPoro, R"(\p{N})"}};
  fail("unknown pre-tokenizer type '%.*s' (tokenizer.ggml.pre)", static_cast<int>(pre.size()),
       pre.data());
}

// ---- PCRE2 ----------------------------------------------------------------------------------

struct PreTokenizer::Regex {
  pcre2_code* code = nullptr;
  ~Regex() { pcre2_code_free(code); }
};

namespace {

// Match data and a JIT stack per thread: encode() is const and may run on several threads.
// The JIT stack may grow to 1 MiB so that very long runs (of spaces, say) still match.
struct MatchScratch {
  pcre2_match_data* data = pcre2_match_data_create(16, nullptr);
  pcre2_jit_stack* jit_stack = pcre2_jit_stack_create(32 * 1024, 1024 * 1024, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  MatchScratch() { pcre2_jit_stack_assign(context, nullptr, jit_stack); }
  ~MatchScratch() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_data_free(data);
  }
};

MatchScratch& match_scratch() {
  thread_local MatchScratch scratch;
  return scratch;
}

// Splits `s` by one regex into matches and the text between them.
void split_one(pcre2_code* code, std::string_view s, std::vector<std::string_view>& out) {
  MatchScratch& m = match_scratch();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.data());
  size_t pos = 0, last = 0;
  while (pos < s.size()) {
    const int rc = pcre2_match(code, subject, s.size(), pos, PCRE2_NO_UTF_CHECK, m.data, m.context);
    // No match, or a resource limit hit: the rest stays one piece.
    if (rc < 0) break;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(m.data);
    const size_t start = ov[0], end = ov[1];
    if (end <= start) {  // an empty match splits nothing; step over one character
      if (start >= s.size()) break;
      pos = start + utf8_scan(s.substr(start)).len;
      continue;
    }
    if (start > last) out.push_back(s.substr(last, start - last));
    out.push_back(s.substr(start, end - start));
    last = pos = end;
  }
  if (last < s.size()) out.push_back(s.substr(last));
}

}  // namespace

PreTokenizer::PreTokenizer(const std::vector<std::string>& patterns) {
  for (const std::string& pattern : patterns) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    auto regex = std::make_unique<Regex>();
    regex->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
    if (!regex->code) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof(message));
      fail("pre-tokenizer regex rejected at offset %zu: %s", static_cast<size_t>(offset),
           reinterpret_cast<const char*>(message));
    }
    // Without JIT (not built in, or no executable memory) pcre2_match interprets: slower, same.
    pcre2_jit_compile(regex->code, PCRE2_JIT_COMPLETE);
    regexes_.push_back(std::move(regex));
  }
}

PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& out) const {
  if (text.empty()) return;
  if (regexes_.empty()) {
    out.push_back(text);
    return;
  }
  std::vector<std::string_view> pieces{text}, next;
  for (size_t r = 0; r < regexes_.size(); ++r) {
    std::vector<std::string_view>& dest = r + 1 == regexes_.size() ? out : next;
    for (std::string_view piece : pieces) split_one(regexes_[r]->code, piece, dest);
    if (&dest == &next) {
      pieces.swap(next);
      next.clear();
    }
  }
}

}  // namespace pagedchat
