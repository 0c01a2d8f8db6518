#pragma once
// A loopback TCP port nothing listens on now, for a test server to take (the OS picks it; the
// moment between closing it here and the server binding it is the usual small race).

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace pagedchat::test {

inline int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

}  // namespace pagedchat::test
