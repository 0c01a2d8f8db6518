// Paged prefill attention. Grid: (row tiles, num_kv_heads, num_seqs); CTA: 4 warps. The rows of
// one (sequence, kv head) are its chunk's (token, query head of the group) pairs, token-major;
// a CTA takes kRows of them, so a K/V tile in shared memory serves every query head of the
// group. Keys go in tiles of 32, one key per lane for the scores, one value dim per lane
// (strided by 32) for the weighted sum; each tile's (max, sum, acc) folds into the row's state
// with SoftmaxState::merge. Causality: a key past a row's position scores -inf.
#include "kernels/device/prefill_attention.h"

#include "kernels/host/cuda_check.h"
#include "kernels/common/decode_plan.h"
#include "kernels/device/device_utils.cuh"
#include "kernels/common/online_softmax.h"

namespace pagedchat::kernels {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kTileK = 32;  // keys per tile: one per lane

template <int HEAD_DIM>
constexpr int rows_per_warp() { return HEAD_DIM == 256 ? 2 : 4; }  // keeps shared memory under 48 KiB

template <typename KV, int HEAD_DIM>
__global__ void __launch_bounds__(kThreads) prefill_attention_kernel(PagedKvView<const uint16_t> kv, AttentionRows rows) {
  constexpr int kRowsPerWarp = rows_per_warp<HEAD_DIM>();
  constexpr int kRows = kWarps * kRowsPerWarp;
  constexpr int kWords = HEAD_DIM / 2;         // 32-bit words (two elements) per K/V head row
  constexpr int kKeyWords = kWords + 1;        // odd stride: lane j's row starts in its own bank
  constexpr int kPerLane = HEAD_DIM / 32;      // output dims per lane: lane + 32 * i
  __shared__ uint32_t k_s[kTileK * kKeyWords];
  __shared__ uint32_t v_s[kTileK * kWords];
  __shared__ float q_s[kRows][HEAD_DIM];

  const int seq = blockIdx.z, kv_head = blockIdx.y;
  const int group = rows.num_heads / kv.num_kv_heads;
  const int q_begin = rows.cu_seqlens_q[seq];
  const int q_len = rows.cu_seqlens_q[seq + 1] - q_begin;
  const int first_pos = rows.seq_lens[seq] - q_len;  // position of the chunk's first token
  const int row0 = blockIdx.x * kRows;
  if (row0 >= q_len * group) return;
  const int num_rows = min(kRows, q_len * group - row0);
  const int last_pos = first_pos + (row0 + num_rows - 1) / group;  // keys this CTA needs: [0, last_pos]

  // Row r: token q_begin + (row0 + r) / group, head kv_head * group + (row0 + r) % group.
  auto q_index = [&](int r) {
    return (static_cast<int64_t>(q_begin) + (row0 + r) / group) * rows.num_heads + kv_head * group + (row0 + r) % group;
  };
  for (int i = threadIdx.x; i < kRows * HEAD_DIM; i += kThreads) {
    const int r = i / HEAD_DIM, d = i % HEAD_DIM;
    q_s[r][d] = r < num_rows ? rows.q[q_index(r) * HEAD_DIM + d] * rows.scale : 0.0f;
  }

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  SoftmaxState state[kRowsPerWarp];
  float acc[kRowsPerWarp][kPerLane];
#pragma unroll
  for (int j = 0; j < kRowsPerWarp; ++j)
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) acc[j][i] = 0.0f;

