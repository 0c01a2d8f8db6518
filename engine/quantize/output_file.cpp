#include "engine/quantize/output_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/common/error.h"

namespace pagedchat::quantize {

OutputFile::OutputFile(std::string path) : path_(std::move(path)), part_path_(path_ + ".part") {
  file_ = std::fopen(part_path_.c_str(), "wbx");  // x: never overwrite another run's partial file
  if (!file_ && errno == EEXIST) {
    // A partial file left by a run that was killed: ours to replace.
    std::remove(part_path_.c_str());
    file_ = std::fopen(part_path_.c_str(), "wbx");
  }
  if (!file_) fail("cannot write '%s': %s", part_path_.c_str(), std::strerror(errno));
}

OutputFile::~OutputFile() {
  if (file_) {
    std::fclose(file_);
    std::remove(part_path_.c_str());
  }
}

void OutputFile::fail_io(const char* doing, int err) {
  std::fclose(file_);
  file_ = nullptr;
  std::remove(part_path_.c_str());
  fail("cannot %s '%s': %s", doing, path_.c_str(), err == ENOSPC ? "the disk is full" : std::strerror(err));
}

void OutputFile::write(const void* bytes, size_t n) {
  if (!file_) fail("'%s' is already closed", path_.c_str());
  if (n == 0) return;
  if (std::fwrite(bytes, 1, n, file_) != n) fail_io("write", errno);
  written_ += n;
}

void OutputFile::write_zeros(size_t n) {
  static const uint8_t zeros[64] = {};
  while (n > 0) {
    const size_t chunk = n < sizeof zeros ? n : sizeof zeros;
    write(zeros, chunk);
    n -= chunk;
  }
}

void OutputFile::commit() {
  if (!file_) fail("'%s' is already closed", path_.c_str());
  if (std::fflush(file_) != 0) fail_io("write", errno);
  if (fsync(fileno(file_)) != 0) fail_io("sync", errno);
  if (std::fclose(file_) != 0) {
    file_ = nullptr;
    std::remove(part_path_.c_str());
    fail("cannot close '%s': %s", path_.c_str(), std::strerror(errno));
  }
  file_ = nullptr;
  if (std::rename(part_path_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    std::remove(part_path_.c_str());
    fail("cannot move the finished file to '%s': %s", path_.c_str(), std::strerror(err));
  }
}

}  // namespace pagedchat::quantize
