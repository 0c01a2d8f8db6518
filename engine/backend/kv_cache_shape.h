#pragma once
// The KV pool's shape and a whole-block copy: the two types every owner of the pool shares (the
// backends, the KV manager's transfers, the CUDA block kernels). A header of its own so that
// kernels/ does not include the batch for them; plain C++17, since nvcc compiles kernels/ as such.

#include <cstdint>

namespace pagedchat {

struct KvCacheShape {
  int num_layers = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int num_blocks = 0;
  int block_size = 16;
  int max_context = 0;  // tokens one sequence may hold; 0: the model's context length
  // Bytes of one block across all layers, K and V, in the backend's KV element type.
  uint64_t block_bytes(int element_bytes) const {
    return 2ull * num_layers * block_size * num_kv_heads * head_dim * element_bytes;
  }
};

struct BlockCopy {
  int32_t src = 0;
  int32_t dst = 0;
};

}  // namespace pagedchat
