#pragma once
// A byte vector for packed weight panels: cache-line aligned, and its new bytes left
// uninitialized.
//
// Aligned: a panel block is a whole number of 64-byte lines (panel_blocks.h), so in an aligned
// buffer every vector load of a kernel stays within one line; glibc puts a large allocation 16
// bytes past a page, and every 64-byte load then spanned two lines. Uninitialized: a buffer of
// panels is written whole, and zero-filling it first would make all its pages resident at once
// (packed_weights.h).

#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>
#include <vector>

namespace pagedchat {

template <typename T>
struct PanelAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlignment{64};
  PanelAllocator() = default;
  template <typename U>
  PanelAllocator(const PanelAllocator<U>&) noexcept {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlignment)); }
  void deallocate(T* p, size_t) noexcept { ::operator delete(p, kAlignment); }
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;  // default-initialized: no write
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  friend bool operator==(const PanelAllocator&, const PanelAllocator&) { return true; }
};

using PanelBytes = std::vector<uint8_t, PanelAllocator<uint8_t>>;

}  // namespace pagedchat
