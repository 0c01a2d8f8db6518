// One thread per output element: find its block, dequantize that element with the shared
// PC_HOST_DEVICE function. Memory-bound and simple; used once per weight at load.

#include "kernels/device/dequantize.h"

#include "engine/quant/quant_blocks.h"
#include "kernels/host/cuda_check.h"

namespace pagedchat::cuda {
namespace {

// Output element types: f32 as is, or rounded into 16 bits with kv_dtype.h's stores.
struct OutF32 {
  using storage = float;
  __device__ static float store(float f) { return f; }
};

template <typename Out, typename Block>
__global__ void dequantize_kernel(const Block* __restrict__ src, typename Out::storage* __restrict__ dst, int64_t total,
                                  int64_t cols) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  int64_t row = i / cols, col = i % cols;
  int64_t blocks_per_row = cols / Block::num_elements;
  const Block& b = src[row * blocks_per_row + col / Block::num_elements];
  dst[i] = Out::store(dequantize_element(b, static_cast<int>(col % Block::num_elements)));
}

template <typename Out>
__global__ void float_kernel(const void* __restrict__ src, GgmlType type, typename Out::storage* __restrict__ dst,
                             int64_t total) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const float f = type == GgmlType::F32    ? static_cast<const float*>(src)[i]
                  : type == GgmlType::BF16 ? bf16_to_fp32(static_cast<const uint16_t*>(src)[i])
                                           : fp16_to_fp32(static_cast<const uint16_t*>(src)[i]);
  dst[i] = Out::store(f);
}

template <typename Out, typename Block>
void launch(const void* src, typename Out::storage* dst, int64_t total, int64_t cols, cudaStream_t stream) {
  constexpr int threads = 256;
  auto blocks = static_cast<unsigned>((total + threads - 1) / threads);
  dequantize_kernel<Out, Block><<<blocks, threads, 0, stream>>>(static_cast<const Block*>(src), dst, total, cols);
}

template <typename Out>
void dequantize_rows(GgmlType type, const void* src, typename Out::storage* dst, int64_t num_rows, int64_t cols,
                     cudaStream_t stream) {
  const int64_t total = num_rows * cols;
  if (total == 0) return;
  switch (type) {
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16: {
      auto blocks = static_cast<unsigned>((total + 255) / 256);
      float_kernel<Out><<<blocks, 256, 0, stream>>>(src, type, dst, total);
      break;
    }
    case GgmlType::Q4_0: launch<Out, block_q4_0>(src, dst, total, cols, stream); break;
    case GgmlType::Q4_1: launch<Out, block_q4_1>(src, dst, total, cols, stream); break;
    case GgmlType::Q5_0: launch<Out, block_q5_0>(src, dst, total, cols, stream); break;
    case GgmlType::Q5_1: launch<Out, block_q5_1>(src, dst, total, cols, stream); break;
    case GgmlType::Q8_0: launch<Out, block_q8_0>(src, dst, total, cols, stream); break;
    case GgmlType::Q4_K: launch<Out, block_q4_K>(src, dst, total, cols, stream); break;
    case GgmlType::Q5_K: launch<Out, block_q5_K>(src, dst, total, cols, stream); break;
    case GgmlType::Q6_K: launch<Out, block_q6_K>(src, dst, total, cols, stream); break;
    default: fail("dequantize: type %u is not supported on CUDA", static_cast<unsigned>(type));
  }
  PC_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void dequantize_rows_f32(GgmlType type, const void* src, float* dst, int64_t num_rows, int64_t cols,
                         cudaStream_t stream) {
  if (type == GgmlType::F32) {  // a plain copy
    PC_CUDA_CHECK(cudaMemcpyAsync(dst, src, num_rows * cols * sizeof(float), cudaMemcpyDeviceToDevice, stream));
    return;
  }
  dequantize_rows<OutF32>(type, src, dst, num_rows, cols, stream);
}

void dequantize_rows_16(GgmlType type, const void* src, uint16_t* dst, kernels::KvDtype dtype, int64_t num_rows,
                        int64_t cols, cudaStream_t stream) {
  if (dtype == kernels::KvDtype::F16)
    dequantize_rows<kernels::KvF16>(type, src, dst, num_rows, cols, stream);
  else
    dequantize_rows<kernels::KvBf16>(type, src, dst, num_rows, cols, stream);
}

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
}

}  // namespace pagedchat::cuda
