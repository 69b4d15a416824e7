// dtrain launch: start, watch and end a local cluster of dtrain processes.
#include "cli/launch_command.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "config_schema/job_loader.hpp"
#include "engine/status.hpp"

extern char** environ;

namespace dtrain::cli {
namespace {

std::atomic<int> g_forward_signal{0};
extern "C" void on_launch_signal(int sig) { g_forward_signal.store(sig); }

struct Task {
  std::string type;
  int index = 0;
  std::string address;
  pid_t pid = -1;
  int out_fd = -1, err_fd = -1;  // read ends of the child's stdout / stderr
  std::string out_buf, err_buf;  // partial lines
  int exit_code = -1;            // -1 while running
};

// A free TCP port on 127.0.0.1 (bound and released: another process could
// take it before the task binds it, which the task then reports).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

std::string self_exe() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("dtrain");
}

// Writes the complete lines of `buf` to `out`, each prefixed; keeps the rest.
void flush_lines(std::string& buf, const std::string& prefix, std::FILE* out, bool all) {
  size_t start = 0;
  for (size_t nl; (nl = buf.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::fprintf(out, "%s%.*s\n", prefix.c_str(), static_cast<int>(nl - start), buf.data() + start);
  }
  buf.erase(0, start);
  if (all && !buf.empty()) {
    std::fprintf(out, "%s%s\n", prefix.c_str(), buf.c_str());
    buf.clear();
  }
  std::fflush(out);
}

// Reads what is available on fd; returns false at end of file.
bool pump(int& fd, std::string& buf, const std::string& prefix, std::FILE* out) {
  char chunk[8192];
  const ssize_t n = ::read(fd, chunk, sizeof chunk);
  if (n > 0) {
    buf.append(chunk, static_cast<size_t>(n));
    flush_lines(buf, prefix, out, false);
    return true;
  }
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  flush_lines(buf, prefix, out, true);
  ::close(fd);
  fd = -1;
  return false;
}

Status spawn(Task& t, const std::string& exe, const std::vector<std::string>& argv, const std::string& tf_config) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    return runtime_error(fmt::format("launch: cannot create pipes: {}", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "TF_CONFIG=", 10) != 0) env.emplace_back(*e);
  }
  env.push_back("TF_CONFIG=" + tf_config);
  std::vector<char*> cargv, cenv;
  for (const std::string& s : argv) cargv.push_back(const_cast<char*>(s.c_str()));
  cargv.push_back(nullptr);
  for (const std::string& s : env) cenv.push_back(const_cast<char*>(s.c_str()));
  cenv.push_back(nullptr);
  const int rc = posix_spawn(&t.pid, exe.c_str(), &actions, nullptr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return runtime_error(fmt::format("launch: cannot start {}: {}", exe, std::strerror(rc)));
  }
  t.out_fd = out_pipe[0];
  t.err_fd = err_pipe[0];
  return Status::Ok();
}

}  // namespace

int run_launch(const LaunchArgs& a) {
  auto fail = [](const Error& e) {
    std::fprintf(stderr, "dtrain: %s\n", e.message.c_str());
    return static_cast<int>(exit_code_for(e.kind));
  };
  if (a.workers < 1) return fail(config_error("launch: --workers must be at least 1"));
  // The job's own cluster section would take precedence over TF_CONFIG.
  auto job = load_job(a.job, LoadOptions{});
  if (!job) return fail(job.error());
  if (!job->cluster.cluster_tasks.empty()) {
    return fail(config_error(fmt::format(
        "{}: cluster: the job lists cluster addresses, which take precedence over the TF_CONFIG that dtrain launch "
        "gives each task; remove them (keep cluster.timeout_secs) to use dtrain launch",
        a.job)));
  }

  std::vector<Task> tasks;
  auto add = [&](const char* type, int index) {
    Task t;
    t.type = type;
    t.index = index;
    tasks.push_back(std::move(t));
  };
  if (a.chief) add("chief", 0);
  for (int i = 0; i < a.workers; ++i) add("worker", i);
  for (int i = 0; i < a.ps; ++i) add("ps", i);
  if (a.evaluator) add("evaluator", 0);
  nlohmann::json cluster = nlohmann::json::object();
  for (size_t i = 0; i < tasks.size(); ++i) {
    const int port = a.port_base > 0 ? a.port_base + static_cast<int>(i) : free_port();
    if (port <= 0 || port > 65535) return fail(config_error(fmt::format("launch: no port for task {}", i)));
    tasks[i].address = fmt::format("127.0.0.1:{}", port);
    cluster[tasks[i].type].push_back(tasks[i].address);
  }

  g_forward_signal.store(0);
  struct sigaction sa {};
  sa.sa_handler = on_launch_signal;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int {}, old_term {};
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);

  const std::string exe = self_exe();
  std::fprintf(stderr, "dtrain launch: %zu tasks on 127.0.0.1: %s\n", tasks.size(), cluster.dump().c_str());
  for (Task& t : tasks) {
    std::vector<std::string> argv = {exe, "train", a.job};
    argv.insert(argv.end(), a.train_args.begin(), a.train_args.end());
    const nlohmann::json tf_config = {{"cluster", cluster}, {"task", {{"type", t.type}, {"index", t.index}}}};
    if (Status s = spawn(t, exe, argv, tf_config.dump()); !s) {
      for (Task& started : tasks) {
        if (started.pid > 0) ::kill(started.pid, SIGTERM);
      }
      return fail(s.error());
    }
  }

  int first_failure = 0, forwarded = 0;
  for (;;) {
    if (const int sig = g_forward_signal.load(); sig != 0 && sig != forwarded) {
      for (Task& t : tasks) {
        if (t.exit_code < 0) ::kill(t.pid, sig);
      }
      forwarded = sig;
    }
    std::vector<pollfd> fds;
    std::vector<std::pair<Task*, bool>> owners;  // (task, is stderr)
    for (Task& t : tasks) {
      if (t.out_fd >= 0) {
        fds.push_back({t.out_fd, POLLIN, 0});
        owners.emplace_back(&t, false);
      }
      if (t.err_fd >= 0) {
        fds.push_back({t.err_fd, POLLIN, 0});
        owners.emplace_back(&t, true);
      }
    }
    if (!fds.empty() && ::poll(fds.data(), fds.size(), 200) > 0) {
      for (size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        Task& t = *owners[i].first;
        const std::string prefix = fmt::format("[{} {}] ", t.type, t.index);
        if (owners[i].second) {
          pump(t.err_fd, t.err_buf, prefix, stderr);
        } else {
          pump(t.out_fd, t.out_buf, prefix, stdout);
        }
      }
    } else if (fds.empty()) {
      ::usleep(50000);
    }
    bool running = false;
    for (Task& t : tasks) {
      if (t.exit_code >= 0) continue;
      int status = 0;
      if (::waitpid(t.pid, &status, WNOHANG) == t.pid) {
        t.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (t.exit_code != 0) {
          std::fprintf(stderr, "dtrain launch: %s %d (%s) exited with code %d\n", t.type.c_str(), t.index,
                       t.address.c_str(), t.exit_code);
          if (first_failure == 0) first_failure = t.exit_code;
        }
      } else {
        running = true;
      }
    }
    const bool open_pipes = std::any_of(tasks.begin(), tasks.end(), [](const Task& t) {
      return t.out_fd >= 0 || t.err_fd >= 0;
    });
    if (!running && !open_pipes) break;
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  if (first_failure == 0) std::fprintf(stderr, "dtrain launch: all %zu tasks finished\n", tasks.size());
  return first_failure;
}

}  // namespace dtrain::cli
