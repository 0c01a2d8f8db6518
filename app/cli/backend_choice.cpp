// The model and backend options of the CLI's engine commands (see backend_choice.h).
#include "app/cli/backend_choice.h"

#include <cstdio>

#include "app/cli/model_argument.h"
#include "engine/common/error.h"
#include "engine/model/random_model.h"
#include "runtime/backend_args.h"

namespace pagedchat::cli {

std::set<std::string> with_backend_options(std::set<std::string> options) {
  options.insert({"model", "random-weights", "weights-seed", "backend", "gpu-memory-fraction", "dtype", "kv-type", "chat-template"});
  return options;
}

namespace {

}  // namespace

// --chat-template: the model's own (said when it cannot be rendered), the built-in format, plain
// text (a base model continuing the text), or a file.
ChatModel chat_model(const Args& args, const Model& model) {
  ChatTemplate chosen = ChatModel::own_template(model);
  const std::string choice = args.get_or("chat-template", "model");
  if (choice == "builtin") {
    chosen = chosen.builtin();
  } else if (choice == "plain") {
    chosen = ChatTemplate::plain_text();
  } else if (choice != "model") {
    try {
      chosen = chosen.with_jinja(read_text_file(choice, "--chat-template"));
    } catch (const Error& e) {
      fail("--chat-template %s: %s", choice.c_str(), e.what());
    }
  }
  if (!chosen.fallback_reason().empty())
    std::fprintf(stderr, "note: %s; using %s (--chat-template FILE.jinja gives another)\n", chosen.fallback_reason().c_str(),
                 chosen.describe().c_str());
  return ChatModel(model, std::move(chosen));
}

std::unique_ptr<Model> load_model(const Args& args) {
  std::unique_ptr<Model> model;
  if (auto shape = args.get("random-weights")) {
    if (args.get("model")) fail("give --model or --random-weights, not both");
    model = make_random_model(*shape, args.get_u64("weights-seed", 1));
  } else {
    model = Model::load(resolve_model_path(args.get_or("model", "")));
  }
  return model;
}

BackendOptions backend_options(const Args& args, int threads, int32_t max_batch_tokens) {
  BackendOptions o;
  try {
    o = check_backend_args({args.get("backend"), args.get("kv-type"), args.get("dtype"), args.get("gpu-memory-fraction")});
  } catch (const BackendArgError& e) {
    fail("%s", e.what());
  }
  o.threads = threads;
  o.max_batch_tokens = max_batch_tokens;
  return o;
}

BuiltBackend make_backend(const Args& args, const Model& model, int threads, int32_t max_batch_tokens, int32_t block_size) {
  return pagedchat::make_backend(backend_options(args, threads, max_batch_tokens), model, block_size);
}

std::set<std::string> with_speculation_options(std::set<std::string> options) {
  options.insert({"speculate", "draft-model", "draft-tokens"});
  return options;
}

SpeculationOptions speculation_options(const Args& args, int threads) {
  SpeculationOptions o;
  o.speculate = args.get_or("speculate", "");
  o.draft_model = args.get_or("draft-model", "");
  o.draft_tokens = args.get_int("draft-tokens", 0, 1, 16);
  o.adaptive = !args.flag("fixed-draft");
  o.threads = threads;
  return o;
}

}  // namespace pagedchat::cli
