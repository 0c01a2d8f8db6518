// Which attention kernels this CPU runs, and the one the backend uses.
#include "engine/backend/cpu/attention/attention_kernel.h"

namespace pagedchat::cpu {

const std::vector<const AttentionKernel*>& attention_kernels() {
  static const std::vector<const AttentionKernel*> kernels = [] {
    std::vector<const AttentionKernel*> k;
    for (const AttentionKernel* kernel : {scalar_attention_kernel(), avx2_attention_kernel(), avx512_attention_kernel()})
      if (kernel) k.push_back(kernel);
    return k;
  }();
  return kernels;
}

const AttentionKernel& default_attention_kernel() { return *attention_kernels().back(); }

}  // namespace pagedchat::cpu
