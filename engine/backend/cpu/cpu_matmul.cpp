// Matmuls over the thread pool: activation conversion once per weight type, then row tasks.
#include "engine/backend/cpu/cpu_matmul.h"

#include <algorithm>

#include "engine/backend/cpu/vector_ops.h"
#include "engine/quant/panel/panel.h"
#include "engine/quant/quant.h"

namespace pagedchat::cpu {
namespace {
// Weight rows of one panel_dot call (one panel), whose weights (~6-20 KB) are reused across every
// token of a prefill while in cache.
constexpr int64_t kRowsPerCall = kPanelRows;
constexpr int64_t kTasksPerThread = 8;
constexpr int64_t kStreamingMaxTokens = 4;
}  // namespace

void PreparedActivations::prepare(const float* x, int64_t num_rows, int64_t cols) {
  x_ = x;
  num_rows_ = num_rows;
  cols_ = cols;
  for (auto& c : converted_) {
    c.valid = false;
    for (auto& e : c.expansions) e.valid = false;
  }
}

size_t PreparedActivations::row_bytes(GgmlType weight_type) const { return activation_row_size(weight_type, cols_); }

const uint8_t* PreparedActivations::for_type(GgmlType weight_type, ThreadPool& pool) {
  return converted(weight_type, pool).bytes.data();
}

const uint8_t* PreparedActivations::expanded_for(GgmlType weight_type, ThreadPool& pool) {
  Converted& c = converted(weight_type, pool);
  auto it = std::find_if(c.expansions.begin(), c.expansions.end(),
                         [&](const Expansion& e) { return e.weight_type == weight_type; });
  if (it == c.expansions.end()) {
    c.expansions.push_back({weight_type, {}, false});
    it = c.expansions.end() - 1;
  }
  Expansion& e = *it;
  if (!e.valid) {
    const size_t rb = row_bytes(weight_type), eb = panel_expanded_row_bytes(weight_type, cols_);
    e.bytes.resize(eb * static_cast<size_t>(num_rows_));
    pool.parallel_for(num_rows_, [&](int64_t r) {
      expand_for_panels(weight_type, c.bytes.data() + rb * r, cols_, e.bytes.data() + eb * r);
    });
    e.valid = true;
  }
  return e.bytes.data();
}

PreparedActivations::Converted& PreparedActivations::converted(GgmlType weight_type, ThreadPool& pool) {
  GgmlType act = dot_activation_type(weight_type);
  auto it = std::find_if(converted_.begin(), converted_.end(), [&](const Converted& c) { return c.act_type == act; });
  if (it == converted_.end()) {
    converted_.push_back({act, {}, false, {}});
    it = converted_.end() - 1;
  }
  if (!it->valid) {
    size_t rb = row_bytes(weight_type);
    it->bytes.resize(rb * static_cast<size_t>(num_rows_));
    uint8_t* dst = it->bytes.data();
    const float* x = x_;
    int64_t cols = cols_;
    pool.parallel_for(num_rows_, [&](int64_t r) {
      quantize_activation_row(weight_type, x + r * cols, dst + rb * static_cast<size_t>(r), cols);
    });
    it->valid = true;
  }
  return *it;
}

namespace {
void matmul_float(std::initializer_list<MatmulJob> jobs, PreparedActivations& x, int64_t num_rows, ThreadPool& pool) {
  for (const MatmulJob& j : jobs) {
    const WeightMatrix& w = *j.w;
    pool.parallel_for(w.rows, [&](int64_t r) {
      thread_local std::vector<float> row;
      row.resize(w.cols);
      dequantize_row(w.type, w.row(r), row.data(), w.cols);
      for (int64_t t = 0; t < num_rows; ++t) j.y[t * j.y_stride + r] = dot_f32(row.data(), x.rows_f32() + t * w.cols, w.cols);
    });
  }
}
}  // namespace

void matmul(std::initializer_list<MatmulJob> jobs, PreparedActivations& x, int64_t num_rows, ThreadPool& pool,
            MatmulPrecision precision) {
  if (MatmulObserver* observer = x.observer())
    for (const MatmulJob& j : jobs) observer->observe(*j.w, x.rows_f32(), num_rows);
  if (precision == MatmulPrecision::kFloatActivations) return matmul_float(jobs, x, num_rows, pool);
  struct Plan {
    const MatmulJob* job;
    const uint8_t* act;
    size_t act_row_bytes;
    const uint8_t* expanded;  // null: compact activations
    int64_t first_task;
  };
  // A task is a run of consecutive panels (16 rows each) of one matrix: few enough tasks that
  // handing them out costs little (each is an atomic on a line both cores write), and each a
  // contiguous stretch of weights that the hardware prefetcher follows; enough per thread
  // (kTasksPerThread) that a thread the OS delays leaves little of the matmul to wait for.
  auto panels_of = [](const MatmulJob& j) { return (j.w->rows + kRowsPerCall - 1) / kRowsPerCall; };
  int64_t num_panels = 0;
  for (const MatmulJob& j : jobs) num_panels += panels_of(j);
  const int64_t panels_per_task = std::max<int64_t>(1, num_panels / (int64_t{pool.num_threads()} * kTasksPerThread));
  std::vector<Plan> plans;
  int64_t num_tasks = 0;
  for (const MatmulJob& j : jobs) {
    const uint8_t* expanded =
        j.packed && !j.packed->row_major && panel_expansion_pays(j.w->type, num_rows) ? x.expanded_for(j.w->type, pool)
                                                                                      : nullptr;
    plans.push_back({&j, x.for_type(j.w->type, pool), x.row_bytes(j.w->type), expanded, num_tasks});
    num_tasks += (panels_of(j) + panels_per_task - 1) / panels_per_task;
  }
  // A step of a few tokens reads each weight once, from memory; a long prefill chunk reads a
  // task's rows again for every token, from cache.
  const WeightAccess access = num_rows <= kStreamingMaxTokens ? WeightAccess::kStreaming : WeightAccess::kCached;
  pool.parallel_for(num_tasks, [&](int64_t task) {
    size_t p = plans.size() - 1;
    while (plans[p].first_task > task) --p;
    const Plan& plan = plans[p];
    const WeightMatrix& w = *plan.job->w;
    const int64_t first_row = (task - plan.first_task) * panels_per_task * kRowsPerCall;
    const int64_t end_row = std::min(w.rows, first_row + panels_per_task * kRowsPerCall);
    for (int64_t row0 = first_row; row0 < end_row; row0 += kRowsPerCall) {
      const int64_t rows = std::min(kRowsPerCall, w.rows - row0);
      const PackedMatrix* packed = plan.job->packed;
      if (packed && !packed->row_major) {
        panel_dot(w.type, w.cols, packed->bytes.data(), row0 / kPanelRows, rows, plan.act, plan.act_row_bytes,
                  num_rows, plan.job->y + row0, plan.job->y_stride, plan.expanded);
        continue;
      }
      const uint8_t* first = (packed ? packed->bytes.data() : w.data) + static_cast<size_t>(row0) * w.row_bytes;
      for (int64_t t = 0; t < num_rows; ++t) {
        vec_dot_rows(w.type, w.cols, first, w.row_bytes, rows, plan.act + plan.act_row_bytes * t,
                     plan.job->y + t * plan.job->y_stride + row0, access);
      }
    }
  });
}

}  // namespace pagedchat::cpu
