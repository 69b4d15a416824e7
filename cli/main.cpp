// dtrain's entry point: parse the command line with CLI11 and dispatch to
// the subcommand table (cli/commands.cpp). Exit codes: 0 ok, 1 failure,
// 2 usage or job-file error, 3 data error, 4 cluster error.
#include <malloc.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string_view>

#include "cli/commands.hpp"
#include "engine/cpu_isa.hpp"
#include "engine/base/status.hpp"
#include "engine/thread_errors.hpp"
#include "engine/version.hpp"
#include "engine/stop_signals.hpp"
#include "strategies/grpc_log.hpp"

// Before anything slow, before main and this executable's own static
// initialisers (the embedded schema, generated protobuf descriptors): a stop
// signal during start-up is remembered, not lost and not the default action
// (engine/stop_signals.hpp). Only the shared libraries' loading comes
// first (about 30 ms).
__attribute__((constructor(101))) static void catch_stop_signals_early() {
  dtrain::install_stop_signal_handlers();
  // A write to a connection whose peer died (a killed worker's Gloo socket)
  // fails with EPIPE and becomes dtrain's cluster error naming the task; left
  // at its default, SIGPIPE ended the surviving task silently (exit -13).
  std::signal(SIGPIPE, SIG_IGN);
  // A task of `dtrain launch` stops when launch dies, even of SIGKILL: the
  // kernel sends SIGTERM, which the handlers above take as a stop. launch
  // spawns its tasks from its main thread, whose end is the process's end.
  // Had launch died before this line, the task is already an orphan.
  if (const char* parent = std::getenv("DTRAIN_LAUNCH_PID"); parent != nullptr) {
    const long want = std::strtol(parent, nullptr, 10);
    ::unsetenv("DTRAIN_LAUNCH_PID");
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != static_cast<pid_t>(want)) std::raise(SIGTERM);
  }
}

int main(int argc, char** argv) {
  // glibc reserves 64 MiB of address space for each malloc arena, up to 8 per
  // core, and dtrain's input pipeline runs a thread per open file besides the
  // decode and compute threads: under an address-space limit (ulimit -v,
  // RLIMIT_AS) those reservations alone could exceed it. Four arenas serve
  // these threads (large tensors are mapped pages of their own anyway);
  // MALLOC_ARENA_MAX in the environment still decides where it is set.
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 4);
  dtrain::route_grpc_logs();  // dtrain's errors say what failed; gRPC's own lines only with GRPC_VERBOSITY
  if (dtrain::Status isa = dtrain::check_cpu_isa_cap(); !isa) {
    std::fprintf(stderr, "dtrain: %s\n", isa.error().message.c_str());
    return static_cast<int>(dtrain::ExitCode::kUsage);
  }
  using dtrain::cli::Args;
  CLI::App app{"dtrain: train neural networks described in a YAML job file", "dtrain"};
  app.set_version_flag("--version", dtrain::kDtrainVersion);
  app.require_subcommand(1);
  app.footer("Exit codes: 0 success, 1 failure (e.g. NaN loss), 2 usage or job-file error, 3 data error,\n"
             "4 cluster error (a task died, hung or never arrived).\n"
             "See dtrain(1) and dtrain-job(5).");
  Args args;
  std::vector<std::pair<CLI::App*, const dtrain::cli::Command*>> subs;
  for (const auto& cmd : dtrain::cli::commands()) {
    CLI::App* sub = app.add_subcommand(cmd.name, cmd.help);
    cmd.declare(*sub, args);
    subs.emplace_back(sub, &cmd);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return static_cast<int>(dtrain::ExitCode::kUsage);
  }
  try {
    for (auto& [sub, cmd] : subs) {
      if (!sub->parsed()) continue;
      // train, launch and server act on stop signals themselves; every other
      // command ends with the signal's default action, as it always did.
      if (const std::string_view name = cmd->name; name != "train" && name != "launch" && name != "server") {
        dtrain::default_stop_signal_actions();
      }
      return cmd->run(args);
    }
  } catch (...) {
    // Whatever a command let through (threads hand theirs to it:
    // engine/thread_errors.hpp): one line and the kind's exit code, never
    // std::terminate.
    const dtrain::Error e = dtrain::current_exception_error("internal error");
    std::fprintf(stderr, "dtrain: %s\n", e.message.c_str());
    return static_cast<int>(dtrain::exit_code_for(e.kind));
  }
  return static_cast<int>(dtrain::ExitCode::kUsage);
}
