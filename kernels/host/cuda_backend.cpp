// The CUDA forward pass: embedding, then per layer RMSNorm (fused with the residual add),
// QKV GEMM, bias + RoPE, KV write, paged attention, output GEMM, RMSNorm, gate|up GEMM, SwiGLU,
// down GEMM; then the final norm of the wanted rows and the logits GEMM. One stream orders it
// all; the host waits only for the logits.
#include "kernels/host/cuda_backend.h"

#include <algorithm>
#include <cmath>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "kernels/common/batch_plan.h"
#include "kernels/device/block_copy.h"
#include "kernels/host/cuda_check.h"
#include "kernels/device/decode_attention.h"
#include "kernels/device/dequantize.h"
#include "kernels/host/device_buffer.h"
#include "kernels/host/device_weights.h"
#include "kernels/host/gemm.h"
#include "kernels/common/kv_pool_bytes.h"
#include "kernels/device/kv_write.h"
#include "kernels/device/layer_kernels.h"
#include "kernels/device/prefill_attention.h"
#include "kernels/host/swap_blocks.h"

namespace pagedchat::kernels {

int cuda_device_count() { return cuda::device_count(); }

namespace {

// Grows b to at least `bytes` (its contents are not kept). cudaFree of the old buffer waits for
// the device, so no kernel still reads it.
void ensure(DeviceBuffer& b, size_t bytes) {
  if (b.bytes() < bytes) b = DeviceBuffer(bytes);
}

// The attention kernels read the pool through a const view.
PagedKvView<const uint16_t> const_view(const PagedKvView<uint16_t>& v) {
  PagedKvView<const uint16_t> r;
  r.k = v.k;
  r.v = v.v;
  r.stride_block = v.stride_block;
  r.stride_head = v.stride_head;
  r.stride_slot = v.stride_slot;
  r.num_blocks = v.num_blocks;
  r.num_kv_heads = v.num_kv_heads;
  r.block_size = v.block_size;
  r.head_dim = v.head_dim;
  r.block_tables = v.block_tables;
  r.block_table_stride = v.block_table_stride;
  return r;
}

}  // namespace

struct CudaBackend::Impl {
  const ModelWeights& w;
  CudaBackendConfig config;
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  cudaDeviceProp prop{};
  std::unique_ptr<DeviceWeights> weights;

  KvCacheShape kv_shape;
  DeviceBuffer kv;             // packed_kv_pool_bytes layout: chunk 2l = layer l's K, 2l + 1 its V
  std::unique_ptr<PinnedBuffer> host_kv;
  int32_t num_host_blocks = 0;

  // Scratch for up to scratch_tokens tokens: [tokens, width] each.
  int32_t scratch_tokens = 0;
  DeviceBuffer x, xn, qkv, q, k, v, attn, proj, gu, cos_sin;
  int32_t logits_rows = 0;
  DeviceBuffer logits;
  std::unique_ptr<PinnedBuffer> logits_host;
  DeviceBuffer meta, workspace, pairs;

  Impl(const ModelWeights& weights_, CudaBackendConfig config_) : w(weights_), config(config_) {}
  ~Impl() {
    if (cublas) (void)cublasDestroy(cublas);
    if (stream) (void)cudaStreamDestroy(stream);
  }

  int64_t chunk_block_bytes() const {  // one block of one (layer, K or V) chunk
    return static_cast<int64_t>(kv_shape.block_size) * kv_shape.num_kv_heads * kv_shape.head_dim * 2;
  }
  KvPoolBytes device_pool() const {
    return packed_kv_pool_bytes(kv.get<uint8_t>(), kv_shape.num_layers, kv_shape.num_blocks, chunk_block_bytes());
  }
  KvPoolBytes host_pool() const {
    if (!host_kv) fail("the CUDA backend has no host KV pool (allocate_host_kv first)");
    return packed_kv_pool_bytes(host_kv->get<uint8_t>(), kv_shape.num_layers, num_host_blocks, chunk_block_bytes());
  }
  PagedKvView<uint16_t> layer_view(int l, const int32_t* block_tables, int32_t table_stride) const {
    PagedKvView<uint16_t> view = hnd_view<uint16_t>(kv_shape.num_blocks, kv_shape.num_kv_heads, kv_shape.block_size, kv_shape.head_dim);
    auto* base = kv.get<uint16_t>();
    view.k = base + (2ll * l) * view.pool_elements();
    view.v = base + (2ll * l + 1) * view.pool_elements();
    view.block_tables = block_tables;
    view.block_table_stride = table_stride;
    return view;
  }

