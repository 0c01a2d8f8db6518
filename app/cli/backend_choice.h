#pragma once
// What the CLI's engine commands share about where they run: the model (a file, or seeded
// random weights with --random-weights SHAPE) and the backend (--backend cpu | cuda, --dtype,
// --gpu-memory-fraction), read from the command line into runtime/'s BackendOptions: the
// backend itself is built by the one registry the server and the app use too.

#include <memory>
#include <set>
#include <string>

#include "app/cli/cli_args.h"
#include "engine/chat/chat_model.h"
#include "engine/model/model.h"
#include "runtime/backend_registry.h"
#include "runtime/speculation_setup.h"

namespace pagedchat::cli {

// The option names the helpers below read: model, random-weights, weights-seed, backend,
// gpu-memory-fraction, dtype, kv-type.
std::set<std::string> with_backend_options(std::set<std::string> options);

// --model PATH (or the default model), or --random-weights SHAPE with --weights-seed S (default 1).
std::unique_ptr<Model> load_model(const Args& args);
// model (borrowed: it must outlive the result) with the chat template --chat-template chooses:
// model (its own, the default), builtin, or FILE.jinja; a note on stderr when the model's own
// cannot be rendered and the built-in format stands in.
ChatModel chat_model(const Args& args, const Model& model);

// --backend, --dtype, --gpu-memory-fraction, --kv-type; threads: the CPU backend's; max_batch_tokens:
// what the CUDA backend sizes its scratch for.
BackendOptions backend_options(const Args& args, int threads, int32_t max_batch_tokens);

// The backend those options build (runtime/backend_registry.h); its max_num_blocks is what a
// GPU offers for block_size (0 on the CPU: the engine's default, one max-context sequence).
BuiltBackend make_backend(const Args& args, const Model& model, int threads, int32_t max_batch_tokens, int32_t block_size);

// Speculative decoding: --speculate ngram[:K] | off, --draft-model PATH, --draft-tokens K,
// --fixed-draft (no adaptation). The option names, and the options they give.
std::set<std::string> with_speculation_options(std::set<std::string> options);
SpeculationOptions speculation_options(const Args& args, int threads);

}  // namespace pagedchat::cli
