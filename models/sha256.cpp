// SHA-256 on OpenSSL's EVP interface (see sha256.h).
#include "models/sha256.h"

#include <openssl/evp.h>

#include <cstdio>
#include <vector>

#include "engine/common/error.h"

namespace pagedchat::models {

struct Sha256::State {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  State() { EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr); }
  ~State() { EVP_MD_CTX_free(ctx); }
};

Sha256::Sha256() : state_(std::make_unique<State>()) {}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::update(const void* data, size_t size) { EVP_DigestUpdate(state_->ctx, data, size); }

std::string Sha256::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(state_->ctx, digest, &n);
  EVP_DigestInit_ex(state_->ctx, EVP_sha256(), nullptr);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

bool Sha256::update_from_file(const std::string& path, const std::atomic<bool>* cancel) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) fail("cannot read '%s'", path.c_str());
  std::vector<char> buf(1 << 20);
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) {
    if (cancel && cancel->load()) {
      std::fclose(f);
      return false;
    }
    update(buf.data(), n);
  }
  const bool bad = std::ferror(f);
  std::fclose(f);
  if (bad) fail("error reading '%s'", path.c_str());
  return true;
}

std::string sha256_of_file(const std::string& path) {
  Sha256 h;
  h.update_from_file(path);
  return h.hex();
}

}  // namespace pagedchat::models