  void ensure_scratch(int32_t tokens) {
    if (tokens <= scratch_tokens) return;
    const ModelConfig& c = w.config;
    const size_t t = static_cast<size_t>(tokens), f = sizeof(float);
    ensure(x, t * c.dim * f);
    ensure(xn, t * std::max({c.dim, c.q_dim(), c.ffn_dim}) * 2);
    ensure(qkv, t * (c.q_dim() + 2 * c.kv_dim()) * f);
    ensure(q, t * c.q_dim() * f);
    ensure(k, t * c.kv_dim() * f);
    ensure(v, t * c.kv_dim() * f);
    ensure(attn, t * c.q_dim() * f);
    ensure(proj, t * c.dim * f);
    ensure(gu, t * 2 * c.ffn_dim * f);
    ensure(cos_sin, t * c.rope_dim * f);
    scratch_tokens = tokens;
  }

  void ensure_logits(int32_t rows) {
    if (rows <= logits_rows) return;
    const size_t bytes = static_cast<size_t>(rows) * w.config.vocab_size * sizeof(float);
    ensure(logits, bytes);
    logits_host = std::make_unique<PinnedBuffer>(bytes);
    logits_rows = rows;
  }

  void linear(const uint16_t* in, const uint16_t* weight, float* out, int64_t n, int64_t in_dim, int64_t out_dim) {
    kernels::linear(cublas, in, weight, out, n, in_dim, out_dim, config.dtype);
  }

  void layer(int l, const BatchPlan& p, const int32_t* meta_base, const DecodePlan& plan);
};

CudaBackend::CudaBackend(const ModelWeights& weights, CudaBackendConfig config)
    : impl_(std::make_unique<Impl>(weights, config)) {
  Impl& m = *impl_;
  const ModelConfig& c = weights.config;
  // Its kernels are Llama's layer: QK-norm, post-block norms, GeGLU, scaled embeddings, sliding
  // windows and experts (Qwen 3, Gemma 3, Qwen 3 MoE) are the CPU backend's for now.
  if (!c.is_plain_llama())
    fail("the CUDA backend runs llama, mistral and qwen2 layers; %s (%s) runs on the CPU backend (--backend cpu)",
         c.architecture.c_str(), c.is_moe() ? "experts" : c.no_rope_layer_step ? "layers without RoPE" :
                                 c.sliding_window > 0 ? "QK-norm, sliding-window attention" : "QK-norm");
  // The device dequantizes at upload what dequantize.cu has kernels for; the rest is said here,
  // before any device memory is taken (Q2_K, Q3_K, IQ4_NL, IQ4_XS and MXFP4 run on the CPU).
  auto check_type = [](const WeightMatrix& m, const char* what) {
    switch (m.type) {
      case GgmlType::F32: case GgmlType::F16: case GgmlType::BF16: case GgmlType::Q4_0: case GgmlType::Q4_1:
      case GgmlType::Q5_0: case GgmlType::Q5_1: case GgmlType::Q8_0: case GgmlType::Q4_K: case GgmlType::Q5_K:
      case GgmlType::Q6_K:
        return;
      default:
        fail("the CUDA backend does not read %s weights yet (%s); they run on the CPU backend (--backend cpu)",
             std::string(ggml_type_name(static_cast<uint32_t>(m.type))).c_str(), what);
    }
  };
  check_type(weights.token_embedding, "token_embd");
  check_type(weights.output, "output");
  for (const LayerWeights& L : weights.layers)
    for (const WeightMatrix* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) check_type(*m, "a layer's matrices");
  if (cuda::device_count() <= config.device) fail("no CUDA device %d (found %d)", config.device, cuda::device_count());
  if (!attention_head_dim_supported(c.head_dim))
    fail("the CUDA backend supports head sizes 64, 128 and 256, not %d", c.head_dim);
  PC_CUDA_CHECK(cudaSetDevice(config.device));
  PC_CUDA_CHECK(cudaGetDeviceProperties(&m.prop, config.device));
  PC_CUDA_CHECK(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking));
  PC_CUDA_CHECK(cublasCreate(&m.cublas));
  PC_CUDA_CHECK(cublasSetStream(m.cublas, m.stream));
  m.weights = std::make_unique<DeviceWeights>(weights, config.dtype, m.stream);
  m.ensure_scratch(std::max(config.max_batch_tokens, 1));
  m.ensure_logits(std::min(std::max(config.max_batch_tokens, 1), 256));
}

CudaBackend::~CudaBackend() = default;

const KvCacheShape& CudaBackend::kv_shape() const { return impl_->kv_shape; }

uint64_t CudaBackend::kv_block_bytes(int32_t block_size) const {
  const ModelConfig& c = impl_->w.config;
  return KvCacheShape{c.num_layers, c.num_kv_heads, c.head_dim, 0, block_size}.block_bytes(2);
}

