#pragma once
// A backend double for the engine suites: another backend's forward pass, made to fail when
// told to (as a device out of memory or lost would), so a test can watch the engine fail a
// step's requests and go on.

#include <string_view>
#include <utility>

#include "engine/backend/backend.h"
#include "engine/common/error.h"

namespace pagedchat::test {

class FailingBackend final : public Backend {
 public:
  explicit FailingBackend(Backend& inner) : inner_(inner) {}
  bool fail_next = false;  // the next forward() throws Error("device lost")
  std::string_view name() const override { return "failing"; }
  void allocate_kv(const KvCacheShape& shape) override { inner_.allocate_kv(shape); }
  const KvCacheShape& kv_shape() const override { return inner_.kv_shape(); }
  uint64_t kv_block_bytes(int32_t block_size) const override { return inner_.kv_block_bytes(block_size); }
  void copy_blocks(std::span<const BlockCopy> copies) override { inner_.copy_blocks(copies); }
  void forward(const ForwardBatch& batch, std::vector<float>& logits) override {
    if (std::exchange(fail_next, false)) throw Error("device lost");
    inner_.forward(batch, logits);
  }

 private:
  Backend& inner_;
};

}  // namespace pagedchat::test
