// libFuzzer target for the wheel reader (models/zip_member.h): any archive must either give
// the member, its CRC checked, or throw pagedchat::Error. The input is written to a file first,
// as the reader works on files. Run: fuzz_zip -max_len=4096 (seeds: any small .whl or .zip)

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "engine/common/error.h"
#include "models/zip_member.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/fuzz_zip.XXXXXX";
    return std::string(mkdtemp(tmpl));
  }();
  const std::string in = dir + "/in.zip", out = dir + "/out";
  std::FILE* f = std::fopen(in.c_str(), "wb");
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    (void)pagedchat::models::extract_zip_member(in, "pkg/model.gguf", out);
  } catch (const pagedchat::Error&) {
  }
  return 0;
}
