#pragma once
// What names a model's weights for caches that outlive the process (the KV disk tier): two files
// with the same identity compute the same K/V. Read from the file's header and a sample of every
// matrix's bytes (its first, middle and last 256), not the whole file: a multi-GiB model is not
// read again at each load, and a file replaced under the same name by another model, a finetune
// of the same shape or a requantization, still differs in what is sampled.

#include <cstdint>

#include "engine/model/model_weights.h"

namespace pagedchat {

uint64_t model_file_identity(const ModelWeights& weights);

}  // namespace pagedchat
