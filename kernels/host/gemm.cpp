// Row-major Y = X W^T as cuBLAS's column-major product: Y^T [out, n] = W [in, out]^T X^T [in, n],
// where row-major W [out, in] is column-major [in, out] (lda = in) and X likewise (ldb = in).
#include "kernels/host/gemm.h"

#include <climits>

#include "kernels/host/cuda_check.h"

namespace pagedchat::kernels {

void linear(cublasHandle_t handle, const uint16_t* x, const uint16_t* w, float* y, int64_t n, int64_t in, int64_t out,
            KvDtype dtype) {
  if (n <= 0) return;
  if (n > INT_MAX || in > INT_MAX || out > INT_MAX) fail("linear: %lld x %lld x %lld is too large for cuBLAS", (long long)n, (long long)in, (long long)out);
  const float alpha = 1.0f, beta = 0.0f;
  const cudaDataType_t t = dtype == KvDtype::F16 ? CUDA_R_16F : CUDA_R_16BF;
  PC_CUDA_CHECK(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(out), static_cast<int>(n),
                             static_cast<int>(in), &alpha, w, t, static_cast<int>(in), x, t, static_cast<int>(in), &beta,
                             y, CUDA_R_32F, static_cast<int>(out), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace pagedchat::kernels
