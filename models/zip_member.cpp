// One member out of a ZIP archive, through zlib's raw inflate (see zip_member.h). The central
// directory is the authority (the local header's sizes may be zero when a data descriptor follows).
#include "models/zip_member.h"

#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "engine/common/error.h"
#include "models/sha256.h"

namespace pagedchat::models {
namespace {

uint32_t u16(const uint8_t* p) { return p[0] | (p[1] << 8); }
uint32_t u32(const uint8_t* p) { return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24); }

struct File {
  std::FILE* f;
  explicit File(const std::string& path, const char* mode) : f(std::fopen(path.c_str(), mode)) {}
  ~File() {
    if (f) std::fclose(f);
  }
};

void read_at(std::FILE* f, uint64_t offset, void* out, size_t n, const char* what) {
  if (fseeko(f, static_cast<off_t>(offset), SEEK_SET) != 0 || std::fread(out, 1, n, f) != n)
    fail("the archive is truncated (reading its %s)", what);
}

}  // namespace

std::string extract_zip_member(const std::string& zip_path, const std::string& member, const std::string& out_path) {
  File zip(zip_path, "rb");
  if (!zip.f) fail("cannot open the archive '%s'", zip_path.c_str());
  fseeko(zip.f, 0, SEEK_END);
  const uint64_t size = static_cast<uint64_t>(ftello(zip.f));
  if (size < 22) fail("'%s' is not a ZIP archive", zip_path.c_str());

  // The end-of-central-directory record: in the last 22 + 65535 bytes (after a comment).
  const uint64_t tail_len = std::min<uint64_t>(size, 22 + 65535);
  std::vector<uint8_t> tail(tail_len);
  read_at(zip.f, size - tail_len, tail.data(), tail_len, "end record");
  int64_t eocd = -1;
  for (int64_t i = static_cast<int64_t>(tail_len) - 22; i >= 0; --i)
    if (u32(&tail[i]) == 0x06054b50) {
      eocd = i;
      break;
    }
  if (eocd < 0) fail("'%s' is not a ZIP archive (no end record)", zip_path.c_str());
  const uint32_t entries = u16(&tail[eocd + 10]);
  const uint32_t dir_size = u32(&tail[eocd + 12]);
  const uint32_t dir_offset = u32(&tail[eocd + 16]);
  if (dir_offset == 0xFFFFFFFFu || entries == 0xFFFF) fail("ZIP64 archives are not supported");
  if (static_cast<uint64_t>(dir_offset) + dir_size > size) fail("the archive's directory lies past its end");
  std::vector<uint8_t> dir(dir_size);
  read_at(zip.f, dir_offset, dir.data(), dir_size, "directory");

  uint32_t method = 0, crc = 0, packed = 0, unpacked = 0, local = 0;
  bool found = false;
  for (size_t p = 0, i = 0; i < entries; ++i) {
    if (p + 46 > dir.size() || u32(&dir[p]) != 0x02014b50) fail("the archive's directory is corrupt");
    const uint32_t name_len = u16(&dir[p + 28]), extra_len = u16(&dir[p + 30]), comment_len = u16(&dir[p + 32]);
    if (p + 46 + name_len > dir.size()) fail("the archive's directory is corrupt");
    if (std::string(reinterpret_cast<const char*>(&dir[p + 46]), name_len) == member) {
      method = u16(&dir[p + 10]);
      crc = u32(&dir[p + 16]);
      packed = u32(&dir[p + 20]);
      unpacked = u32(&dir[p + 24]);
      local = u32(&dir[p + 42]);
      found = true;
      break;
    }
    p += 46 + name_len + extra_len + comment_len;
  }
  if (!found) fail("the archive has no '%s'", member.c_str());
  if (packed == 0xFFFFFFFFu || unpacked == 0xFFFFFFFFu) fail("ZIP64 members are not supported");
  if (method != 0 && method != 8) fail("'%s' is compressed with method %u (only stored and deflate are supported)", member.c_str(), method);
  uint8_t lh[30];
  read_at(zip.f, local, lh, 30, "member header");
  if (u32(lh) != 0x04034b50) fail("the archive's member header is corrupt");
  const uint64_t data = static_cast<uint64_t>(local) + 30 + u16(lh + 26) + u16(lh + 28);
  if (data + packed > size) fail("the member '%s' lies past the archive's end", member.c_str());

  File out(out_path, "wb");
  if (!out.f) fail("cannot write '%s'", out_path.c_str());
  Sha256 hash;
  uLong crc_now = crc32(0L, Z_NULL, 0);
  uint64_t written = 0;
  auto emit = [&](const uint8_t* bytes, size_t n) {
    // More than the directory says (a ZIP bomb, a corrupt stream): stop before the disk fills.
    if (written + n > unpacked) fail("the member '%s' inflates past the %u bytes its directory says", member.c_str(), unpacked);
    if (std::fwrite(bytes, 1, n, out.f) != n) fail("cannot write '%s' (disk full?)", out_path.c_str());
    hash.update(bytes, n);
    crc_now = crc32(crc_now, bytes, static_cast<uInt>(n));
    written += n;
  };
  std::vector<uint8_t> in(1 << 20), buf(1 << 20);
  if (fseeko(zip.f, static_cast<off_t>(data), SEEK_SET) != 0) fail("the archive is truncated");
  uint64_t left = packed;
  if (method == 0) {
    while (left) {
      const size_t n = std::fread(in.data(), 1, std::min<uint64_t>(left, in.size()), zip.f);
      if (n == 0) fail("the archive is truncated");
      emit(in.data(), n);
      left -= n;
    }
  } else {
    z_stream z{};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) fail("zlib could not start");
    std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&z, inflateEnd);
    int rc = Z_OK;
    while (rc != Z_STREAM_END) {
      // More input only when zlib has used all it was given: with the output buffer full it may
      // still hold output for input it has already taken, so it is called again either way.
      if (z.avail_in == 0 && left > 0) {
        const size_t n = std::fread(in.data(), 1, std::min<uint64_t>(left, in.size()), zip.f);
        if (n == 0) fail("the archive is truncated");
        left -= n;
        z.next_in = in.data();
        z.avail_in = static_cast<uInt>(n);
      }
      z.next_out = buf.data();
      z.avail_out = static_cast<uInt>(buf.size());
      rc = inflate(&z, Z_NO_FLUSH);
      if (rc == Z_BUF_ERROR && z.avail_in == 0 && left == 0)  // no progress possible: the input is all read
        fail("the member '%s' ends before its compressed stream does", member.c_str());
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
        fail("the member '%s' is corrupt (inflate: %s)", member.c_str(), z.msg ? z.msg : "error");
      emit(buf.data(), buf.size() - z.avail_out);
    }
  }
  if (written != unpacked) fail("the member '%s' has %llu bytes, its directory says %u", member.c_str(), (unsigned long long)written, unpacked);
  if (crc_now != crc) fail("the member '%s' fails its CRC-32 check", member.c_str());
  if (std::fflush(out.f) != 0) fail("cannot write '%s' (disk full?)", out_path.c_str());
  return hash.hex();
}

}  // namespace pagedchat::models
