#include "engine/kv/disk/disk_files.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace pagedchat {

int write_file(const std::string& path, std::span<const uint8_t> bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  size_t done = 0;
  int err = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      err = errno;
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) ::unlink(path.c_str());
  return err;
}

FileRead read_file(const std::string& path, std::vector<uint8_t>& out, size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return FileRead::missing;
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return FileRead::bad;
  }
  bool ok = true;
  {
    out.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (ok && done < out.size()) {
      const ssize_t n = ::read(fd, out.data() + done, out.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) ok = false;
      else done += static_cast<size_t>(n);
    }
  }
  ::close(fd);
  return ok ? FileRead::ok : FileRead::missing;
}

pid_t writer_of(const std::string& name) {
  const size_t a = name.find('.'), b = name.find('.', a + 1);
  if (a == std::string::npos || b == std::string::npos) return 0;
  return static_cast<pid_t>(std::strtol(name.substr(a + 1, b - a - 1).c_str(), nullptr, 10));
}

bool writer_is_dead(const std::string& name) {
  const pid_t pid = writer_of(name);
  return pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH;
}

}  // namespace pagedchat
