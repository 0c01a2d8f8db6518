#pragma once
// Finding the GGUF files already on this machine: in our own models folder, in the places
// other tools keep theirs (Hugging Face's cache, llama.cpp's cache, LM Studio, GPT4All,
// Ollama) and in folders the user adds. Directory entries are read here, and Ollama's manifests
// and the first bytes of its blobs (which have no .gguf name); what each file is comes from its
// header (model_summary.h).

#include <string>
#include <vector>

namespace pagedchat::models {

// How a place lays out its files.
enum class PlaceLayout {
  kFolder,       // *.gguf anywhere below (a few levels deep)
  kHuggingFace,  // models--OWNER--NAME/snapshots/REV/**.gguf, links into blobs/
  kOllama,       // manifests/REGISTRY/NAMESPACE/MODEL/TAG (JSON) naming blobs/sha256-HEX
  kFile,         // dir is one file (a recent model), listed when it is a regular file
};

struct ScanPlace {
  std::string source;  // "PagedChat", "Hugging Face", "llama.cpp", "LM Studio", "GPT4All", "Ollama", "Folder"
  std::string dir;
  PlaceLayout layout = PlaceLayout::kFolder;
};

struct FoundModel {
  std::string path;    // the file (an Ollama blob has no .gguf name)
  std::string source;  // the place's source
  std::string label;   // "OWNER/NAME" (Hugging Face), "MODEL:TAG" (Ollama), else the file's name
};

// The places of the tools above, from $HOME and their own variables (HF_HUB_CACHE, HF_HOME,
// LLAMA_CACHE, XDG_CACHE_HOME, XDG_DATA_HOME, OLLAMA_MODELS), plus `extra_folders`.
std::vector<ScanPlace> standard_places(const std::vector<std::string>& extra_folders = {});

// Every GGUF in the places, each file once (by its real path: Hugging Face snapshots link the
// same blob), in the order of the places. Missing places are skipped; unreadable entries too.
std::vector<FoundModel> scan_places(const std::vector<ScanPlace>& places);

}  // namespace pagedchat::models
