// Child processes: posix_spawn with pipes, line reading, reaping.
#include "strategies/child_process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "engine/threads.hpp"
#include "engine/stop_signals.hpp"

extern char** environ;

namespace dtrain {

Result<Child> spawn_child(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                          const std::string& cwd, const std::vector<int>& cpus) {
  // posix_spawn's child inherits the calling thread's affinity mask.
  const std::vector<int> own_cpus = cpus.empty() ? std::vector<int>() : thread_affinity();
  if (!cpus.empty() && !set_thread_affinity(cpus)) {
    return runtime_error(fmt::format("cannot pin {} to CPUs {}: {}", argv[0], cpu_list(cpus), std::strerror(errno)));
  }
  struct RestoreAffinity {
    const std::vector<int>& cpus;
    ~RestoreAffinity() {
      if (!cpus.empty()) set_thread_affinity(cpus);
    }
  } restore{own_cpus};
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return runtime_error(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return runtime_error(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  auto replaced = [&](const char* entry) {
    const char* eq = std::strchr(entry, '=');
    const size_t n = eq ? static_cast<size_t>(eq - entry) + 1 : std::strlen(entry);
    for (const std::string& e : env) {
      if (e.compare(0, n, entry, n) == 0) return true;
    }
    return false;
  };
  std::vector<std::string> full_env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (!replaced(*e)) full_env.emplace_back(*e);
  }
  full_env.insert(full_env.end(), env.begin(), env.end());
  std::vector<char*> cargv, cenv;
  for (const std::string& s : argv) cargv.push_back(const_cast<char*>(s.c_str()));
  cargv.push_back(nullptr);
  for (const std::string& s : full_env) cenv.push_back(const_cast<char*>(s.c_str()));
  cenv.push_back(nullptr);
  Child child;
  // The child starts with no signal blocked and the stop signals at their
  // default action, whatever this thread has (dtrain blocks them in every
  // thread but one: engine/stop_signals.hpp), and SIGPIPE, which dtrain
  // ignores (cli/main.cpp) and exec would pass on ignored, at its default.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, stops;
  sigemptyset(&none);
  sigemptyset(&stops);
  for (int sig : {SIGINT, SIGTERM, SIGUSR1, SIGPIPE}) sigaddset(&stops, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &stops);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  const int rc = posix_spawn(&child.pid, argv[0].c_str(), &actions, &attr, cargv.data(), cenv.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return runtime_error(fmt::format("cannot start {}: {}", argv[0], std::strerror(rc)));
  }
  child.out_fd = out_pipe[0];
  child.err_fd = err_pipe[0];
  return child;
}

bool read_lines(int& fd, std::string& buf, const std::function<void(std::string_view)>& line) {
  char chunk[8192];
  const ssize_t n = ::read(fd, chunk, sizeof chunk);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n > 0) buf.append(chunk, static_cast<size_t>(n));
  size_t start = 0;
  for (size_t nl; (nl = buf.find('\n', start)) != std::string::npos; start = nl + 1) {
    line(std::string_view(buf).substr(start, nl - start));
  }
  buf.erase(0, start);
  if (n > 0) return true;
  if (!buf.empty()) line(buf);
  buf.clear();
  ::close(fd);
  fd = -1;
  return false;
}

std::optional<int> try_reap(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, WNOHANG) != pid) return std::nullopt;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int free_port(bool loopback_only) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(loopback_only ? INADDR_LOOPBACK : INADDR_ANY);
  socklen_t len = sizeof addr;
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

namespace {
std::atomic<int> g_last_signal{0};
std::atomic<int> g_signal_count{0};
extern "C" void on_watcher_stop_signal(int sig) {
  g_last_signal.store(sig);
  g_signal_count.fetch_add(1);
}
}  // namespace

StopSignals::StopSignals() {
  // A signal that came before (main catches them from its first line) counts.
  g_last_signal.store(received_stop_signal());
  g_signal_count.store(received_stop_signals());
  struct sigaction sa {};
  sa.sa_handler = on_watcher_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
  sigaction(SIGUSR1, &sa, &old_usr1_);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  sigaction(SIGUSR1, &old_usr1_, nullptr);
}

int StopSignals::last() const { return g_last_signal.load(); }
int StopSignals::count() const { return g_signal_count.load(); }

std::string self_exe() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("dtrain");
}

std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  while (!dirs.empty()) {
    const size_t colon = dirs.find(':');
    std::string dir(dirs.substr(0, colon));
    dirs = colon == std::string_view::npos ? std::string_view() : dirs.substr(colon + 1);
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

Result<CommandOutput> run_command(const std::vector<std::string>& argv, double timeout_secs) {
  std::vector<std::string> resolved = argv;
  resolved[0] = find_program(argv[0]);
  if (resolved[0].empty()) return runtime_error(fmt::format("{}: not found on PATH", argv[0]));
  auto child = spawn_child(resolved, {});
  if (!child) return child.error();
  CommandOutput result;
  const auto append = [](std::string& to) { return [&to](std::string_view line) { to.append(line).append("\n"); }; };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_secs);
  bool killed = false;
  while (child->out_fd >= 0 || child->err_fd >= 0) {
    if (!killed && std::chrono::steady_clock::now() >= deadline) {
      ::kill(child->pid, SIGKILL);
      killed = true;
    }
    pollfd fds[2] = {{child->out_fd, POLLIN, 0}, {child->err_fd, POLLIN, 0}};
    if (::poll(fds, 2, 100) <= 0) continue;
    if (child->out_fd >= 0 && fds[0].revents != 0) read_lines(child->out_fd, child->out_buf, append(result.out));
    if (child->err_fd >= 0 && fds[1].revents != 0) read_lines(child->err_fd, child->err_buf, append(result.err));
  }
  int status = 0;
  while (::waitpid(child->pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = killed ? 124 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace dtrain
