// Paged decode attention, split-K. Grid: (num_kv_heads * head_tiles, num_seqs, num_splits);
// CTA: 4 warps. A CTA owns one kv head, HEAD_TILE of its query heads, one split of one
// sequence's context. Each token's K and V head rows are read by HEAD_DIM / 8 lanes with one
// 16-byte load each (HND pool: a page of one head is contiguous), and serve all HEAD_TILE query
// heads: the bytes read per step are the KV bytes, once. Every lane group keeps online-softmax
// states for its tokens; they are merged across the warp (shuffles), then across warps (shared
// memory), then across splits (split_k_reduce.cu), each with SoftmaxState::merge.
#include "kernels/device/decode_attention.h"

#include "kernels/host/cuda_check.h"
#include "kernels/device/device_utils.cuh"
#include "kernels/common/online_softmax.h"
#include "kernels/device/split_k_reduce.h"

namespace pagedchat::kernels {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kUnroll = 2;  // tokens per lane group in flight: more bytes in flight per SM

template <typename KV, int HEAD_DIM, int HEAD_TILE>
__global__ void __launch_bounds__(kThreads)
    decode_attention_kernel(PagedKvView<const uint16_t> kv, AttentionRows rows, int32_t head_tiles,
                            int32_t partition_size, int32_t num_splits, float2* __restrict__ part_ml,
                            float* __restrict__ part_acc) {
  constexpr int kVec = 8;                               // elements per 16-byte load
  constexpr int kLanesPerToken = HEAD_DIM / kVec;       // 8, 16, 32
  constexpr int kTokensPerWarp = 32 / kLanesPerToken;   // 4, 2, 1
  constexpr int kTokensPerStep = kWarps * kTokensPerWarp;

  __shared__ float sm_acc[kWarps][HEAD_TILE][HEAD_DIM];
  __shared__ float2 sm_state[kWarps][HEAD_TILE];  // (m, l): SoftmaxState has a constructor

  const int seq = blockIdx.y, split = blockIdx.z;
  const int seq_len = rows.seq_lens[seq];
  const int begin = split * partition_size;
  if (begin >= seq_len) return;  // past this sequence's context: the reduce skips it
  const int end = min(seq_len, begin + partition_size);

  const int group = rows.num_heads / kv.num_kv_heads;
  const int kv_head = blockIdx.x / head_tiles;
  const int head0 = kv_head * group + (blockIdx.x % head_tiles) * HEAD_TILE;
  const int heads_here = min(HEAD_TILE, kv_head * group + group - head0);  // the last tile may be partial

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int tok = lane / kLanesPerToken;       // which of the warp's tokens
  const int d0 = (lane % kLanesPerToken) * kVec;  // which 8 dims of it

  // This lane's 8 dims of each query head, pre-scaled.
  float q[HEAD_TILE][kVec];
#pragma unroll
  for (int g = 0; g < HEAD_TILE; ++g)
#pragma unroll
    for (int i = 0; i < kVec; ++i)
      q[g][i] = g < heads_here ? rows.q[(static_cast<int64_t>(seq) * rows.num_heads + head0 + g) * HEAD_DIM + d0 + i] * rows.scale
                               : 0.0f;

  SoftmaxState state[HEAD_TILE];
  float acc[HEAD_TILE][kVec];
#pragma unroll
  for (int g = 0; g < HEAD_TILE; ++g)
#pragma unroll
    for (int i = 0; i < kVec; ++i) acc[g][i] = 0.0f;

  // Loop bounds are warp-uniform (shuffles below need the whole warp); `valid` is per token.
  for (int base = begin + warp * kTokensPerWarp; base < end; base += kUnroll * kTokensPerStep) {
    float k[kUnroll][kVec], v[kUnroll][kVec];
    bool valid[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {  // issue all loads first
      const int pos = base + u * kTokensPerStep + tok;
      valid[u] = pos < end;
      if (valid[u]) {
        const int64_t off = kv.token_offset(seq, pos, kv_head) + d0;
        load8<KV>(kv.k + off, k[u]);
        load8<KV>(kv.v + off, v[u]);
      } else {
#pragma unroll
        for (int i = 0; i < kVec; ++i) k[u][i] = v[u][i] = 0.0f;  // finite: 0 * v must be 0
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int g = 0; g < HEAD_TILE; ++g) {
        float dot = 0.0f;
#pragma unroll
        for (int i = 0; i < kVec; ++i) dot += q[g][i] * k[u][i];
#pragma unroll
        for (int o = kLanesPerToken / 2; o > 0; o /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, o);
        const SoftmaxScale s = state[g].update(valid[u] ? dot : -INFINITY);
#pragma unroll
        for (int i = 0; i < kVec; ++i) acc[g][i] = acc[g][i] * s.old_scale + s.new_scale * v[u][i];
      }
  }

  // Merge the warp's token groups (lanes that hold the same dims are kLanesPerToken apart).
#pragma unroll
  for (int o = kLanesPerToken; o < 32; o *= 2)
#pragma unroll
    for (int g = 0; g < HEAD_TILE; ++g) {
      const SoftmaxState other{__shfl_xor_sync(0xffffffffu, state[g].m, o), __shfl_xor_sync(0xffffffffu, state[g].l, o)};
      float other_acc[kVec];
#pragma unroll
      for (int i = 0; i < kVec; ++i) other_acc[i] = __shfl_xor_sync(0xffffffffu, acc[g][i], o);
      merge_into(state[g], acc[g], other, other_acc, kVec);
    }
  if (tok == 0) {
#pragma unroll
    for (int g = 0; g < HEAD_TILE; ++g) {
#pragma unroll
      for (int i = 0; i < kVec; ++i) sm_acc[warp][g][d0 + i] = acc[g][i];
      if (lane == 0) sm_state[warp][g] = make_float2(state[g].m, state[g].l);
    }
  }
  __syncthreads();

  // Merge the warps; write the output (one split) or this split's partial state.
  for (int i = threadIdx.x; i < heads_here * HEAD_DIM; i += kThreads) {
    const int g = i / HEAD_DIM, d = i % HEAD_DIM;
    SoftmaxState st;
    float a = 0.0f;
    for (int w = 0; w < kWarps; ++w) merge_into(st, &a, SoftmaxState{sm_state[w][g].x, sm_state[w][g].y}, &sm_acc[w][g][d], 1);
    const int64_t row = static_cast<int64_t>(seq) * rows.num_heads + head0 + g;
    if (num_splits == 1) {
      rows.out[row * HEAD_DIM + d] = a * st.inv_sum();
    } else {
      part_acc[(row * num_splits + split) * HEAD_DIM + d] = a;
      if (d == 0) part_ml[row * num_splits + split] = make_float2(st.m, st.l);
    }
  }
}

// ---- launcher -------------------------------------------------------------------------------

template <typename KV, int HEAD_DIM, int HEAD_TILE>
void launch(const PagedKvView<const uint16_t>& kv, const AttentionRows& rows, const DecodePlan& plan,
            float2* part_ml, float* part_acc, cudaStream_t stream) {
  const dim3 grid(kv.num_kv_heads * plan.head_tiles, rows.num_seqs, plan.num_splits);
  decode_attention_kernel<KV, HEAD_DIM, HEAD_TILE><<<grid, kThreads, 0, stream>>>(
      kv, rows, plan.head_tiles, plan.partition_size, plan.num_splits, part_ml, part_acc);
}

template <typename KV, int HEAD_DIM>
void launch_tile(const PagedKvView<const uint16_t>& kv, const AttentionRows& rows, const DecodePlan& plan,
                 float2* part_ml, float* part_acc, cudaStream_t stream) {
  switch (plan.head_tile) {
    case 1: return launch<KV, HEAD_DIM, 1>(kv, rows, plan, part_ml, part_acc, stream);
    case 2: return launch<KV, HEAD_DIM, 2>(kv, rows, plan, part_ml, part_acc, stream);
    case 4: return launch<KV, HEAD_DIM, 4>(kv, rows, plan, part_ml, part_acc, stream);
    case 8: return launch<KV, HEAD_DIM, 8>(kv, rows, plan, part_ml, part_acc, stream);
    default: fail("decode_attention: head tile %d is not 1, 2, 4 or 8", plan.head_tile);
  }
}

template <typename KV>
void launch_dim(const PagedKvView<const uint16_t>& kv, const AttentionRows& rows, const DecodePlan& plan,
                float2* part_ml, float* part_acc, cudaStream_t stream) {
  switch (kv.head_dim) {
    case 64: return launch_tile<KV, 64>(kv, rows, plan, part_ml, part_acc, stream);
    case 128: return launch_tile<KV, 128>(kv, rows, plan, part_ml, part_acc, stream);
    case 256: return launch_tile<KV, 256>(kv, rows, plan, part_ml, part_acc, stream);
    default: fail("decode_attention: head_dim %d is not supported (64, 128, 256)", kv.head_dim);
  }
}

}  // namespace

void decode_attention(const PagedKvView<const uint16_t>& kv, KvDtype dtype, const AttentionRows& rows,
                      const DecodePlan& plan, void* workspace, cudaStream_t stream) {
  if (rows.num_seqs <= 0) return;
  if (kv.num_kv_heads <= 0 || rows.num_heads % kv.num_kv_heads != 0)
    fail("decode_attention: %d query heads do not group over %d kv heads", rows.num_heads, kv.num_kv_heads);
  if (rows.num_seqs > 65535) fail("decode_attention: %d sequences is over the grid's 65535", rows.num_seqs);
  const int group = rows.num_heads / kv.num_kv_heads;
  if (plan.head_tile * plan.head_tiles < group || static_cast<int64_t>(plan.partition_size) * plan.num_splits < rows.max_seq_len)
    fail("decode_attention: the plan (%d x %d heads, %d x %d tokens) does not cover %d heads per kv head, %d tokens",
         plan.head_tiles, plan.head_tile, plan.num_splits, plan.partition_size, group, rows.max_seq_len);
  if (plan.num_splits > 1 && workspace == nullptr) fail("decode_attention: the plan needs a split-K workspace");
  // Workspace: part_ml [num_seqs, num_heads, num_splits] float2, then part_acc.
  auto* part_ml = static_cast<float2*>(workspace);
  auto* part_acc = reinterpret_cast<float*>(part_ml + static_cast<int64_t>(rows.num_seqs) * rows.num_heads * plan.num_splits);
  if (dtype == KvDtype::F16)
    launch_dim<KvF16>(kv, rows, plan, part_ml, part_acc, stream);
  else
    launch_dim<KvBf16>(kv, rows, plan, part_ml, part_acc, stream);
  PC_CUDA_CHECK(cudaGetLastError());
  if (plan.num_splits > 1)
    split_k_reduce(part_ml, part_acc, rows.seq_lens, rows.num_seqs, rows.num_heads, kv.head_dim, plan.num_splits,
                   plan.partition_size, rows.out, stream);
}

}  // namespace pagedchat::kernels
