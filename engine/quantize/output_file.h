#pragma once
// A file that appears whole or not at all: written to "<path>.part" beside it, synced and
// renamed over `path` by commit(). Destroyed without commit (an error, a cancel), it removes
// the partial file, so a failed quantization never leaves a truncated model where the model
// library would list it, and an existing file at `path` stays as it was until the end.

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace pagedchat::quantize {

class OutputFile {
 public:
  // Throws Error naming the path and the system's reason.
  explicit OutputFile(std::string path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Throw Error (the disk full, the folder gone) and leave the final path untouched.
  void write(const void* bytes, size_t n);
  void write(const std::vector<uint8_t>& bytes) { write(bytes.data(), bytes.size()); }
  void write_zeros(size_t n);
  void commit();

  uint64_t bytes_written() const { return written_; }

 private:
  [[noreturn]] void fail_io(const char* doing, int err);
  std::string path_, part_path_;
  std::FILE* file_ = nullptr;
  uint64_t written_ = 0;
};

}  // namespace pagedchat::quantize
