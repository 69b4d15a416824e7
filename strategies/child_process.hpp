// Child dtrain processes for dtrain launch and dtrain server: start one with
// its output on pipes, read that output line by line, and reap it.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.hpp"

namespace dtrain {

struct Child {
  pid_t pid = -1;
  int out_fd = -1, err_fd = -1;  // read ends of the child's stdout / stderr; -1 once closed
  std::string out_buf, err_buf;  // partial lines
};

// Starts `argv` (argv[0] is the program) with this process's environment,
// where `env` entries ("NAME=value") replace or add variables, and stdout and
// stderr on pipes. With `cpus`, the child starts pinned to those CPUs (its
// affinity mask); the calling thread's mask is set for the spawn and put
// back, so the caller must not start threads meanwhile.
Result<Child> spawn_child(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                          const std::string& cwd = "", const std::vector<int>& cpus = {});

// Reads what is available on `fd` and calls `line` for each complete line
// (without its newline). At end of file: passes the unterminated rest as a
// line, closes fd, sets it to -1 and returns false.
bool read_lines(int& fd, std::string& buf, const std::function<void(std::string_view)>& line);

// The exit code of `pid` if it has ended (128 + signal when killed), without waiting.
std::optional<int> try_reap(pid_t pid);

// A free TCP port, on 127.0.0.1 or on every address (bound and released:
// another process could take it before the task binds it, which the task
// then reports).
int free_port(bool loopback_only);

// Catches SIGINT, SIGTERM and SIGUSR1 (a batch scheduler's warning) while it lives, remembering the last one and
// counting them, and puts the previous handlers back when destroyed. For the
// commands that watch other processes (launch, server, --remote-cluster) and
// decide themselves what a signal means. One at a time per process.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  int last() const;   // the last signal caught; 0 when none
  int count() const;  // how many were caught

 private:
  struct sigaction old_int_ {}, old_term_ {}, old_usr1_ {};
};

// This executable's path (/proc/self/exe), for starting more dtrain processes.
std::string self_exe();

// `name` found on PATH (a name with a '/' is returned as it is); empty when not found.
std::string find_program(const std::string& name);

struct CommandOutput {
  int exit_code = 0;  // 128 + signal when killed; 124 when stopped past the time limit
  std::string out, err;
};

// Runs `argv` (argv[0] looked up on PATH) to its end, collecting its stdout
// and stderr; kills it past `timeout_secs`. Errors: the program is not found
// or cannot start (kRuntime).
Result<CommandOutput> run_command(const std::vector<std::string>& argv, double timeout_secs);

}  // namespace dtrain