void CudaBackend::allocate_kv(const KvCacheShape& shape) {
  Impl& m = *impl_;
  const ModelConfig& c = m.w.config;
  if (shape.num_layers != c.num_layers || shape.num_kv_heads != c.num_kv_heads || shape.head_dim != c.head_dim)
    fail("KV shape does not match the model");
  if (shape.num_blocks <= 0 || shape.block_size <= 0) fail("a KV pool of %d blocks of %d tokens", shape.num_blocks, shape.block_size);
  m.kv = DeviceBuffer();  // free the old pool first: the new one may need its memory
  m.host_kv.reset();
  m.num_host_blocks = 0;
  m.kv_shape = shape;
  try {
    m.kv = DeviceBuffer(shape.block_bytes(2) * static_cast<size_t>(shape.num_blocks));
  } catch (const Error& e) {
    m.kv_shape = {};
    fail("the KV pool (%d blocks, %.2f GiB) does not fit on the GPU: %s", shape.num_blocks,
         shape.block_bytes(2) * shape.num_blocks / 1073741824.0, e.what());
  }
}

int32_t CudaBackend::kv_blocks_that_fit(int32_t block_size, double fraction) const {
  const ModelConfig& c = impl_->w.config;
  size_t free = 0, total = 0;
  PC_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  const KvCacheShape shape{c.num_layers, c.num_kv_heads, c.head_dim, 0, block_size};
  const double blocks = std::floor(fraction * static_cast<double>(free) / static_cast<double>(shape.block_bytes(2)));
  return static_cast<int32_t>(std::clamp(blocks, 0.0, 2.0e9));
}

void CudaBackend::copy_blocks(std::span<const BlockCopy> copies) {
  Impl& m = *impl_;
  if (copies.empty()) return;
  ensure(m.pairs, copies.size_bytes());
  // Pageable source: the call returns once the pairs are staged, so `copies` may go.
  PC_CUDA_CHECK(cudaMemcpyAsync(m.pairs.get(), copies.data(), copies.size_bytes(), cudaMemcpyHostToDevice, m.stream));
  kernels::copy_blocks(m.device_pool(), m.pairs.get<BlockCopy>(), static_cast<int32_t>(copies.size()), m.stream);
}

void CudaBackend::allocate_host_kv(int num_blocks) {
  Impl& m = *impl_;
  PC_CUDA_CHECK(cudaStreamSynchronize(m.stream));  // no swap still reads the old pool
  m.host_kv.reset();
  m.num_host_blocks = 0;
  if (num_blocks <= 0) return;
  KvCacheShape shape = m.kv_shape;
  shape.num_blocks = num_blocks;
  m.host_kv = std::make_unique<PinnedBuffer>(shape.block_bytes(2) * static_cast<size_t>(num_blocks));
  m.num_host_blocks = num_blocks;
}

// Both directions are ordered on the one stream with the forward passes, so a block swapped
// out is read before anything overwrites it, and one swapped in is there before attention reads it.
void CudaBackend::swap_out(std::span<const BlockCopy> pairs) {
  swap_blocks(impl_->device_pool(), impl_->host_pool(), pairs, impl_->stream);
}

void CudaBackend::swap_in(std::span<const BlockCopy> pairs) {
  swap_blocks(impl_->host_pool(), impl_->device_pool(), pairs, impl_->stream);
}

void CudaBackend::forward(const ForwardBatch& batch, std::vector<float>& logits) {
  Impl& m = *impl_;
  const ModelConfig& c = m.w.config;
  if (m.kv_shape.num_blocks == 0) fail("forward before allocate_kv");
  if (batch.num_tokens() == 0) {
    logits.clear();
    return;
  }
  const BatchPlan p = plan_batch(batch);
  m.ensure_scratch(p.num_tokens);
  m.ensure_logits(std::max(p.num_logits, 1));
  ensure(m.meta, static_cast<size_t>(p.total) * sizeof(int32_t));
  PC_CUDA_CHECK(cudaMemcpyAsync(m.meta.get(), p.packed.data(), p.packed.size() * sizeof(int32_t), cudaMemcpyHostToDevice, m.stream));
  const int32_t* meta = m.meta.get<int32_t>();
  const int32_t n = p.num_tokens;

  embedding_lookup(m.weights->embedding, m.config.dtype, meta + p.token_ids, n, c.dim, m.x.get<float>(), m.stream);
  // RoPE angles depend on the position only: once per step, not once per layer.
  rope_table(meta + p.positions, n, m.weights->rope_inv_freq, c.rope_dim / 2, m.cos_sin.get<float>(), m.stream);
  DecodePlan plan;
  if (p.decode_only) {
    plan = plan_decode(p.num_seqs, c.num_heads, c.num_kv_heads, c.head_dim, p.max_seq_len, m.prop.multiProcessorCount);
    ensure(m.workspace, static_cast<size_t>(plan.workspace_bytes));
  }
  for (int l = 0; l < c.num_layers; ++l) m.layer(l, p, meta, plan);

  // The last layer's residual add and the final norm, only for the rows whose logits are wanted.
  logits.resize(static_cast<size_t>(p.num_logits) * c.vocab_size);
  if (p.num_logits == 0) return;
  uint16_t* xn = m.xn.get<uint16_t>();
  add_rms_norm(m.x.get<float>(), m.proj.get<float>(), m.weights->output_norm, meta + p.logits_indices, p.num_logits, c.dim,
               c.rms_eps, xn, m.config.dtype, m.stream);
  m.linear(xn, m.weights->output, m.logits.get<float>(), p.num_logits, c.dim, c.vocab_size);
  PC_CUDA_CHECK(cudaMemcpyAsync(m.logits_host->get(), m.logits.get(), logits.size() * sizeof(float), cudaMemcpyDeviceToHost, m.stream));
  PC_CUDA_CHECK(cudaStreamSynchronize(m.stream));
  std::copy_n(m.logits_host->get<float>(), logits.size(), logits.data());
}

