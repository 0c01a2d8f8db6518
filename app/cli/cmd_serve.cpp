// `serve`: runs pagedchat-server, the Qt program that holds the OpenAI-compatible API, with
// the same arguments. The CLI stays Qt-free (it builds and runs where Qt is absent); the
// server is looked for next to this executable (an install's bin/), then where this build
// put it, then on PATH.

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "app/cli/commands.h"
#include "engine/common/error.h"

namespace pagedchat::cli {

namespace {

std::string find_server() {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path beside = self.parent_path() / "pagedchat-server";
    if (fs::exists(beside)) return beside.string();
  }
#ifdef PAGEDCHAT_SERVER_BUILD_PATH
  if (fs::exists(PAGEDCHAT_SERVER_BUILD_PATH)) return PAGEDCHAT_SERVER_BUILD_PATH;
#endif
  return "pagedchat-server";  // execvp searches PATH
}

}  // namespace

int cmd_serve(const std::vector<std::string>& args) {
  const std::string server = find_server();
  std::vector<std::string> argv_store{server};
  argv_store.insert(argv_store.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_store) argv.push_back(a.data());
  argv.push_back(nullptr);
  execvp(server.c_str(), argv.data());
  // Only reached when the exec failed.
  fail("cannot run '%s' (%s); the server is built when Qt 6 HttpServer is installed (qt6-httpserver-dev)", server.c_str(),
       std::strerror(errno));
}

}  // namespace pagedchat::cli
