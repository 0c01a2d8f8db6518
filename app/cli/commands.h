#pragma once
// The CLI's subcommands; each returns the process exit code and throws Error on bad input.

#include <string>
#include <vector>

namespace pagedchat::cli {

int cmd_generate(const std::vector<std::string>& args);
class Args;
int generate_remote(const Args& args, const std::string& url, const std::string& prompt);  // generate --endpoint
int cmd_tokenize(const std::vector<std::string>& args);
int cmd_bench(const std::vector<std::string>& args);
int cmd_bench_throughput(const std::vector<std::string>& args);  // `bench throughput`
int cmd_bench_memory(const std::vector<std::string>& args);      // `bench memory`
int cmd_bench_chat(const std::vector<std::string>& args);        // `bench chat`: prompt tokens a growing chat computes
int cmd_bench_attention(const std::vector<std::string>& args);   // `bench attention`: CPU attention alone
int cmd_bench_kv_quality(const std::vector<std::string>& args);  // `bench kv-quality`: KL of f16/q8_0 KV vs f32
int cmd_bench_roofline(const std::vector<std::string>& args);  // `bench roofline`: the machine's ceilings, and the steps against them
int cmd_bench_quant_quality(const std::vector<std::string>& args);  // `bench quant-quality`: KL of quantized weights, plain vs imatrix
int cmd_bench_speculative(const std::vector<std::string>& args);  // `bench speculative`: plain vs drafts
int cmd_bench_beam(const std::vector<std::string>& args);         // `bench beam`: KV blocks beams hold
int cmd_bench_structured(const std::vector<std::string>& args);   // `bench structured`: what grammar masks cost
int cmd_bench_kv_disk(const std::vector<std::string>& args);      // `bench kv-disk`: a chat restored from disk vs re-prefill
int cmd_bench_load(const std::vector<std::string>& args);         // `bench load`: open to first token, peak RSS
int cmd_check(const std::vector<std::string>& args);          // `check kernels` | `check backend` (CUDA builds)
int cmd_check_backend(const std::vector<std::string>& args);  // `check backend`: CUDA vs CPU logits
int cmd_bench_decode(const std::vector<std::string>& args);   // `bench decode`: batch-1 ms/token (floor on CUDA)
int cmd_bench_kernels(const std::vector<std::string>& args);  // `bench kernels` (CUDA builds)
int cmd_models(const std::vector<std::string>& args);  // `models list | info | pull`
int cmd_serve(const std::vector<std::string>& args);
int cmd_quantize(const std::vector<std::string>& args);
int cmd_imatrix(const std::vector<std::string>& args);   // `imatrix --model M --text FILE`: measure an importance matrix  // `quantize SOURCE [OUTPUT] TYPE`: write a quantized GGUF  // runs pagedchat-server (Qt) with these arguments

}  // namespace pagedchat::cli
