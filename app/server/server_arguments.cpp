// Parsing and checking pagedchat-server's options.
#include "app/server/server_arguments.h"

#include <QCommandLineParser>
#include <QFile>
#include <QFileInfo>

#include <cstdio>
#include <cstdlib>

#include "engine/common/error.h"
#include "engine/kv/kv_manager.h"
#include "models/model_paths.h"
#include "runtime/backend_args.h"

namespace {

int intOption(const QCommandLineParser& p, const QString& name, int lo, int hi) {
  bool ok = false;
  const int v = p.value(name).toInt(&ok);
  if (!ok || v < lo || v > hi) {
    std::fprintf(stderr, "pagedchat-server: --%s must be an integer from %d to %d\n", qPrintable(name), lo, hi);
    std::exit(2);
  }
  return v;
}

// Every option, with its help and default; the backend's from the table the CLI shares.
void declareOptions(QCommandLineParser& p) {
  p.setApplicationDescription("The OpenAI-compatible API (/v1/chat/completions, /v1/completions, /v1/models, /health, /metrics).");
  p.addHelpOption();
  p.addOptions({
      {"model", "GGUF model file (default: the default model).", "path"},
      {"model-id", "The model name clients send (default: the file name without .gguf).", "id"},
      {"chat-template", "A Jinja chat template file to use instead of the model's own (as llama.cpp's "
                        "--chat-template-file); tool calls take the format its markers show.", "file.jinja"},
      {"host", "Address to bind (default 127.0.0.1; 0.0.0.0 exposes the server to the network).", "address", "127.0.0.1"},
      {"port", "TCP port (0: any free port).", "port", "8080"},
      {"api-key", "Require 'Authorization: Bearer KEY' (default: env PAGEDCHAT_API_KEY, else no key).", "key"},
      {"api-key-file", "Keys of several users, one a line (# comments): each user's requests share prefix-cache "
                       "blocks only with that user's, so cached_tokens tells no one what another sent.", "path"},
      {"allowed-hosts", "Host names clients may use besides localhost and IP addresses, comma-separated (* : any). "
                        "Others get 403: a web page reaching the server by DNS rebinding uses its own name.", "names"},
      {"allow-origin", "A web page origin allowed to call the API from a browser (CORS), e.g. http://localhost:3000; "
                       "repeatable, * for any. By default browsers' cross-origin requests get 403.", "origin"},
      {"threads", "CPU threads of the forward pass (0: all cores).", "n", "0"},
      {"kv-blocks", "KV blocks in the pool (0: enough for 2 full contexts).", "n", "0"},
      {"block-size", "Tokens per KV block.", "n", "16"},
      {"max-context", "Tokens per sequence (0: the model's, capped at 4096).", "n", "0"},
      {"kv-disk", "A folder for KV blocks on disk: full blocks are written there as they are computed, and a prompt "
                  "whose prefix left memory (or an earlier run's) is read back instead of computed.", "dir"},
      {"kv-disk-size", "The --kv-disk folder's cap in MiB, least recently used blocks removed first (0: a tenth of "
                       "the free space there).", "MiB", "0"},
      {"max-active", "Requests in flight before 429.", "n", "256"},
      {"max-tokens", "Largest max_tokens a request may ask (also the default).", "n", "2048"},
      {"max-n", "Most samples (n) per request.", "n", "16"},
      {"max-body-bytes", "Largest request body before 413.", "n", "1048576"},
      {"read-timeout", "Seconds a request may take to arrive, from its first byte (slower: 408, closed).", "s", "15"},
      {"idle-timeout", "Seconds a kept-alive connection may stay idle before it is closed.", "s", "60"},
      {"max-connections", "Connections open at once; more get 503 (0: from the descriptor limit, at most 1024).", "n", "0"},
      {"max-unread-bytes", "A stream's bytes its client may leave unread before its request is held back.", "n", "1048576"},
      {"slow-reader-timeout", "Seconds a held-back request waits for its client to read before it is aborted.", "s", "30"},
      {"waiting-comment", "Seconds between the SSE comments a stream gets while its first token has not come (queued, or its "
                          "prompt computed): its client can tell a waiting request from a dead server.", "s", "5"},
      {"shutdown-timeout", "On SIGTERM/SIGINT: seconds requests in flight may take to finish before they are cut short.", "s", "5"},
      {"speculate", "Speculative decoding by prompt lookup: ngram or ngram:K (K drafted tokens, 1-16; default 6), or off.", "drafter"},
      {"draft-model", "Speculative decoding with a draft model: a GGUF sharing the model's vocabulary.", "path"},
      {"draft-tokens", "Draft-model tokens per step, 1-16 (default 4).", "n"},
      {"fixed-draft", "Always draft K tokens instead of adapting to acceptance and batch size."},
      {"allow-pool-control", "Clients may pause and step the engine (POST /v1/kv/control), as a teacher's class watches "
                             "its pool (GET /v1/kv/events); a pause stops every client's requests."},
      {"log-requests", "A line on stderr per request when its response ends: time, method, path, status, tokens, duration."},
      {"load-delay-ms", "Tests: wait this long before loading the model.", "ms", "0"},
  });
  for (const pagedchat::BackendArgHelp& b : pagedchat::backend_arg_help())  // the CLI's too (runtime/backend_args.h)
    p.addOption({QString::fromLatin1(b.name), QString::fromLatin1(b.help), QString::fromLatin1(b.value_name)});
}

// --speculate, --draft-model, --draft-tokens, --fixed-draft. -1, or the exit status.
int parseSpeculation(const QCommandLineParser& p, pagedchat::SpeculationOptions& spec, int threads) {
  spec.speculate = p.value("speculate").toStdString();
  spec.draft_model = p.value("draft-model").toStdString();
  spec.draft_tokens = p.isSet("draft-tokens") ? intOption(p, "draft-tokens", 1, 16) : 0;
  spec.adaptive = !p.isSet("fixed-draft");
  spec.threads = threads;
  if (!spec.speculate.empty() && spec.speculate != "off" && spec.speculate != "ngram" &&
      !(spec.speculate.rfind("ngram:", 0) == 0 && spec.speculate.size() > 6)) {
    std::fprintf(stderr, "pagedchat-server: --speculate must be ngram, ngram:K or off (got '%s')\n", spec.speculate.c_str());
    return 2;
  }
  if (!spec.draft_model.empty() && !QFileInfo::exists(QString::fromStdString(spec.draft_model))) {
    std::fprintf(stderr, "pagedchat-server: error: the draft model '%s' is not there\n", spec.draft_model.c_str());
    return 1;
  }
  return -1;
}

// The model, the backend, the engine and speculation. -1, or the exit status.
int parseEngineOptions(const QCommandLineParser& p, EngineHost::Config& hc) {
  if (p.isSet("model") && p.value("model").isEmpty()) {
    std::fprintf(stderr, "pagedchat-server: --model is empty (leave it out for the default model)\n");
    return 2;
  }
  hc.modelPath = p.isSet("model") ? p.value("model") : QString::fromStdString(pagedchat::default_model_path());
  pagedchat::BackendOptions& backend = hc.engine.backend;
  auto given = [&](const char* name) {
    return p.isSet(QString::fromLatin1(name)) ? std::optional<std::string>(p.value(QString::fromLatin1(name)).toStdString())
                                              : std::nullopt;
  };
  try {
    backend = pagedchat::check_backend_args({given("backend"), given("kv-type"), given("dtype"), given("gpu-memory-fraction")});
  } catch (const pagedchat::BackendArgError& e) {
    std::fprintf(stderr, "pagedchat-server: %s%s\n", e.usage() ? "" : "error: ", e.what());
    return e.usage() ? 2 : 1;
  }
  backend.threads = intOption(p, "threads", 0, 1024);
  pagedchat::EngineConfig& ec = hc.engine.engine;
  ec.block_size = intOption(p, "block-size", 1, 32);
  if (!pagedchat::is_valid_block_size(ec.block_size)) {
    std::fprintf(stderr, "pagedchat-server: --block-size must be %s (got %d)\n", pagedchat::kValidBlockSizes, ec.block_size);
    return 2;
  }
  // SmolLM2 declares 8192 tokens; 4096 and two contexts' worth of blocks keep the default pool
  // modest (~190 MB for SmolLM2-135M at f16 KV) while dozens of short requests run at once.
  ec.max_context = intOption(p, "max-context", 0, 1 << 20);
  if (ec.max_context == 0) ec.max_context = 4096;
  ec.num_blocks = intOption(p, "kv-blocks", 0, 1 << 24);
  hc.engine.num_contexts = 2;  // with --kv-blocks 0 (on a GPU: capped by what it holds)
  ec.kv_disk.dir = p.value("kv-disk").toStdString();
  ec.kv_disk.max_bytes = static_cast<uint64_t>(intOption(p, "kv-disk-size", 0, 1 << 30)) << 20;
  const int spec = parseSpeculation(p, hc.engine.speculation, backend.threads);
  if (spec >= 0) return spec;
  hc.maxActive = intOption(p, "max-active", 1, 1 << 20);
  hc.loadDelayMs = intOption(p, "load-delay-ms", 0, 600000);
  hc.allowPoolControl = p.isSet("allow-pool-control");
  hc.modelId = p.isSet("model-id") ? p.value("model-id") : QFileInfo(hc.modelPath).completeBaseName();
  if (p.isSet("chat-template")) {
    QFile f(p.value("chat-template"));
    if (!f.open(QIODevice::ReadOnly)) {
      std::fprintf(stderr, "pagedchat-server: error: cannot read the chat template '%s': %s\n", qPrintable(p.value("chat-template")),
                   qPrintable(f.errorString()));
      return 1;
    }
    hc.chatTemplate = f.readAll().toStdString();
  }
  if (!QFileInfo::exists(hc.modelPath)) {  // not a regular file: the loader says so
    std::fprintf(stderr, "pagedchat-server: error: the model '%s' is not there; run `pagedchat-cli models pull default` or pass --model PATH\n",
                 qPrintable(hc.modelPath));
    return 1;
  }
  return -1;
}

// Where it listens, who may call it, and how it holds up against slow or greedy clients.
int parseListenOptions(const QCommandLineParser& p, ServerSetup& setup) {
  ServerOptions& so = setup.server;
  if (!so.host.setAddress(p.value("host"))) {
    std::fprintf(stderr, "pagedchat-server: --host '%s' is not an IP address\n", qPrintable(p.value("host")));
    return 2;
  }
  so.port = static_cast<quint16>(intOption(p, "port", 0, 65535));
  so.apiKey = p.isSet("api-key") ? p.value("api-key") : qEnvironmentVariable("PAGEDCHAT_API_KEY");
  if (p.isSet("api-key-file")) {
    QFile f(p.value("api-key-file"));
    if (!f.open(QIODevice::ReadOnly)) {
      std::fprintf(stderr, "pagedchat-server: cannot read --api-key-file '%s'\n", qPrintable(p.value("api-key-file")));
      return 2;
    }
    for (const QByteArray& line : f.readAll().split('\n')) {
      const QByteArray key = line.trimmed();
      if (!key.isEmpty() && !key.startsWith('#')) so.userKeys << QString::fromUtf8(key);
    }
    if (so.userKeys.isEmpty()) {
      std::fprintf(stderr, "pagedchat-server: --api-key-file '%s' holds no key\n", qPrintable(p.value("api-key-file")));
      return 2;
    }
  }
  for (const QString& h : p.value("allowed-hosts").split(',', Qt::SkipEmptyParts)) so.admission.allowedHosts << h.trimmed();
  for (const QString& list : p.values("allow-origin"))
    for (const QString& o : list.split(',', Qt::SkipEmptyParts)) so.admission.allowedOrigins << o.trimmed();
  ConnectionLimits& conn = so.connection;
  conn.maxBodyBytes = intOption(p, "max-body-bytes", 1024, 1 << 30);
  conn.readTimeoutMs = intOption(p, "read-timeout", 1, 3600) * 1000;
  conn.idleTimeoutMs = intOption(p, "idle-timeout", 1, 86400) * 1000;
  conn.maxConnections = intOption(p, "max-connections", 0, 1 << 20);
  conn.maxQueuedBytes = intOption(p, "max-unread-bytes", 4096, 1 << 30);
  conn.slowReaderTimeoutMs = intOption(p, "slow-reader-timeout", 1, 3600) * 1000;
  conn.waitingCommentMs = intOption(p, "waiting-comment", 1, 3600) * 1000;
  setup.shutdownTimeoutMs = intOption(p, "shutdown-timeout", 0, 3600) * 1000;
  setup.logRequests = p.isSet("log-requests");
  so.limits.maxTokens = intOption(p, "max-tokens", 1, 1 << 20);
  so.limits.maxN = intOption(p, "max-n", 1, 256);
  return -1;
}

}  // namespace

int parseServerArguments(const QCoreApplication& app, ServerSetup& setup) {
  QCommandLineParser p;
  declareOptions(p);
  p.process(app);
  if (!p.positionalArguments().isEmpty()) {
    std::fprintf(stderr, "pagedchat-server: unexpected argument '%s' (options start with --; see --help)\n",
                 qPrintable(p.positionalArguments().first()));
    return 2;
  }
  const int engine = parseEngineOptions(p, setup.host);
  if (engine >= 0) return engine;
  return parseListenOptions(p, setup);
}
