#pragma once
// Y = X * W^T for quantized weights on the CPU thread pool. Activations are converted once
// into the weight type's dot format; then a matrix with a packed copy is multiplied panel by
// panel (quant/panel.h), any other one output element by output element with vec_dot_rows.
// Either way a row of Y has the same bits whatever other rows X holds.

#include <cstdint>
#include <vector>

#include "engine/backend/cpu/packed_weights.h"
#include "engine/common/thread_pool.h"
#include "engine/model/model_weights.h"

namespace pagedchat::cpu {

// Sees every matmul's f32 input before it is multiplied: an importance matrix is the sum of its
// squares per input column (engine/quantize/importance_collector.h). Called on the thread that
// runs the forward pass, once per matrix per matmul.
class MatmulObserver {
 public:
  virtual ~MatmulObserver() = default;
  // x: [num_rows, w.cols], the rows multiplied by w.
  virtual void observe(const WeightMatrix& w, const float* x, int64_t num_rows) = 0;
};

// Activation rows prepared for the dot products of one or more weight types.
class PreparedActivations {
 public:
  // Optional; kept across prepare() calls.
  void set_observer(MatmulObserver* observer) { observer_ = observer; }
  MatmulObserver* observer() const { return observer_; }
  // x: [num_rows, cols] f32, kept by pointer until the next prepare().
  void prepare(const float* x, int64_t num_rows, int64_t cols);
  const float* rows_f32() const { return x_; }
  // Rows converted for `weight_type` (converted on first use, in parallel).
  const uint8_t* for_type(GgmlType weight_type, ThreadPool& pool);
  size_t row_bytes(GgmlType weight_type) const;
  // Those rows expanded for the panels of `weight_type` (quant/panel.h), on first use. Kept per
  // weight type: types that share an activation layout (Q8_0 and Q5_0, Q4_1 and Q5_1) expand it
  // differently.
  const uint8_t* expanded_for(GgmlType weight_type, ThreadPool& pool);

 private:
  const float* x_ = nullptr;
  int64_t num_rows_ = 0, cols_ = 0;
  MatmulObserver* observer_ = nullptr;
  struct Expansion {
    GgmlType weight_type;
    std::vector<uint8_t> bytes;
    bool valid = false;
  };
  struct Converted {
    GgmlType act_type;
    std::vector<uint8_t> bytes;
    bool valid = false;
    std::vector<Expansion> expansions;  // moving one keeps its bytes where they are
  };
  Converted& converted(GgmlType weight_type, ThreadPool& pool);
  std::vector<Converted> converted_;
};

struct MatmulJob {
  const WeightMatrix* w;
  float* y;          // [num_rows, y_stride]; the job writes columns [0, w->rows)
  int64_t y_stride;
  const PackedMatrix* packed = nullptr;  // the backend's copy of w (panels or rows), when it has one
};

// How activations meet the weights: converted to the weight type's 8-bit dot format (fast, as
// llama.cpp does), or kept in f32 against dequantized weight rows (slow; isolates the model's
// math from activation quantization, for tests against a float reference).
enum class MatmulPrecision { kQuantizedActivations, kFloatActivations };

// Runs several matmuls that share the same input X in one parallel region (e.g. Q, K and V).
void matmul(std::initializer_list<MatmulJob> jobs, PreparedActivations& x, int64_t num_rows, ThreadPool& pool,
            MatmulPrecision precision = MatmulPrecision::kQuantizedActivations);

}  // namespace pagedchat::cpu
