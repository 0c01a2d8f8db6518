// The fused layer kernels (see layer_kernels.h). One CTA per token row where the row needs a
// reduction (RMSNorm) or shares inputs (QKV split); plain grid-stride loops elsewhere. They move
// a few MB per step against the GEMMs' weights, so clarity wins over vectorization here.
#include "kernels/device/layer_kernels.h"

#include "kernels/host/cuda_check.h"
#include "kernels/device/device_utils.cuh"
#include "kernels/common/layer_math.h"

namespace pagedchat::kernels {
namespace {

constexpr int kRowThreads = 256;

unsigned blocks_for(int64_t n, int threads) {
  return static_cast<unsigned>(std::min<int64_t>((n + threads - 1) / threads, 65535ll * 16));
}

template <typename T>
__global__ void embedding_kernel(const uint16_t* __restrict__ emb, const int32_t* __restrict__ ids, int32_t dim,
                                 float* __restrict__ x) {
  const int t = blockIdx.x;
  const uint16_t* row = emb + static_cast<int64_t>(ids[t]) * dim;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) x[static_cast<int64_t>(t) * dim + i] = T::load(row[i]);
}

// Sum over the CTA (kRowThreads threads), the result in every thread.
__device__ float block_sum(float v) {
  __shared__ float partial[kRowThreads / 32];
  v = warp_sum(v);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0.0f;
#pragma unroll
  for (int w = 0; w < kRowThreads / 32; ++w) total += partial[w];
  __syncthreads();  // partial is reused by the next call
  return total;
}

template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    add_rms_norm_kernel(float* __restrict__ x, const float* __restrict__ add, const float* __restrict__ weight,
                        const int32_t* __restrict__ rows, int32_t dim, float eps, uint16_t* __restrict__ out) {
  const int i = blockIdx.x;
  const int64_t r = rows ? rows[i] : i;
  float* xr = x + r * dim;
  const float* ar = add ? add + r * dim : nullptr;
  float sum_sq = 0.0f;
  for (int d = threadIdx.x; d < dim; d += kRowThreads) {
    const float h = ar ? xr[d] + ar[d] : xr[d];
    sum_sq += h * h;
  }
  const float scale = rms_scale(block_sum(sum_sq), dim, eps);
  for (int d = threadIdx.x; d < dim; d += kRowThreads) {
    const float h = ar ? xr[d] + ar[d] : xr[d];
    out[static_cast<int64_t>(i) * dim + d] = T::store(h * scale * weight[d]);
    if (!rows && ar) xr[d] = h;  // each thread rewrites only the elements it read
  }
}

__global__ void rope_table_kernel(const int32_t* __restrict__ positions, int32_t num_tokens,
                                  const float* __restrict__ inv_freq, int32_t half, float* __restrict__ cos_sin) {
  const int64_t n = static_cast<int64_t>(num_tokens) * half;
  for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; j < n; j += gridDim.x * blockDim.x) {
    const int64_t t = j / half;
    rope_cos_sin(positions[t], inv_freq[j % half], &cos_sin[2 * j], &cos_sin[2 * j + 1]);
  }
}

__global__ void split_qkv_rope_kernel(const float* __restrict__ qkv, const float* __restrict__ bias,
                                      const float* __restrict__ cos_sin, QkvShape s, float* __restrict__ q,
                                      float* __restrict__ k, float* __restrict__ v) {
  const int t = blockIdx.x;
  const int q_dim = s.num_heads * s.head_dim, kv_dim = s.num_kv_heads * s.head_dim;
  const int width = q_dim + 2 * kv_dim, half = s.rope_dim / 2;
  const float* in = qkv + static_cast<int64_t>(t) * width;
  const float* cs = cos_sin + static_cast<int64_t>(t) * half * 2;
  for (int e = threadIdx.x; e < width; e += blockDim.x) {
    const float self = bias ? in[e] + bias[e] : in[e];
    if (e >= q_dim + kv_dim) {  // v: no rotation
      v[static_cast<int64_t>(t) * kv_dim + e - q_dim - kv_dim] = self;
      continue;
    }
    const int d = e % s.head_dim;  // q and k heads are both head_dim wide, so e's head offset is e - d
    float y = self;
    if (d < s.rope_dim) {
      const RopeSlot slot = rope_slot(s.neox, d, half);
      const int pe = e - d + slot.partner;
      const float partner = bias ? in[pe] + bias[pe] : in[pe];
      y = rope_rotate(slot.first, self, partner, cs[2 * slot.pair], cs[2 * slot.pair + 1]);
    }
    if (e < q_dim)
      q[static_cast<int64_t>(t) * q_dim + e] = y;
    else
      k[static_cast<int64_t>(t) * kv_dim + e - q_dim] = y;
  }
}