void CudaBackend::Impl::layer(int l, const BatchPlan& p, const int32_t* meta_base, const DecodePlan& plan) {
  const ModelConfig& c = w.config;
  const DeviceLayer& L = weights->layers[l];
  const int32_t n = p.num_tokens;
  const KvDtype dtype = config.dtype;
  float* xf = x.get<float>();
  uint16_t* xh = xn.get<uint16_t>();

  // Attention block. The previous layer's FFN output joins the residual stream here.
  add_rms_norm(xf, l == 0 ? nullptr : proj.get<float>(), L.attn_norm, nullptr, n, c.dim, c.rms_eps, xh, dtype, stream);
  linear(xh, L.wqkv, qkv.get<float>(), n, c.dim, c.q_dim() + 2 * c.kv_dim());
  const QkvShape shape{c.num_heads, c.num_kv_heads, c.head_dim, c.rope_dim, c.rope_layout == RopeLayout::kNeox};
  split_qkv_rope(qkv.get<float>(), L.bqkv, cos_sin.get<float>(), n, shape, q.get<float>(), k.get<float>(), v.get<float>(), stream);

  const PagedKvView<uint16_t> view = layer_view(l, meta_base + p.block_tables, p.block_table_stride);
  KvWriteRows rows_kv;
  rows_kv.k = k.get<float>();
  rows_kv.v = v.get<float>();
  rows_kv.slot_mapping = reinterpret_cast<const int64_t*>(meta_base + p.slot_mapping);
  rows_kv.num_tokens = n;
  kv_write(view, dtype, rows_kv, stream);

  AttentionRows rows;
  rows.q = q.get<float>();
  rows.out = attn.get<float>();
  rows.cu_seqlens_q = meta_base + p.cu_seqlens_q;
  rows.seq_lens = meta_base + p.seq_lens_at;
  rows.num_seqs = p.num_seqs;
  rows.num_heads = c.num_heads;
  rows.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  rows.max_q_len = p.max_q_len;
  rows.max_seq_len = p.max_seq_len;
  const PagedKvView<const uint16_t> read = const_view(view);
  if (p.decode_only)
    decode_attention(read, dtype, rows, plan, workspace.get(), stream);
  else
    prefill_attention(read, dtype, rows, stream);
  to_16bit(attn.get<float>(), static_cast<int64_t>(n) * c.q_dim(), xh, dtype, stream);
  linear(xh, L.wo, proj.get<float>(), n, c.q_dim(), c.dim);

  // FFN block.
  add_rms_norm(xf, proj.get<float>(), L.ffn_norm, nullptr, n, c.dim, c.rms_eps, xh, dtype, stream);
  linear(xh, L.w_gate_up, gu.get<float>(), n, c.dim, 2 * c.ffn_dim);
  swiglu(gu.get<float>(), n, c.ffn_dim, xh, dtype, stream);
  linear(xh, L.w_down, proj.get<float>(), n, c.ffn_dim, c.dim);
}

std::string CudaBackend::device_name() const { return impl_->prop.name; }
uint64_t CudaBackend::weight_bytes() const { return impl_->weights->bytes(); }
uint64_t CudaBackend::matrix_bytes_per_token() const { return impl_->weights->matrix_bytes_per_token(); }
void CudaBackend::synchronize() { PC_CUDA_CHECK(cudaStreamSynchronize(impl_->stream)); }

}  // namespace pagedchat::kernels
