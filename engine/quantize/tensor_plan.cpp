#include "engine/quantize/tensor_plan.h"

#include <algorithm>
#include <cstdio>
#include <string_view>

#include "engine/common/error.h"
#include "engine/quantize/quantize_rows.h"

namespace pagedchat::quantize {

namespace {

enum class Category {
  token_embd, attention_q, attention_v, attention_k, attention_qkv, attention_kv_b, attention_output,
  ffn_up, ffn_gate, ffn_down, output, other
};

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

// By name, in llama.cpp's order of tests (a fused attn_qkv is not also an attn_v).
Category category_of(const std::string& name) {
  if (name == "output.weight") return Category::output;
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") return Category::token_embd;
  if (contains(name, "attn_qkv.weight")) return Category::attention_qkv;
  if (contains(name, "attn_kv_b.weight")) return Category::attention_kv_b;
  if (contains(name, "attn_v.weight")) return Category::attention_v;
  if (contains(name, "attn_k.weight")) return Category::attention_k;
  if (contains(name, "attn_q.weight")) return Category::attention_q;
  if (contains(name, "attn_output.weight")) return Category::attention_output;
  if (contains(name, "ffn_up")) return Category::ffn_up;
  if (contains(name, "ffn_gate")) return Category::ffn_gate;
  if (contains(name, "ffn_down")) return Category::ffn_down;
  return Category::other;
}

// The value projection in any of its forms gets the value projection's rules.
bool is_value_projection(Category c) {
  return c == Category::attention_v || c == Category::attention_qkv || c == Category::attention_kv_b;
}

// The layer's tensors that benefit most from more bits: the first and last eighths of the
// layers and every third one between.
bool use_more_bits(int layer, int num_layers) {
  return layer < num_layers / 8 || layer >= 7 * num_layers / 8 || (layer - num_layers / 8) % 3 == 2;
}

int layer_of(const std::string& name) {
  int layer = -1;
  std::sscanf(name.c_str(), "blk.%d.", &layer);
  return layer;
}

// What the rules read from the header.
struct ModelFacts {
  std::string arch;
  int num_layers = 0;
  int gqa = 0;          // query heads per KV head (0: unknown)
  int num_experts = 0;
  bool is_70b = false;  // llama.cpp's 70B class: more bits for its small shared V projection
  bool tied_embeddings = true;
  int num_value_projections = 0;
};

int first_uint(const GgufFile& f, const std::string& key, int fallback) {
  const GgufValue* v = f.find(key);
  if (!v) return fallback;
  if (v->is_integer()) return static_cast<int>(v->u);
  const auto values = f.get_int_array(key);  // per-layer arrays: layer 0's, as llama.cpp's n_gqa()
  return values.empty() ? fallback : static_cast<int>(values[0]);
}

ModelFacts read_facts(const GgufFile& source) {
  ModelFacts m;
  m.arch = source.get_string("general.architecture");
  m.num_layers = static_cast<int>(source.get_uint(m.arch + ".block_count"));
  const int heads = first_uint(source, m.arch + ".attention.head_count", 0);
  const int kv_heads = first_uint(source, m.arch + ".attention.head_count_kv", heads);
  m.gqa = kv_heads > 0 ? heads / kv_heads : 0;
  m.num_experts = first_uint(source, m.arch + ".expert_count", 0);
  m.is_70b = m.num_layers == 80 && ((m.arch == "llama" && heads != kv_heads) || m.arch == "qwen2" ||
                                    m.arch == "olmo" || m.arch == "deci");
  for (const auto& t : source.tensors()) {
    if (t.name == "output.weight") m.tied_embeddings = false;
    if (is_value_projection(category_of(t.name))) ++m.num_value_projections;
  }
  return m;
}

// Counters the rules advance as tensors are visited in order (llama.cpp's quantize_state_impl).
struct Counters {
  int value_projection = 0;
  int ffn_down = 0, ffn_gate = 0, ffn_up = 0;
};

int layer_for_rule(const ModelFacts& m, int counter, const std::string& name) {
  if (m.num_experts <= 1) return counter;
  // Expert tensors need not come in layer order: the name says which layer.
  const int layer = layer_of(name);
  if (layer < 0 || layer >= m.num_layers) fail("cannot tell the layer of tensor '%s'", name.c_str());
  return layer;
}

// The value projection (any of its forms) under each mix; advances its counter.
GgmlType value_projection_type(const ModelFacts& m, Counters& c, FileType ft, GgmlType type) {
  const bool iq4 = ft == FileType::IQ4_NL || ft == FileType::IQ4_XS;
  if (ft == FileType::Q2_K) type = m.gqa >= 4 ? GgmlType::Q4_K : GgmlType::Q3_K;
  else if (ft == FileType::Q2_K_S && m.gqa >= 4) type = GgmlType::Q4_K;
  else if (ft == FileType::Q3_K_M) type = c.value_projection < 2 ? GgmlType::Q5_K : GgmlType::Q4_K;
  else if (ft == FileType::Q3_K_L) type = GgmlType::Q5_K;
  else if (iq4 && m.gqa >= 4) type = GgmlType::Q5_K;
  else if ((ft == FileType::Q4_K_M || ft == FileType::Q5_K_M) && use_more_bits(c.value_projection, m.num_value_projections))
    type = GgmlType::Q6_K;
  else if (ft == FileType::Q4_K_S && c.value_projection < 4) type = GgmlType::Q5_K;
  if (m.is_70b && (type == GgmlType::Q3_K || type == GgmlType::Q4_K)) type = GgmlType::Q5_K;
  if (m.num_experts == 8) type = GgmlType::Q8_0;
  ++c.value_projection;
  return type;
}

// The FFN down projection of `layer` under each mix.
GgmlType ffn_down_type(const ModelFacts& m, FileType ft, GgmlType type, int layer, bool has_importance) {
  const int n = m.num_layers;
  const bool falcon = m.arch == "falcon";
  const bool iq4 = ft == FileType::IQ4_NL || ft == FileType::IQ4_XS;
  if (ft == FileType::Q2_K) return GgmlType::Q3_K;
  if (ft == FileType::Q2_K_S) return layer < n / 8 ? GgmlType::Q4_K : type;
  if (ft == FileType::Q3_K_M)
    return layer < n / 16 ? GgmlType::Q5_K : (!falcon || use_more_bits(layer, n)) ? GgmlType::Q4_K : GgmlType::Q3_K;
  if (ft == FileType::Q3_K_L) return falcon ? GgmlType::Q4_K : GgmlType::Q5_K;
  if (ft == FileType::Q4_K_M) {
    if (falcon) return layer < n / 16 ? GgmlType::Q6_K : use_more_bits(layer, n) ? GgmlType::Q5_K : GgmlType::Q4_K;
    return use_more_bits(layer, n) ? GgmlType::Q6_K : type;
  }
  if (layer < n / 8 && iq4 && !has_importance) return GgmlType::Q5_K;
  if (ft == FileType::Q5_K_M) return use_more_bits(layer, n) ? GgmlType::Q6_K : type;
  if (ft == FileType::Q4_K_S && !falcon && layer < n / 8) return GgmlType::Q5_K;
  if ((ft == FileType::Q4_0 || ft == FileType::Q5_0) && has_importance && layer < n / 8)
    // Q4_0/Q5_0 go wrong in the first FFN down projections even with an importance matrix.
    return ft == FileType::Q4_0 ? GgmlType::Q4_1 : GgmlType::Q5_1;
  return type;
}

// The attention output projection under each mix.
GgmlType attention_output_type(const ModelFacts& m, FileType ft, GgmlType type) {
  const bool iq4 = ft == FileType::IQ4_NL || ft == FileType::IQ4_XS;
  if (m.arch == "falcon") return ft == FileType::Q3_K_L ? GgmlType::Q4_K : type;
  if (m.num_experts == 8)
    return ft == FileType::Q2_K || ft == FileType::Q3_K_S || ft == FileType::Q3_K_M || ft == FileType::Q4_K_S ||
                   ft == FileType::Q4_K_M || iq4
               ? GgmlType::Q5_K
               : type;
  if (ft == FileType::Q2_K) return GgmlType::Q3_K;
  if (ft == FileType::Q3_K_M) return GgmlType::Q4_K;
  if (ft == FileType::Q3_K_L) return GgmlType::Q5_K;
  return type;
}

// llama_tensor_get_type_impl, for the file types we write.
GgmlType mix_rule(const ModelFacts& m, Counters& c, FileType ft, GgmlType type, const GgufTensorInfo& t,
                  bool has_importance) {
  const Category cat = category_of(t.name);
  if (cat == Category::output || (m.tied_embeddings && cat == Category::token_embd)) {
    if (ft == FileType::MXFP4_MOE || m.arch == "falcon" || t.shape[0] % ggml_type_traits(type).block_size != 0)
      return GgmlType::Q8_0;
    return type != GgmlType::Q8_0 ? GgmlType::Q6_K : type;
  }
  // MXFP4_MOE: the experts (3-D tensors) in MXFP4, everything else in Q8_0.
  if (ft == FileType::MXFP4_MOE) return t.shape.size() > 2 && t.shape[2] > 1 ? GgmlType::MXFP4 : GgmlType::Q8_0;
  switch (cat) {
    case Category::token_embd: case Category::attention_q: case Category::other: return type;
    case Category::attention_v: case Category::attention_qkv: case Category::attention_kv_b:
      return value_projection_type(m, c, ft, type);
    case Category::attention_k: return m.num_experts == 8 ? GgmlType::Q8_0 : type;
    case Category::ffn_down: {
      const int layer = layer_for_rule(m, c.ffn_down, t.name);
      ++c.ffn_down;
      return ffn_down_type(m, ft, type, layer, has_importance);
    }
    case Category::attention_output: return attention_output_type(m, ft, type);
    case Category::ffn_gate:
      layer_for_rule(m, c.ffn_gate++, t.name);  // (checks the name, as llama.cpp does)
      return type;
    case Category::ffn_up:
      layer_for_rule(m, c.ffn_up++, t.name);
      return type;
    case Category::output: return type;  // (handled above)
  }
  return type;
}

// A row length the type's blocks do not divide: the nearest type of 32-element blocks, else F16.
GgmlType fit_row_length(GgmlType type, int64_t row, bool* fell_back) {
  if (row % ggml_type_traits(type).block_size == 0) return type;
  *fell_back = true;
  GgmlType smaller = type;
  switch (type) {
    case GgmlType::Q2_K: case GgmlType::Q3_K: smaller = GgmlType::Q4_0; break;
    case GgmlType::Q4_K: smaller = GgmlType::Q5_0; break;
    case GgmlType::Q5_K: smaller = GgmlType::Q5_1; break;
    case GgmlType::Q6_K: smaller = GgmlType::Q8_0; break;
    case GgmlType::IQ4_XS: smaller = GgmlType::IQ4_NL; break;
    default: break;
  }
  return row % ggml_type_traits(smaller).block_size == 0 ? smaller : GgmlType::F16;
}

// Name parts of tensors llama-quantize never quantizes (besides norms and vectors).
constexpr std::string_view kKeptAsIs[] = {
    "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel", "per_layer_model_proj",
    "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight", "indexer.q_proj.weight",
    "time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight", "time_mix_w2.weight",
    "time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight", "time_mix_a0.weight",
    "time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight", "time_mix_g2.weight",
    "time_mix_decay_w1.weight", "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight",
    "attn_rel_b.weight", ".position_embd", "sam.pos_embd", "sam.neck.", "sam.net_", ".rel_pos",
    ".patch_embd", ".patch_merger", "a.rvq.codebook", "mm.a.code_embd", "_norm.weight",
};

}  // namespace

bool may_quantize(const std::string& name, const std::vector<int64_t>& shape) {
  // ggml counts dimensions up to the last one above 1: a [n, 1] tensor is a vector.
  size_t dims = shape.size();
  while (dims > 1 && shape[dims - 1] == 1) --dims;
  if (dims < 2) return false;
  if (name.size() < 6 || name.compare(name.size() - 6, 6, "weight") != 0) return false;
  if (name == "position_embd.weight" || name == "token_types.weight") return false;
  for (std::string_view part : kKeptAsIs)
    if (contains(name, part)) return false;
  return true;
}

std::vector<PlannedTensor> plan_tensors(const GgufFile& source, FileType file_type, const PlanOptions& options) {
  const ModelFacts facts = read_facts(source);
  std::vector<const GgufTensorInfo*> order;
  for (const auto& t : source.tensors()) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(), [](const GgufTensorInfo* a, const GgufTensorInfo* b) {
    const int la = layer_of(a->name), lb = layer_of(b->name);
    return la != lb ? la < lb : a->name < b->name;
  });
  const GgmlType default_type = file_type_info(file_type).default_type;
  Counters counters;
  std::vector<PlannedTensor> plan;
  plan.reserve(order.size());
  for (const GgufTensorInfo* t : order) {
    PlannedTensor p;
    p.source = t;
    p.type = t->type;
    if (may_quantize(t->name, t->shape)) {
      p.type = default_type;
      if (is_quantized(default_type)) {
        p.type = mix_rule(facts, counters, file_type, default_type, *t, options.has_importance);
        p.type = fit_row_length(p.type, t->shape[0], &p.fell_back);
      }
    }
    plan.push_back(p);
  }
  return plan;
}

}  // namespace pagedchat::quantize