template <typename T>
__global__ void swiglu_kernel(const float* __restrict__ gu, int32_t num_tokens, int32_t ffn, uint16_t* __restrict__ out) {
  const int64_t n = static_cast<int64_t>(num_tokens) * ffn;
  for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; j < n; j += gridDim.x * blockDim.x) {
    const int64_t t = j / ffn, c = j % ffn;
    out[j] = T::store(silu_mul(gu[t * 2 * ffn + c], gu[t * 2 * ffn + ffn + c]));
  }
}

template <typename T>
__global__ void to_16bit_kernel(const float* __restrict__ x, int64_t n, uint16_t* __restrict__ out) {
  for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; j < n; j += gridDim.x * blockDim.x)
    out[j] = T::store(x[j]);
}

}  // namespace

// ---- launchers ------------------------------------------------------------------------------

void embedding_lookup(const uint16_t* embedding, KvDtype dtype, const int32_t* token_ids, int32_t num_tokens,
                      int32_t dim, float* x, cudaStream_t stream) {
  if (num_tokens <= 0) return;
  if (dtype == KvDtype::F16)
    embedding_kernel<KvF16><<<num_tokens, kRowThreads, 0, stream>>>(embedding, token_ids, dim, x);
  else
    embedding_kernel<KvBf16><<<num_tokens, kRowThreads, 0, stream>>>(embedding, token_ids, dim, x);
  PC_CUDA_CHECK(cudaGetLastError());
}

void add_rms_norm(float* x, const float* add, const float* weight, const int32_t* rows, int32_t num_rows, int32_t dim,
                  float eps, uint16_t* out, KvDtype dtype, cudaStream_t stream) {
  if (num_rows <= 0) return;
  if (dtype == KvDtype::F16)
    add_rms_norm_kernel<KvF16><<<num_rows, kRowThreads, 0, stream>>>(x, add, weight, rows, dim, eps, out);
  else
    add_rms_norm_kernel<KvBf16><<<num_rows, kRowThreads, 0, stream>>>(x, add, weight, rows, dim, eps, out);
  PC_CUDA_CHECK(cudaGetLastError());
}

void rope_table(const int32_t* positions, int32_t num_tokens, const float* inv_freq, int32_t half, float* cos_sin,
                cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(num_tokens) * half;
  if (n <= 0) return;
  rope_table_kernel<<<blocks_for(n, 256), 256, 0, stream>>>(positions, num_tokens, inv_freq, half, cos_sin);
  PC_CUDA_CHECK(cudaGetLastError());
}

void split_qkv_rope(const float* qkv, const float* bias, const float* cos_sin, int32_t num_tokens, const QkvShape& s,
                    float* q, float* k, float* v, cudaStream_t stream) {
  if (num_tokens <= 0) return;
  split_qkv_rope_kernel<<<num_tokens, kRowThreads, 0, stream>>>(qkv, bias, cos_sin, s, q, k, v);
  PC_CUDA_CHECK(cudaGetLastError());
}

void swiglu(const float* gu, int32_t num_tokens, int32_t ffn, uint16_t* out, KvDtype dtype, cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(num_tokens) * ffn;
  if (n <= 0) return;
  if (dtype == KvDtype::F16)
    swiglu_kernel<KvF16><<<blocks_for(n, 256), 256, 0, stream>>>(gu, num_tokens, ffn, out);
  else
    swiglu_kernel<KvBf16><<<blocks_for(n, 256), 256, 0, stream>>>(gu, num_tokens, ffn, out);
  PC_CUDA_CHECK(cudaGetLastError());
}

void to_16bit(const float* x, int64_t n, uint16_t* out, KvDtype dtype, cudaStream_t stream) {
  if (n <= 0) return;
  if (dtype == KvDtype::F16)
    to_16bit_kernel<KvF16><<<blocks_for(n, 256), 256, 0, stream>>>(x, n, out);
  else
    to_16bit_kernel<KvBf16><<<blocks_for(n, 256), 256, 0, stream>>>(x, n, out);
  PC_CUDA_CHECK(cudaGetLastError());
}

}  // namespace pagedchat::kernels
