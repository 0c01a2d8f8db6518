#pragma once
// Finding a model on the Hugging Face hub by name, as the hub's own search does: repositories
// whose name holds the words and that carry GGUF files (the models API with filter=gguf), most
// downloaded first; then one repository's GGUF files with their sizes (its tree), each judged
// against this machine before a byte is downloaded: whether its quantization runs here, and
// whether it fits in the memory there is. The hub is hub_endpoint() ($HF_ENDPOINT).

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace pagedchat::models {

struct HubRepo {
  std::string id;  // "owner/name"
  uint64_t downloads = 0, likes = 0;
};

struct HubGgufFile {
  std::string path;          // in the repository; a split model's first part
  uint64_t size = 0;         // bytes (a split model's: all its parts)
  std::string quantization;  // as its name says ("Q4_K_M"); empty when it says none
  int split_parts = 0;       // "-00001-of-00003.gguf": 3; 0 for a single file
};

// The search's URL: words, GGUF repositories only, most downloaded first, at most `limit`.
std::string hub_search_url(const std::string& endpoint, const std::string& words, int limit);
// The hub's answer (a JSON array of models); throws Error when it is not one.
std::vector<HubRepo> parse_hub_search(const std::string& json);
// Both, over HTTP; throws Error with the reason (unreachable, an HTTP status, a bad answer).
std::vector<HubRepo> search_hub(const std::string& words, int limit, const std::string& endpoint,
                                const std::atomic<bool>* cancel = nullptr);

std::string hub_tree_url(const std::string& endpoint, const std::string& repo, const std::string& revision = "main");
// The GGUF files of a repository's tree (a JSON array of entries), by path; a split model's
// parts are one entry. Throws Error when the answer is not a tree.
std::vector<HubGgufFile> parse_hub_tree(const std::string& json);
std::vector<HubGgufFile> list_hub_gguf_files(const std::string& repo, const std::string& endpoint,
                                             const std::atomic<bool>* cancel = nullptr);

// "Q4_K_M" for "Llama-3.2-1B-Instruct-Q4_K_M.gguf": the longest of llama.cpp's file-type
// names the file's name holds as a word of its own (any case); empty when there is none.
std::string quantization_in_name(const std::string& file);
// Whether this build computes with that quantization's weights ("Q4_K_M": its Q4_K and Q6_K
// blocks; "IQ4_XS": no). An empty name: not known, taken as yes.
bool quantization_runs_here(const std::string& quantization);

struct FitCheck {
  enum class Verdict { fits, tight, too_big, does_not_run };
  Verdict verdict = Verdict::fits;
  std::string sentence;  // "fits: needs about 1.3 GB of the 20.1 GB free"
};
// The file against `available` bytes of memory (0: not known): the weights, plus a tenth for
// the work buffers and 256 MB for a chat's KV pool; "tight" past 80 % of what is free.
FitCheck check_fit(const HubGgufFile& file, uint64_t available);
// MemAvailable (Linux), else 0.
uint64_t available_memory();

}  // namespace pagedchat::models
