// libFuzzer target for the GGUF reader (and the model config read from it): any input must
// either parse, with every tensor inside the buffer, or throw pagedchat::Error.
// Build: CXX=clang++ cmake -DPAGEDCHAT_FUZZ=ON ...; run: fuzz_gguf tests/data/gguf_broken

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "engine/common/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pagedchat;
  try {
    GgufFile f = GgufFile::from_memory({data, size});
    for (const auto& t : f.tensors()) {
      const uint8_t* p = f.tensor_data(t);
      if (p < data || p + t.num_bytes > data + size) std::abort();  // a reader bug, not bad input
    }
    for (const auto& k : f.keys()) (void)f.find(k);
    try {
      (void)ModelConfig::from_gguf(f);
    } catch (const Error&) {
    }
  } catch (const Error&) {
  }
  return 0;
}
