#pragma once
// The roofline of this machine for a model: how fast it reads memory, and how many FLOP per
// second the engine's own forward pass reaches on the model when it has plenty of tokens per
// weight read (a long prompt step). A step of arithmetic intensity I (FLOP per byte read,
// engine/engine/step_cost.h) can go no faster than min(peak_flops, I x read_bandwidth): below
// the ridge (peak_flops / read_bandwidth) it waits on memory, above it on arithmetic. Measured,
// not looked up: `pagedchat-cli bench roofline` prints it with a sweep of steps, and the
// prefill/decode lesson draws its own steps against it.

#include <cstddef>
#include <vector>

#include "engine/engine/engine.h"
#include "engine/model/model.h"

namespace pagedchat {

class CpuBackend;

struct RooflineCeilings {
  double peak_flops = 0.0;      // FLOP/s
  double read_bandwidth = 0.0;  // bytes/s
  int threads = 0;
  double ridge() const { return read_bandwidth > 0 ? peak_flops / read_bandwidth : 0.0; }  // FLOP per byte
  double attainable(double intensity) const;  // min(peak_flops, intensity x read_bandwidth)
};

// Bytes per second `threads` threads read from memory: the best of `passes` sums of a buffer
// of `bytes` (far past any cache), each thread its own contiguous share.
double measure_read_bandwidth(int threads, size_t bytes = size_t{512} << 20, int passes = 5);

// `batch` sequences of `prompt_tokens` tokens each, their prompts computed in one step, then
// `decode_steps` steps of one token each: every step's record (forward time and cost), on a
// fresh engine over `backend` (whose KV pool it reallocates).
std::vector<StepRecord> measure_steps(const Model& model, Backend& backend, int prompt_tokens, int batch, int decode_steps);

// The ceilings for `model` on `backend` (a CPU backend of the model's weights, whose KV pool
// this reallocates: not one an engine in use holds): the read bandwidth on its threads (256
// MiB, best of 3) and the best FLOP/s of a prompt step of 64, 128 or 256 tokens (two passes each).
RooflineCeilings measure_cpu_roofline(const Model& model, CpuBackend& backend);

}  // namespace pagedchat
