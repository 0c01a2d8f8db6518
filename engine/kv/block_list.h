#pragma once
// An intrusive doubly linked list of block ids, links stored per id: O(1) push_back,
// pop_front and removal of any member (a cached block revived by a prefix hit leaves the LRU
// list from its middle). The block pool keeps its free list and its cached list in two of them.

#include <cassert>
#include <cstdint>
#include <vector>

namespace pagedchat {

class BlockList {
 public:
  static constexpr int32_t kNone = -1;

  explicit BlockList(int32_t capacity)
      : prev_(capacity, kNone), next_(capacity, kNone), member_(capacity, 0) {}

  bool empty() const { return size_ == 0; }
  int32_t size() const { return size_; }
  int32_t front() const { return head_; }  // kNone when empty
  bool contains(int32_t id) const { return member_[id] != 0; }

  void push_back(int32_t id) {
    assert(!contains(id));
    prev_[id] = tail_;
    next_[id] = kNone;
    if (tail_ != kNone) next_[tail_] = id;
    else head_ = id;
    tail_ = id;
    member_[id] = 1;
    ++size_;
  }

  void remove(int32_t id) {
    assert(contains(id));
    if (prev_[id] != kNone) next_[prev_[id]] = next_[id];
    else head_ = next_[id];
    if (next_[id] != kNone) prev_[next_[id]] = prev_[id];
    else tail_ = prev_[id];
    prev_[id] = next_[id] = kNone;
    member_[id] = 0;
    --size_;
  }

  int32_t pop_front() {
    int32_t id = head_;
    remove(id);
    return id;
  }

  // Front (oldest) to back (newest).
  template <typename F>
  void for_each(F&& f) const {
    for (int32_t id = head_; id != kNone; id = next_[id]) f(id);
  }

 private:
  std::vector<int32_t> prev_, next_;  // [capacity]
  std::vector<uint8_t> member_;       // [capacity]
  int32_t head_ = kNone, tail_ = kNone, size_ = 0;
};

}  // namespace pagedchat
