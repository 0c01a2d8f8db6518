// pagedchat-cli: the engine from the command line (generate, tokenize, bench, serve).
// Every error is caught here once and reported on stderr with a non-zero exit.

#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "app/cli/commands.h"
#include "engine/common/error.h"

namespace {

const char* kUsage =
    "usage: pagedchat-cli COMMAND [options]\n"
    "  generate  [--model PATH] --prompt TEXT | --prompt-file PATH|- [--raw] [--system TEXT] [--max-tokens N]\n"
    "            [--temperature T] [--seed S] [--top-k K] [--top-p P] [--min-p P]\n"
    "            [--repeat-penalty R] [--frequency-penalty F] [--presence-penalty P]\n"
    "            [--stop TEXT]... [--threads N] [--block-size N] [--ignore-eos] [MODEL/BACKEND options]\n"
    "            [--speculate ngram[:K] | --draft-model PATH [--draft-tokens K]] [--fixed-draft]\n"
    "            [--beam-width W [--n N] [--length-penalty L]]   beam search: the N best of W beams\n"
    "            [--hide-thinking | --raw-reply]   a thinking model's thinking goes to stderr, between [thinking]\n"
    "            and [/thinking], its answer alone to stdout; --hide-thinking drops the thinking, --raw-reply\n"
    "            prints the reply as the model wrote it (markup included, as --raw does)\n"
    "            [--endpoint URL [--api-key K] [--remote-model NAME] [--n N]]   on a remote OpenAI-compatible\n"
    "            server instead (vLLM, llama-server, pagedchat-server): N samples; the key also from PAGEDCHAT_API_KEY\n"
    "            speculative decoding: drafts verified in one pass (the output is unchanged; stats say how many\n"
    "            were kept); --fixed-draft always drafts K instead of adapting to acceptance and batch\n"
    "  tokenize  [--model PATH] --text TEXT [--no-special] [--pieces]\n"
    "  bench     [--model PATH] [--threads 1,2] [--prompt-tokens 128,2048] [--decode-tokens N] [--repeats N]\n"
    "            [--kv-type f16|f32|q8_0] [--json]   single-stream prompt and decode tok/s per context length\n"
    "  bench quant [--threads N]   dot-product GB/s per weight type\n"
    "  bench throughput [--model PATH] [--threads N] [--num-requests N] [--input-len L --output-len L |\n"
    "            --dataset synthetic-chat] [--concurrency C] [--seed S] [--block-size B] [--num-blocks N]\n"
    "            [--max-batched-tokens N] [--batching] [--json] [--write-workload PATH] [--kv-disk DIR] [MODEL/BACKEND options]\n"
    "            the engine, many requests at once\n"
    "  bench decode [--prompt-tokens N] [--decode-tokens N] [--repeats N] [--json] [MODEL/BACKEND options]\n"
    "            batch-1 ms/token; on CUDA against the floor (weight bytes / device copy bandwidth)\n"
    "  bench memory [--block-size B] [--num-blocks N] [--max-len M] [--num-requests N] [--seed S] [--model PATH]\n"
    "            [--json]   paged KV manager against max-length reservation on the synthetic chat workload,\n"
    "            and the pool's bytes in each KV element type\n"
    "  bench chat [--turns 20] [--reply-tokens 24] [--block-size 16] [--threads N] [--json] [MODEL/BACKEND options]\n"
    "            prompt tokens one growing chat (an edit, two regenerations) computes: parked and rewound,\n"
    "            resubmitted over the prefix cache, resubmitted with no cache\n"
    "  bench attention [--context 4000] [--kv-type f16] [--threads N] [--layers 30] [--heads 9] [--kv-heads 3]\n"
    "            [--head-dim 64] [--chunk 512] [--steps 20]   CPU attention alone: decode ms and KV GB/s per kernel\n"
    "  bench kv-quality [--text PATH (default /usr/share/common-licenses/GPL-3)] [--tokens 4000] [--threads N]\n"
    "            [--chunk 512] [--float-activations] [--json]   KL divergence and top-1 agreement of f16 and\n"
    "            q8_0 KV against f32\n"
    "  bench quant-quality --model F16.gguf [--types Q4_K_M,Q3_K_M,Q2_K] [--text PATH (default Apache-2.0)]\n"
    "            [--calibration PATH (default GPL-3) | --imatrix FILE] [--tokens 2048] [--chunk 512] [--keep DIR]\n"
    "            [--json]   KL, top-1 and perplexity of each type quantized plainly and with an importance matrix\n"
    "  bench roofline [--model PATH] [--threads 2] [--context 128] [--repeats 3] [--kv-type f16] [--json]   the\n"
    "            compute and memory ceilings, and prompt steps of 1-512 tokens and decode steps of 1-16 sequences\n"
    "            against them (FLOP, bytes read, FLOP per byte, GFLOP/s)\n"
    "  bench speculative [--threads 1,2] [--max-tokens 128] [--rounds 2] [--ngram-tokens 6] [--draft-model PATH]\n"
    "            [--draft-tokens 4] [--fixed-draft] [--json]   decode tok/s plain vs prompt lookup vs a draft\n"
    "            model, copy-heavy and chat workloads; checks the outputs are identical\n"
    "  bench beam [--widths 4,8] [--max-tokens 64] [--block-size 16] [--json]   KV blocks beam search holds\n"
    "            against n parallel samples and independent sequences\n"
    "  bench kv-disk [--context 2000,8000] [--threads 2] [--dir DIR] [--json] [MODEL/BACKEND options]\n"
    "            a long prompt read back from the KV disk tier (out of the page cache) against computing it\n"
    "  bench load [--model PATH] [--threads 2] [--json]   open to first token, peak RSS against the file\n"
    "  bench kernels               decode attention GB/s vs device copy, prefill TFLOP/s (CUDA builds)\n"
    "  check kernels [--seed S]    each CUDA kernel against its CPU reference (CUDA builds)\n"
    "  check backend [--random-weights tiny | --model PATH] [--dtype bf16|f16] [--prompts N] [--steps N]\n"
    "            [--tolerance T]   CUDA backend vs CPU backend logits, greedy teacher-forced (CUDA builds)\n"
    "  serve     [--model PATH] [--host 127.0.0.1] [--port 8080] [--api-key KEY] [--threads N] [--kv-blocks N]\n"
    "            the OpenAI-compatible API (runs pagedchat-server; `pagedchat-cli serve --help` lists all options)\n"
    "  models    list [--folder DIR]... [--json] | info FILE | pull default | pull REPO FILE [--revision R]\n"
    "            the GGUFs on this machine (and other tools' caches) with whether each runs here; downloads\n"
    "  quantize  SOURCE.gguf [OUTPUT.gguf] TYPE [--imatrix FILE] [--threads N] [--allow-requantize] [--dry-run]\n"
    "            a 16/32-bit GGUF into TYPE (Q4_K_M, Q5_K_M, Q6_K, Q8_0, Q4_0, ... `quantize --help` lists\n"
    "            them): the file llama-quantize writes, byte for byte; --imatrix weighs each column's\n"
    "            rounding error by its activations (llama.cpp's imatrix files)\n"
    "  imatrix   [--model PATH] --text FILE [--output PATH] [--chunk 512] [--chunks N] [--threads N]\n"
    "            an importance matrix for quantize --imatrix: the sums of each matrix's input squares over\n"
    "            a calibration text, measured by this engine (llama.cpp's imatrix GGUF form)\n"
    "MODEL/BACKEND options: --model PATH | --random-weights tiny|tiny-moe|llama-3.2-1b|llama-3.1-8b [--weights-seed S];\n"
    "            --backend cpu|cuda [--kv-type f16|f32|q8_0 (cpu; default f16)] [--dtype bf16|f16]\n"
    "            [--gpu-memory-fraction F (default 0.9 of the memory free after the weights, for the KV pool)]\n"
    "            [--chat-template model|builtin|plain|FILE.jinja]   the model's own template (default), the\n"
    "            built-in format recognised from it, plain text (a base model continues the messages' text),\n"
    "            or a Jinja template from a file\n"
    "Without --model the default model is used (`pagedchat-cli models pull default` fetches it).\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string command = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (command == "generate") return pagedchat::cli::cmd_generate(args);
    if (command == "tokenize") return pagedchat::cli::cmd_tokenize(args);
    if (command == "bench") return pagedchat::cli::cmd_bench(args);
    if (command == "check") return pagedchat::cli::cmd_check(args);
    if (command == "models") return pagedchat::cli::cmd_models(args);
    if (command == "serve") return pagedchat::cli::cmd_serve(args);
    if (command == "quantize") return pagedchat::cli::cmd_quantize(args);
    if (command == "imatrix") return pagedchat::cli::cmd_imatrix(args);
    std::fprintf(stderr, "pagedchat-cli: unknown command '%s'\n%s", command.c_str(), kUsage);
    return 2;
  } catch (const pagedchat::Error& e) {
    std::fprintf(stderr, "pagedchat-cli: error: %s\n", e.what());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "pagedchat-cli: error: out of memory\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pagedchat-cli: error: %s\n", e.what());
  }
  return 1;
}
