#include "engine/quantize/hessian.h"

#include <algorithm>

#include "engine/common/error.h"

namespace pagedchat::quantize {

namespace {

constexpr int64_t kMinDenseRows = 16;
constexpr int64_t kTokensPerPass = 8;  // rows added per sweep over a block (each H element loaded once)
constexpr int64_t kRowsPerTask = 16;

std::string replace_part(const std::string& name, const std::string& from, const std::string& to) {
  const size_t at = name.find("." + from + ".");
  if (at == std::string::npos) return name;
  return name.substr(0, at + 1) + to + name.substr(at + 1 + from.size());
}

// Adds rows [0, n) of x (row stride `stride`, the block's columns from `first`) into the upper
// triangle of H's rows [i0, i1).
void add_rows(float* h, int64_t size, int64_t i0, int64_t i1, const float* x, int64_t stride, int64_t first, int64_t n) {
  for (int64_t t0 = 0; t0 < n; t0 += kTokensPerPass) {
    const int64_t m = std::min(kTokensPerPass, n - t0);
    const float* rows[kTokensPerPass];
    for (int64_t k = 0; k < m; ++k) rows[k] = x + (t0 + k) * stride + first;
    for (int64_t i = i0; i < i1; ++i) {
      double a[kTokensPerPass] = {};
      for (int64_t k = 0; k < m; ++k) a[k] = rows[k][i];
      float* hi = h + i * size;
      if (m == kTokensPerPass) {
        for (int64_t j = i; j < size; ++j)
          hi[j] += static_cast<float>(a[0] * rows[0][j] + a[1] * rows[1][j] + a[2] * rows[2][j] + a[3] * rows[3][j] +
                                      a[4] * rows[4][j] + a[5] * rows[5][j] + a[6] * rows[6][j] + a[7] * rows[7][j]);
      } else {
        for (int64_t j = i; j < size; ++j) {
          double s = 0;
          for (int64_t k = 0; k < m; ++k) s += a[k] * rows[k][j];
          hi[j] += static_cast<float>(s);
        }
      }
    }
  }
}

}  // namespace

double HessianBlocks::diagonal(int64_t col) const {
  const auto it = std::upper_bound(starts.begin(), starts.end(), col) - 1;
  const size_t b = static_cast<size_t>(it - starts.begin());
  const int64_t i = col - *it;
  return blocks[b][static_cast<size_t>(i * block_size(b) + i)];
}

size_t HessianBlocks::bytes() const {
  size_t n = 0;
  for (const auto& b : blocks) n += b.size() * sizeof(float);
  return n;
}

std::string hessian_leader(const std::string& tensor) {
  std::string leader = replace_part(tensor, "attn_k", "attn_q");
  leader = replace_part(leader, "attn_v", "attn_q");
  return replace_part(leader, "ffn_up", "ffn_gate");
}

std::vector<int64_t> hessian_block_starts(int64_t cols, int64_t max_block) {
  if (max_block < 256 || max_block % 256 != 0) fail("a Hessian block must be a multiple of 256 columns");
  std::vector<int64_t> starts;
  for (int64_t s = 0; s < cols; s += max_block) starts.push_back(s);
  return starts;
}

const HessianBlocks* HessianSet::find(const std::string& tensor) const {
  const auto it = by_leader.find(hessian_leader(tensor));
  return it == by_leader.end() ? nullptr : &it->second;
}

size_t HessianSet::bytes() const {
  size_t n = 0;
  for (const auto& [name, h] : by_leader) n += h.bytes();
  return n;
}

HessianCollector::HessianCollector(const ModelWeights& weights, int64_t max_block, int num_threads)
    : max_block_(max_block), pool_(num_threads) {
  hessian_block_starts(1, max_block);  // checks max_block
  const GgufFile& f = weights.file;
  for (const auto& t : f.tensors()) {
    if (t.shape.size() != 2 || t.name.compare(0, 4, "blk.") != 0 || hessian_leader(t.name) != t.name) continue;
    const uint8_t* begin = f.tensor_data(t);
    sources_.push_back({begin, begin + t.num_bytes, t.name, t.shape[0]});
  }
  if (sources_.empty()) fail("the model has no layer matrices in a file to measure (random weights?)");
  std::sort(sources_.begin(), sources_.end(), [](const Source& a, const Source& b) { return a.begin < b.begin; });
}

void HessianCollector::observe(const WeightMatrix& w, const float* x, int64_t num_rows) {
  if (num_rows < kMinDenseRows) return;
  auto it = std::upper_bound(sources_.begin(), sources_.end(), w.data,
                             [](const uint8_t* p, const Source& s) { return p < s.begin; });
  if (it == sources_.begin()) return;
  --it;
  if (w.data >= it->end || w.cols != it->cols) return;
  HessianBlocks& h = set_.by_leader[it->name];
  if (h.blocks.empty()) {
    h.cols = it->cols;
    h.starts = hessian_block_starts(h.cols, max_block_);
    for (size_t b = 0; b < h.starts.size(); ++b) {
      const auto size = static_cast<size_t>(h.block_size(b));
      h.blocks.emplace_back(size * size, 0.0f);
    }
  }
  for (size_t b = 0; b < h.starts.size(); ++b) {
    const int64_t size = h.block_size(b);
    float* block = h.blocks[b].data();
    const int64_t tasks = (size + kRowsPerTask - 1) / kRowsPerTask;
    pool_.parallel_for(tasks, [&](int64_t task) {
      add_rows(block, size, task * kRowsPerTask, std::min(size, (task + 1) * kRowsPerTask), x, h.cols, h.starts[b],
               num_rows);
    });
  }
  h.tokens += num_rows;
}

HessianSet HessianCollector::take() {
  for (auto& [name, h] : set_.by_leader)
    for (size_t b = 0; b < h.blocks.size(); ++b) {
      const int64_t size = h.block_size(b);
      float* m = h.blocks[b].data();
      for (int64_t i = 0; i < size; ++i)
        for (int64_t j = 0; j < i; ++j) m[i * size + j] = m[j * size + i];
    }
  return std::move(set_);
}

}  // namespace pagedchat::quantize