  for (int t0 = 0; t0 <= last_pos; t0 += kTileK) {
    __syncthreads();  // the previous tile is consumed (and q_s written, the first time)
    for (int i = threadIdx.x; i < kTileK * kWords; i += kThreads) {
      const int j = i / kWords, w = i % kWords, pos = t0 + j;
      uint32_t kw = 0, vw = 0;  // zeros past last_pos: finite, and masked anyway
      if (pos <= last_pos) {
        const int64_t off = kv.token_offset(seq, pos, kv_head);
        kw = reinterpret_cast<const uint32_t*>(kv.k + off)[w];
        vw = reinterpret_cast<const uint32_t*>(kv.v + off)[w];
      }
      k_s[j * kKeyWords + w] = kw;
      v_s[j * kWords + w] = vw;
    }
    __syncthreads();

#pragma unroll
    for (int j = 0; j < kRowsPerWarp; ++j) {
      const int r = warp * kRowsPerWarp + j;  // warp-uniform
      if (r >= num_rows) break;
      const int pos_r = first_pos + (row0 + r) / group;
      const int key = t0 + lane;
      float s = -INFINITY;
      if (key <= pos_r) {
        float dot = 0.0f;
        for (int w = 0; w < kWords; ++w) {
          const uint32_t kw = k_s[lane * kKeyWords + w];
          dot += q_s[r][2 * w] * KV::load(static_cast<uint16_t>(kw & 0xffffu)) +
                 q_s[r][2 * w + 1] * KV::load(static_cast<uint16_t>(kw >> 16));
        }
        s = dot;
      }
      const float tile_max = warp_max(s);
      if (tile_max == -INFINITY) continue;  // the whole tile is in this row's future
      const float p = expf(s - tile_max);    // 0 for masked keys
      SoftmaxState tile{tile_max, warp_sum(p)};
      float tile_acc[kPerLane];
#pragma unroll
      for (int i = 0; i < kPerLane; ++i) tile_acc[i] = 0.0f;
      const uint16_t* v16 = reinterpret_cast<const uint16_t*>(v_s);
      for (int jj = 0; jj < kTileK; ++jj) {
        const float pj = __shfl_sync(0xffffffffu, p, jj);
#pragma unroll
        for (int i = 0; i < kPerLane; ++i) tile_acc[i] += pj * KV::load(v16[jj * HEAD_DIM + lane + 32 * i]);
      }
      merge_into(state[j], acc[j], tile, tile_acc, kPerLane);
    }
  }

#pragma unroll
  for (int j = 0; j < kRowsPerWarp; ++j) {
    const int r = warp * kRowsPerWarp + j;
    if (r >= num_rows) break;
    const float inv = state[j].inv_sum();
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) rows.out[q_index(r) * HEAD_DIM + lane + 32 * i] = acc[j][i] * inv;
  }
}

// ---- launcher -------------------------------------------------------------------------------

template <typename KV, int HEAD_DIM>
void launch(const PagedKvView<const uint16_t>& kv, const AttentionRows& rows, cudaStream_t stream) {
  constexpr int kRows = kWarps * rows_per_warp<HEAD_DIM>();
  const int64_t tiles = (static_cast<int64_t>(rows.max_q_len) * (rows.num_heads / kv.num_kv_heads) + kRows - 1) / kRows;
  const dim3 grid(static_cast<unsigned>(tiles), kv.num_kv_heads, rows.num_seqs);
  prefill_attention_kernel<KV, HEAD_DIM><<<grid, kThreads, 0, stream>>>(kv, rows);
}

template <typename KV>
void launch_dim(const PagedKvView<const uint16_t>& kv, const AttentionRows& rows, cudaStream_t stream) {
  switch (kv.head_dim) {
    case 64: return launch<KV, 64>(kv, rows, stream);
    case 128: return launch<KV, 128>(kv, rows, stream);
    case 256: return launch<KV, 256>(kv, rows, stream);
    default: fail("prefill_attention: head_dim %d is not supported (64, 128, 256)", kv.head_dim);
  }
}

}  // namespace

void prefill_attention(const PagedKvView<const uint16_t>& kv, KvDtype dtype, const AttentionRows& rows,
                       cudaStream_t stream) {
  if (rows.num_seqs <= 0 || rows.max_q_len <= 0) return;
  if (kv.num_kv_heads <= 0 || rows.num_heads % kv.num_kv_heads != 0)
    fail("prefill_attention: %d query heads do not group over %d kv heads", rows.num_heads, kv.num_kv_heads);
  if (rows.num_seqs > 65535) fail("prefill_attention: %d sequences is over the grid's 65535", rows.num_seqs);
  if (dtype == KvDtype::F16)
    launch_dim<KvF16>(kv, rows, stream);
  else
    launch_dim<KvBf16>(kv, rows, stream);
  PC_CUDA_CHECK(cudaGetLastError());
}

}  // namespace pagedchat::kernels
