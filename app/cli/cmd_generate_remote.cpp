// `generate --endpoint URL`: the same generation on a remote OpenAI-compatible server (a vLLM
// cluster, llama.cpp's llama-server, another PagedChat), streamed to stdout as it arrives, with
// the server's own figures (usage, cached prompt tokens) and ours (first token, chunks/s).

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "app/cli/cli_args.h"
#include "app/cli/commands.h"
#include "engine/common/error.h"
#include "remote/openai_client.h"

namespace pagedchat::cli {
namespace {
std::atomic<bool> g_stop{false};  // Ctrl+C: the request is aborted, what arrived is printed
}

int generate_remote(const Args& args, const std::string& url, const std::string& prompt) {
  remote::Endpoint endpoint;
  endpoint.base_url = url;
  if (auto key = args.get("api-key")) endpoint.api_key = *key;
  else if (const char* env = std::getenv("PAGEDCHAT_API_KEY")) endpoint.api_key = env;
  remote::RemoteChatRequest request;
  request.model = args.get_or("remote-model", "");
  if (auto sys = args.get("system")) request.messages.push_back({"system", *sys});
  request.messages.push_back({"user", prompt});
  request.max_tokens = args.get_int("max-tokens", 256, 1, 1 << 20);
  request.temperature = args.get_double("temperature", 0.0, 0.0, 100.0);
  request.top_p = args.get_double("top-p", 1.0, 1e-6, 1.0);
  if (args.get("seed")) request.seed = args.get_u64("seed", 0);
  request.n = args.get_int("n", 1, 1, 16);
  request.stop = args.get_all("stop");

  std::signal(SIGINT, [](int) { g_stop = true; });
  // The first sample streams; the others are printed whole once the reply ends.
  const remote::RemoteChatResult r = remote::stream_chat(endpoint, request, [](const remote::RemoteDelta& d) {
    if (d.index != 0) return;
    std::fwrite(d.text.data(), 1, d.text.size(), stdout);
    std::fflush(stdout);
  }, &g_stop);
  std::signal(SIGINT, SIG_DFL);
  if (!r.texts.empty()) std::fputc('\n', stdout);
  for (size_t i = 1; i < r.texts.size(); ++i) std::printf("\n[sample %zu]\n%s\n", i + 1, r.texts[i].c_str());
  std::fflush(stdout);
  if (!r.error.ok() && r.error.kind != remote::RemoteErrorKind::stopped) fail("%s", r.error.sentence().c_str());

  int64_t chunks = 0;
  for (int64_t c : r.chunks) chunks += c;
  const double stream_s = (r.total_ms - std::max(r.first_token_ms, 0.0)) / 1000.0;
  auto known = [](int64_t v) { return v >= 0 ? std::to_string(v) : std::string("?"); };
  std::string finish;
  for (const std::string& f : r.finish_reasons) finish += (finish.empty() ? "" : ",") + (f.empty() ? std::string("none") : f);
  std::fprintf(stderr,
               "remote: %s at %s | prompt tokens: %s (cached %s) | generated tokens: %s in %lld chunks, first token "
               "%.0f ms, %.1f chunks/s | finish: %s%s\n",
               r.model.c_str(), endpoint.base_url.c_str(), known(r.usage.prompt_tokens).c_str(),
               known(r.usage.cached_tokens).c_str(), known(r.usage.completion_tokens).c_str(), static_cast<long long>(chunks),
               r.first_token_ms, chunks > 1 && stream_s > 0 ? (chunks - 1) / stream_s : 0.0, finish.c_str(),
               r.error.kind == remote::RemoteErrorKind::stopped ? " (stopped)" : "");
  return r.error.kind == remote::RemoteErrorKind::stopped ? 130 : 0;
}

}  // namespace pagedchat::cli
