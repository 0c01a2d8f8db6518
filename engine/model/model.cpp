// Loading a model file, and turning a chat into its prompt tokens.
#include "engine/model/model.h"

#include <sys/mman.h>

#include <algorithm>

#include "engine/common/error.h"

namespace pagedchat {

namespace {

// Reads every page of the mapping once, in chunks announced to the kernel ahead of the reads.
void page_in(const GgufFile& file, const LoadProgress& progress) {
  constexpr uint64_t kChunk = 32ull << 20;
  constexpr uint64_t kPage = 4096;
  const uint8_t* data = file.data();
  const uint64_t size = file.file_size();
  uint8_t sink = 0;
  for (uint64_t at = 0; at < size; at += kChunk) {
    progress.report("reading", static_cast<double>(at) / static_cast<double>(size));
    const uint64_t end = std::min(size, at + kChunk);
    // madvise wants a page-aligned start; the mapping itself starts on a page.
    madvise(const_cast<uint8_t*>(data + at), end - at, MADV_WILLNEED);
    for (uint64_t p = at; p < end; p += kPage) sink ^= data[p];
  }
  asm volatile("" : : "r"(sink));  // the reads are the point: keep them
  progress.report("reading", 1.0);
}

}  // namespace

std::unique_ptr<Model> Model::load(const std::string& path, const LoadProgress& progress) {
  auto m = std::make_unique<Model>();
  GgufFile file = GgufFile::open(path);
  try {
    if (progress.active()) page_in(file, progress);
    m->weights = ModelWeights::load(std::move(file));
    progress.report("tokenizer", 0.0);
    Tokenizer::check_vocabulary(m->weights.file, m->weights.config.vocab_size);
    m->tokenizer = Tokenizer::from_gguf(m->weights.file);
    progress.report("tokenizer", 1.0);
  } catch (const LoadCancelled&) {
    throw;
  } catch (const Error& e) {
    throw Error(format("'%s': %s", path.c_str(), e.what()));
  }
  return m;
}

namespace {

std::vector<int32_t> with_bos(const Tokenizer& tokenizer, std::vector<int32_t> tokens) {
  if (tokenizer.add_bos() && tokenizer.bos_id() && (tokens.empty() || tokens.front() != *tokenizer.bos_id()))
    tokens.insert(tokens.begin(), *tokenizer.bos_id());
  return tokens;
}

}  // namespace

std::vector<int32_t> Model::encode_markup(std::string_view text, std::span<const TextSpan> markup) const {
  return with_bos(*tokenizer, tokenizer->encode_markup(text, markup));
}

std::vector<int32_t> Model::encode_raw(std::string_view text) const {
  return with_bos(*tokenizer, tokenizer->encode(text, false, true));
}

}  // namespace pagedchat
