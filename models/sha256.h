#pragma once
// SHA-256 over a stream of bytes (OpenSSL's EVP digest), as lowercase hex: what the Hugging
// Face hub publishes for an LFS file and PyPI for a wheel.

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

namespace pagedchat::models {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  void update(const void* data, size_t size);
  // Adds a whole file, read in chunks; false when `cancel` was set meanwhile (the state is then
  // partial). Throws Error when the file cannot be read.
  bool update_from_file(const std::string& path, const std::atomic<bool>* cancel = nullptr);
  std::string hex();  // finishes the digest; the object is then reset

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The digest of a whole file, read in chunks; throws Error when it cannot be read.
std::string sha256_of_file(const std::string& path);

}  // namespace pagedchat::models
