// One thread per output element: find its block, dequantize that element with the shared
// PC_HOST_DEVICE function. Memory-bound and simple; used once per weight at load.

#include "kernels/dequantize.h"

#include "engine/quant/quant_blocks.h"
#include "kernels/cuda_check.h"

namespace pagedchat::cuda {
namespace {

template <typename Block>
__global__ void dequantize_kernel(const Block* __restrict__ src, float* __restrict__ dst, int64_t total,
                                  int64_t cols) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  int64_t row = i / cols, col = i % cols;
  int64_t blocks_per_row = cols / Block::num_elements;
  const Block& b = src[row * blocks_per_row + col / Block::num_elements];
  dst[i] = dequantize_element(b, static_cast<int>(col % Block::num_elements));
}

__global__ void f16_kernel(const uint16_t* __restrict__ src, float* __restrict__ dst, int64_t total, bool bf16) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  dst[i] = bf16 ? bf16_to_fp32(src[i]) : fp16_to_fp32(src[i]);
}

template <typename Block>
void launch(const void* src, float* dst, int64_t total, int64_t cols, cudaStream_t stream) {
  constexpr int threads = 256;
  auto blocks = static_cast<unsigned>((total + threads - 1) / threads);
  dequantize_kernel<Block><<<blocks, threads, 0, stream>>>(static_cast<const Block*>(src), dst, total, cols);
}

}  // namespace

void dequantize_rows_f32(GgmlType type, const void* src, float* dst, int64_t num_rows, int64_t cols,
                         cudaStream_t stream) {
  const int64_t total = num_rows * cols;
  if (total == 0) return;
  switch (type) {
    case GgmlType::F32:
      PC_CUDA_CHECK(cudaMemcpyAsync(dst, src, total * sizeof(float), cudaMemcpyDeviceToDevice, stream));
      return;
    case GgmlType::F16:
    case GgmlType::BF16: {
      auto blocks = static_cast<unsigned>((total + 255) / 256);
      f16_kernel<<<blocks, 256, 0, stream>>>(static_cast<const uint16_t*>(src), dst, total, type == GgmlType::BF16);
      break;
    }
    case GgmlType::Q4_0: launch<block_q4_0>(src, dst, total, cols, stream); break;
    case GgmlType::Q4_1: launch<block_q4_1>(src, dst, total, cols, stream); break;
    case GgmlType::Q5_0: launch<block_q5_0>(src, dst, total, cols, stream); break;
    case GgmlType::Q5_1: launch<block_q5_1>(src, dst, total, cols, stream); break;
    case GgmlType::Q8_0: launch<block_q8_0>(src, dst, total, cols, stream); break;
    case GgmlType::Q4_K: launch<block_q4_K>(src, dst, total, cols, stream); break;
    case GgmlType::Q5_K: launch<block_q5_K>(src, dst, total, cols, stream); break;
    case GgmlType::Q6_K: launch<block_q6_K>(src, dst, total, cols, stream); break;
    default: fail("dequantize_rows_f32: type %u is not supported on CUDA", static_cast<unsigned>(type));
  }
  PC_CUDA_CHECK(cudaGetLastError());
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
