#pragma once
// Online softmax (Milakov & Gimelshein 2018), the running state that lets attention read each
// key and value once: a running max m of the logits seen, the sum l of exp(logit - m), and an
// accumulator acc = sum of exp(logit - m) * value. A new logit or a whole partial state (one
// split of the context, for the split-K reduce) folds in by rescaling to the larger max.
// PC_HOST_DEVICE: the CUDA kernels and the CPU tests use these very functions.
//
// The state holds only (m, l): a kernel keeps its slice of acc in registers and applies the
// returned factors itself; `accumulate` / `merge_into` below do it for an acc in memory.
// Masked logits are -inf. A row that has seen only -inf keeps m = -inf, l = 0, acc = 0, and
// finalizes to zeros, never NaN (exp(-inf - -inf) is never computed).

#include <cmath>

#include "engine/common/float16.h"  // PC_HOST_DEVICE

namespace pagedchat::kernels {

struct SoftmaxScale {
  float old_scale;  // multiply the accumulator (and l) so far by this
  float new_scale;  // ... and add this times the new value (or the other state's acc)
};

struct SoftmaxState {
  float m = -INFINITY;  // running max of logits
  float l = 0.0f;       // sum of exp(logit - m)

  // Folds in one logit; acc = acc * old_scale + new_scale * value.
  PC_HOST_DEVICE SoftmaxScale update(float logit) {
    const float m_new = fmaxf(m, logit);
    if (m_new == -INFINITY) return {1.0f, 0.0f};  // everything so far masked
    const SoftmaxScale s{expf(m - m_new), expf(logit - m_new)};
    l = l * s.old_scale + s.new_scale;
    m = m_new;
    return s;
  }

  // Folds in another partial state (a split of the context, or another lane's tokens);
  // acc = acc * old_scale + new_scale * other_acc. Merging with an empty state is exact.
  PC_HOST_DEVICE SoftmaxScale merge(const SoftmaxState& other) {
    const float m_new = fmaxf(m, other.m);
    if (m_new == -INFINITY) return {1.0f, 0.0f};
    const SoftmaxScale s{m == m_new ? 1.0f : expf(m - m_new), other.m == m_new ? 1.0f : expf(other.m - m_new)};
    l = l * s.old_scale + other.l * s.new_scale;
    m = m_new;
    return s;
  }

  // The factor that turns acc into the softmax-weighted mean: 1/l, or 0 for an all-masked row.
  PC_HOST_DEVICE float inv_sum() const { return l > 0.0f ? 1.0f / l : 0.0f; }
};

// acc[0, n) of a state in memory: fold in one (logit, value row).
template <typename Load>
PC_HOST_DEVICE inline void accumulate(SoftmaxState& st, float* acc, float logit, const Load& value, int n) {
  const SoftmaxScale s = st.update(logit);
  for (int i = 0; i < n; ++i) acc[i] = acc[i] * s.old_scale + s.new_scale * value(i);
}

// Merge (other, other_acc) into (st, acc).
PC_HOST_DEVICE inline void merge_into(SoftmaxState& st, float* acc, const SoftmaxState& other, const float* other_acc, int n) {
  const SoftmaxScale s = st.merge(other);
  for (int i = 0; i < n; ++i) acc[i] = acc[i] * s.old_scale + s.new_scale * other_acc[i];
}

}  // namespace pagedchat::kernels
