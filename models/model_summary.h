#pragma once
// What a GGUF file is, read from its header alone (the file is mapped, and only the pages of
// its metadata and tensor table are touched): what the model library lists and what
// `pagedchat-cli models info` prints, and whether this build can run it, said before a load.

#include <cstdint>
#include <string>

namespace pagedchat::models {

struct ModelSummary {
  std::string path;
  std::string name;             // general.name, else the file's name without .gguf
  std::string architecture;     // general.architecture
  uint64_t parameters = 0;      // elements of every tensor
  // A mixture of experts' parameters used per token (its experts counted for those a token uses);
  // equal to `parameters` for a dense model.
  uint64_t active_parameters = 0;
  std::string quantization;     // general.file_type's name ("Q4_K_M"), else the commonest weight type
  uint64_t context_length = 0;  // {arch}.context_length, 0 when absent
  uint64_t sliding_window = 0;  // {arch}.attention.sliding_window (Gemma 3's local layers), 0 when absent
  uint64_t file_size = 0;
  bool has_chat_template = false;  // tokenizer.chat_template
  // Whether this build can run it; otherwise `problem` says why in one sentence
  // ("architecture 'phi3' is not supported yet (llama, mistral and qwen2 are)").
  bool supported = false;
  std::string problem;
};

// Reads a GGUF's header. Throws Error when the file is not a readable GGUF (missing, not a
// regular file, corrupt); a readable file whose model this build cannot run is a summary with
// supported false.
ModelSummary summarize_model(const std::string& path);

// llama.cpp's file-type names (general.file_type), e.g. 15 -> "Q4_K_M"; empty for an unknown id.
std::string file_type_name(uint64_t file_type);

// "135M", "1.2B": a parameter count as model cards write it.
std::string format_parameters(uint64_t parameters);
// "92.9 MB": bytes in decimal units, as download pages write them.
std::string format_bytes(uint64_t bytes);

}  // namespace pagedchat::models
