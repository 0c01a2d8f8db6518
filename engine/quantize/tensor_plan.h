#pragma once
// Which type each tensor of a model becomes under a file type: llama-quantize's choice
// (llama_tensor_get_type in llama.cpp's src/llama-quant.cpp), so a file we write holds the same
// tensors, in the same order and types, as the one it writes. Plan first, then convert: the
// plan is a pure function of the source's header, shown by `quantize --dry-run` and tested
// on its own.
//
// What the rules do, for the mixes we write: norms, biases, routers and other vectors stay
// as they are; the output projection (and the token embedding when the output reuses it)
// gets Q6_K; "_M" mixes give Q6_K to the value projections and the FFN down projections of
// the first and last eighths of the layers and every third layer between (use_more_bits);
// 8-expert models keep attention K/V in Q8_0; a row length the type cannot hold falls back to
// a type of 32-element blocks (Q4_K to Q5_0, Q6_K to Q8_0, ...) or to F16.

#include <string>
#include <vector>

#include "engine/common/ggml_type.h"
#include "engine/gguf/gguf_file.h"
#include "engine/quantize/file_type.h"

namespace pagedchat::quantize {

struct PlannedTensor {
  const GgufTensorInfo* source = nullptr;
  GgmlType type = GgmlType::F32;  // what it becomes (== source->type: copied unchanged)
  bool converted() const { return type != source->type; }
  bool fell_back = false;         // the mix's type did not fit the row length
};

struct PlanOptions {
  bool has_importance = false;  // an importance matrix will be used (changes a few rules)
};

// The source's tensors in llama.cpp's order (by layer, then by name; tensors of no layer
// first), each with its type. Throws Error for a file without {arch}.block_count.
std::vector<PlannedTensor> plan_tensors(const GgufFile& source, FileType file_type, const PlanOptions& options = {});

// Whether a tensor of this name and shape may be quantized at all (matrices named *weight,
// not norms, routers, position embeddings, ...).
bool may_quantize(const std::string& name, const std::vector<int64_t>& shape);

}  // namespace pagedchat::quantize
