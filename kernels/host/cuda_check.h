#pragma once
// Every CUDA and cuBLAS call is checked; a failure becomes a pagedchat::Error naming the call
// and CUDA's message, so the app reports it and goes on (never exit()).

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "engine/common/error.h"

namespace pagedchat::cuda {

inline void check(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess)
    fail("CUDA error in %s (%s:%d): %s", call, file, line, cudaGetErrorString(status));
}
inline void check(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS)
    fail("cuBLAS error in %s (%s:%d): %s", call, file, line, cublasGetStatusString(status));
}

}  // namespace pagedchat::cuda

#define PC_CUDA_CHECK(call) ::pagedchat::cuda::check((call), #call, __FILE__, __LINE__)
