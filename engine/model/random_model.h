#pragma once
// A Model with seeded random weights and no file, at the shape of a real model, so that the CPU
// and the CUDA backends can be compared and benchmarked without a model file. Matrices are
// BF16 (what the CUDA backend computes in, and a type the CPU multiplies in f32), drawn
// uniformly with std 1/sqrt(input features) so activations keep their scale through the layers;
// the token embedding has std 1. Norm weights are 1 +- 0.1. The same (shape, seed) gives the
// same bytes on every machine and at any thread count: element i of tensor t is a hash of
// (seed, t, i). The tokenizer is a ByteTokenizer: no vocabulary, no end-of-generation token.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/model/model.h"

namespace pagedchat {

// "tiny" (2 layers, dim 256, 4 query heads over 2 kv heads of 64, ffn 512, vocab 512: tests and
// the GPU correctness check), "tiny-moe" (tiny's attention with QK-norm, and a mixture of 8
// experts of 128 of which 2 per token, as qwen3moe), "tiny-oss" (that mixture with gpt-oss's
// biases, sinks, YaRN, gating, clamped SwiGLU and a window of 16 on every other layer),
// "llama-3.2-1b" and "llama-3.1-8b" (their published configs,
// Llama 3 RoPE scaling included; the 1B ties its output to the embedding as the real one does).
std::vector<std::string> random_model_shapes();
// Throws Error naming the known shapes for any other name.
ModelConfig random_model_config(std::string_view shape);

// Builds the weights on num_threads threads (0: all cores). Throws Error for an unknown shape.
std::unique_ptr<Model> make_random_model(std::string_view shape, uint64_t seed, int num_threads = 0);

// Element `index` of tensor number `tensor`, uniform in [-1, 1): the hash every weight comes from.
float random_uniform(uint64_t seed, uint64_t tensor, uint64_t index);

}  // namespace pagedchat
