// Reading a model's summary from its GGUF header (see model_summary.h).
#include "models/model_summary.h"

#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "engine/chat/chat_template.h"
#include "engine/common/error.h"
#include "engine/common/ggml_type.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model_config.h"
#include "engine/tokenizer/tokenizer.h"

namespace pagedchat::models {
namespace {

std::string commonest_weight_type(const GgufFile& f) {
  std::map<std::string, uint64_t> bytes_by_type;
  for (const GgufTensorInfo& t : f.tensors())
    if (t.shape.size() >= 2) bytes_by_type[std::string(ggml_type_name(static_cast<uint32_t>(t.type)))] += t.num_bytes;
  std::string best;
  uint64_t most = 0;
  for (const auto& [name, bytes] : bytes_by_type)
    if (bytes > most) most = bytes, best = name;
  return best;
}

// The first reason this build cannot run the file, or empty. It checks what a load checks
// before the weights: the hyperparameters (ModelConfig), the tokenizer kind and its vocabulary
// against the embedding (Tokenizer::check_vocabulary: the list's length, its types, BOS/EOS
// within it), and that every tensor's type can be computed with. (The file's layout, tensors
// past its end or over each other's bytes, GgufFile::open has refused already.)
std::string first_problem(const GgufFile& f) {
  if (const auto parts = f.opt_uint("split.count"); parts && *parts > 1)
    return format("it is split into %llu files; split GGUFs are not supported yet (join them with llama-gguf-split --merge)",
                  (unsigned long long)*parts);
  int64_t vocab_size = 0;
  try {
    vocab_size = ModelConfig::from_gguf(f).vocab_size;
  } catch (const Error& e) {
    return e.what();
  }
  try {  // the tokenizer's kind first: in the load's own words
    Tokenizer::check_vocabulary(f, vocab_size);
  } catch (const Error& e) {
    return e.what();
  }
  for (const GgufTensorInfo& t : f.tensors()) {
    auto traits = ggml_type_traits(static_cast<uint32_t>(t.type));
    if (!traits || !traits->computable)
      return "tensor '" + t.name + "' has type " + std::string(ggml_type_name(static_cast<uint32_t>(t.type))) +
             ", which is not supported";
  }
  // A template that does not finish a short conversation (loops in loops, macros called by the
  // billion) would stop every chat and every request at its budget: said here, before a load.
  if (f.has("tokenizer.chat_template")) {
    try {
      const ChatTemplate t = ChatTemplate::from_gguf(f);
      if (t.uses_model_template()) t.apply({{"user", "Hello"}, {"assistant", "Hi."}, {"user", "Bye"}}, true);
    } catch (const ChatTemplateTooCostly& e) {
      return e.what();  // "the model's chat template does not finish: the template ran past ... steps"
    } catch (const Error&) {
      // One that refuses or fails on this conversation may serve others; a chat says why when it does not.
    }
  }
  return {};
}

}  // namespace

std::string file_type_name(uint64_t id) {
  static const std::map<uint64_t, const char*> kNames = {
      {0, "F32"},      {1, "F16"},      {2, "Q4_0"},     {3, "Q4_1"},    {7, "Q8_0"},     {8, "Q5_0"},
      {9, "Q5_1"},     {10, "Q2_K"},    {11, "Q3_K_S"},  {12, "Q3_K_M"}, {13, "Q3_K_L"},  {14, "Q4_K_S"},
      {15, "Q4_K_M"},  {16, "Q5_K_S"},  {17, "Q5_K_M"},  {18, "Q6_K"},   {19, "IQ2_XXS"}, {20, "IQ2_XS"},
      {21, "Q2_K_S"},  {22, "IQ3_XS"},  {23, "IQ3_XXS"}, {24, "IQ1_S"},  {25, "IQ4_NL"},  {26, "IQ3_S"},
      {27, "IQ3_M"},   {28, "IQ2_S"},   {29, "IQ2_M"},   {30, "IQ4_XS"}, {31, "IQ1_M"},   {32, "BF16"},
      {36, "TQ1_0"},   {37, "TQ2_0"},
  };
  auto it = kNames.find(id);
  return it == kNames.end() ? std::string() : it->second;
}

std::string format_parameters(uint64_t n) {
  if (n >= 1'000'000'000ull) return format("%.1fB", n / 1e9);
  if (n >= 1'000'000ull) return format("%.0fM", n / 1e6);
  if (n >= 1'000ull) return format("%.0fK", n / 1e3);
  return std::to_string(n);
}

std::string format_bytes(uint64_t b) {
  if (b >= 1'000'000'000ull) return format("%.2f GB", b / 1e9);
  if (b >= 1'000'000ull) return format("%.1f MB", b / 1e6);
  if (b >= 1'000ull) return format("%.1f kB", b / 1e3);
  return format("%llu bytes", static_cast<unsigned long long>(b));
}

ModelSummary summarize_model(const std::string& path) {
  // open() of a FIFO or a device would block or read forever: only regular files are GGUFs.
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) fail("cannot open '%s': no such file", path.c_str());
  if (!S_ISREG(st.st_mode)) fail("'%s' is not a regular file", path.c_str());

  const GgufFile f = GgufFile::open(path);
  ModelSummary s;
  s.path = path;
  s.file_size = f.file_size();
  s.architecture = f.opt_string("general.architecture").value_or("");
  std::string stem = std::filesystem::path(path).filename().string();
  if (stem.size() > 5 && stem.ends_with(".gguf")) stem.resize(stem.size() - 5);
  s.name = f.opt_string("general.name").value_or(stem);
  if (s.name.empty()) s.name = stem;
  // Experts are the 3-D tensors; a token uses expert_used_count of expert_count of them.
  const uint64_t experts = s.architecture.empty() ? 0 : f.opt_uint(s.architecture + ".expert_count").value_or(0);
  const uint64_t used = s.architecture.empty() ? 0 : f.opt_uint(s.architecture + ".expert_used_count").value_or(0);
  for (const GgufTensorInfo& t : f.tensors()) {
    const auto n = static_cast<uint64_t>(t.num_elements());
    s.parameters += n;
    const bool expert = t.shape.size() == 3 && experts > 0 && used <= experts && static_cast<uint64_t>(t.shape[2]) == experts;
    s.active_parameters += expert ? n / experts * used : n;
  }
  if (auto ft = f.opt_uint("general.file_type")) s.quantization = file_type_name(*ft);
  if (s.quantization.empty()) s.quantization = commonest_weight_type(f);
  if (!s.architecture.empty()) s.context_length = f.opt_uint(s.architecture + ".context_length").value_or(0);
  if (!s.architecture.empty()) s.sliding_window = f.opt_uint(s.architecture + ".attention.sliding_window").value_or(0);
  s.has_chat_template = f.has("tokenizer.chat_template");
  s.problem = first_problem(f);
  s.supported = s.problem.empty();
  return s;
}

}  // namespace pagedchat::models
