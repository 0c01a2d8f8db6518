// The stdio transport: posix_spawn with three pipes, one reader thread for each of the child's
// outputs, and a close that cannot leave the child behind.
#include "mcp/stdio_transport.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

extern char** environ;

namespace pagedchat::mcp {
namespace {

constexpr size_t kStderrTail = 2048;  // bytes of the child's stderr kept for the failure sentence

std::string errno_text(int err) { return std::strerror(err); }

// The app's environment with the server's own variables added or replaced.
std::vector<std::string> merged_environment(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry(*e);
    const std::string key = entry.substr(0, entry.find('='));
    if (!extra.count(key)) env.push_back(entry);
  }
  for (const auto& [key, value] : extra) env.push_back(key + "=" + value);
  return env;
}

// Writes all of `data`, without letting a closed pipe's SIGPIPE end the process: the signal is
// blocked for this thread while writing, and a pending one is taken back before unblocking.
bool write_all(int fd, const char* data, size_t size) {
  sigset_t pipe_only, old;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  bool ok = true;
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      break;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  if (!ok) {
    const timespec zero{0, 0};
    while (sigtimedwait(&pipe_only, nullptr, &zero) > 0) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return ok;
}

std::string clip(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n) + "…"; }

}  // namespace

StdioTransport::StdioTransport(std::string server_name, const StdioCommand& command, const Limits& limits)
    : name_(std::move(server_name)), limits_(limits) {
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    queue_.fail({ErrorKind::spawn_failed, "could not start the MCP server '" + name_ + "': " + errno_text(errno)});
    return;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group, so that close() also ends what it started; default signal handling
  // and an empty mask whatever the app set.
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> argv_s = {command.command};
  argv_s.insert(argv_s.end(), command.args.begin(), command.args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s = merged_environment(command.env);
  std::vector<char*> envp;
  for (std::string& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  const int rc = command.command.empty() ? ENOENT
                                         : posix_spawnp(&pid_, command.command.c_str(), &actions, &attr, argv.data(),
                                                        envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  stdin_fd_ = in[1];
  stdout_fd_ = out[0];
  stderr_fd_ = err[0];
  if (rc != 0) {
    pid_ = -1;
    queue_.fail({ErrorKind::spawn_failed,
                 "could not start the MCP server '" + name_ + "' ('" + command.command + "'): " + errno_text(rc)});
    return;
  }
  stdout_reader_ = std::thread([this] { read_stdout(); });
  stderr_reader_ = std::thread([this] { read_stderr(); });
}

StdioTransport::~StdioTransport() { close(); }

bool StdioTransport::reap(int wait_ms) {
  for (int waited = 0;; waited += 10) {
    {
      std::lock_guard lock(mutex_);
      if (reaped_ || pid_ <= 0) return true;
      if (waitpid(pid_, &wait_status_, WNOHANG) == pid_) return reaped_ = true;
    }
    if (waited >= wait_ms) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string StdioTransport::exit_sentence() {
  std::string s = "the MCP server '" + name_ + "' ";
  if (!reaped_) s += "closed its output";
  else if (WIFEXITED(wait_status_)) s += "exited with code " + std::to_string(WEXITSTATUS(wait_status_));
  else if (WIFSIGNALED(wait_status_)) s += "was killed by signal " + std::to_string(WTERMSIG(wait_status_));
  else s += "ended";
  std::string tail = stderr_tail_;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
  if (const size_t nl = tail.rfind('\n'); nl != std::string::npos) tail = tail.substr(nl + 1);
  if (!tail.empty()) s += ": " + clip(tail, 300);
  return s;
}

void StdioTransport::read_stdout() {
  std::string pending;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(stdout_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    size_t start = 0;
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
      if (buf[i] != '\n') continue;
      pending.append(buf + start, i - start);
      start = i + 1;
      if (!pending.empty() && pending.back() == '\r') pending.pop_back();
      if (!pending.empty()) queue_.push(std::move(pending));
      pending.clear();
    }
    pending.append(buf + start, static_cast<size_t>(n) - start);
    if (pending.size() > limits_.max_message_bytes) {
      queue_.fail({ErrorKind::protocol, "the MCP server '" + name_ + "' sent a message over " +
                                            std::to_string(limits_.max_message_bytes >> 20) + " MiB; it was stopped"});
      break;  // close() ends the process; nothing more is read
    }
  }
  fail_exited();
}

void StdioTransport::fail_exited() {
  reap(500);  // its output or input closed: the process is ending; its exit status says how
  std::unique_lock lock(mutex_);
  // Its last words on stderr, which the other reader may still be taking in.
  stderr_ended_.wait_for(lock, std::chrono::milliseconds(300), [&] { return stderr_done_; });
  if (!closed_) queue_.fail({ErrorKind::exited, exit_sentence()});
}

void StdioTransport::read_stderr() {
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(stderr_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::lock_guard lock(mutex_);
    stderr_tail_.append(buf, static_cast<size_t>(n));
    if (stderr_tail_.size() > kStderrTail) stderr_tail_.erase(0, stderr_tail_.size() - kStderrTail);
  }
  std::lock_guard lock(mutex_);
  stderr_done_ = true;
  stderr_ended_.notify_all();
}

bool StdioTransport::send(const std::string& message) {
  {
    std::lock_guard lock(mutex_);
    if (closed_) return false;
  }
  if (!queue_.failure().ok()) return false;
  std::string line = message;
  line += '\n';
  if (write_all(stdin_fd_, line.data(), line.size())) return true;
  fail_exited();
  return false;
}

std::optional<std::string> StdioTransport::receive(Clock::time_point deadline) { return queue_.pop(deadline); }

bool StdioTransport::failed() const { return queue_.failed(); }

Error StdioTransport::failure() const { return queue_.failure(); }

void StdioTransport::close() {
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
  }
  // The protocol's shutdown: close its input, wait, then SIGTERM, then SIGKILL, to the group.
  if (stdin_fd_ >= 0) ::close(stdin_fd_), stdin_fd_ = -1;
  if (pid_ > 0) {
    if (!reap(500)) {
      ::kill(-pid_, SIGTERM);
      if (!reap(1000)) {
        ::kill(-pid_, SIGKILL);
        reap(5000);
      }
    }
    ::kill(-pid_, SIGKILL);  // whatever it started and left behind in its group
  }
  if (stdout_reader_.joinable()) stdout_reader_.join();
  if (stderr_reader_.joinable()) stderr_reader_.join();
  if (stdout_fd_ >= 0) ::close(stdout_fd_), stdout_fd_ = -1;
  if (stderr_fd_ >= 0) ::close(stderr_fd_), stderr_fd_ = -1;
  queue_.fail({ErrorKind::exited, "the connection to the MCP server '" + name_ + "' was closed"});
}

}  // namespace pagedchat::mcp
