// dtrain launch: start, watch and end a local cluster of dtrain processes.
#include "cli/launch_command.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <nlohmann/json.hpp>

#include "strategies/child_process.hpp"
#include "config_schema/job_loader.hpp"
#include "engine/base/status.hpp"
#include "engine/threads.hpp"
#include "strategies/strategy.hpp"

namespace dtrain::cli {
namespace {

struct Task {
  std::string type;
  int index = 0;
  std::string address;
  TaskShare share{0, {}};  // threads 0: no --threads from launch; cpus empty: not pinned
  Child child;
  int exit_code = -1;  // -1 while running
  int forwarded = 0;   // the stop signal passed on to it (0: none yet)
};

// Gives each task its threads and CPUs (see launch_command.hpp) and returns
// launch's start-up line about them.
std::string share_threads(const LaunchArgs& a, const JobSpec& job, std::vector<Task>& tasks) {
  const ThreadBudget budget = detect_thread_budget();
  const ThreadChoice choice =
      choose_threads(a.threads > 0 ? std::optional<int>(a.threads) : std::nullopt, job.run.threads,
                     omp_num_threads_env(), budget.cpus);
  if (choice.source != "budget") {
    if (choice.source == "--threads") {
      for (Task& t : tasks) t.share.threads = choice.threads;
    }
    return fmt::format("threads: {} per task from {}, not pinned ({})", choice.threads, choice.source,
                       budget.describe());
  }
  std::vector<Task*> compute;
  for (Task& t : tasks) {
    if (t.type == "chief" || t.type == "worker") compute.push_back(&t);
    else t.share.threads = 1;
  }
  const std::vector<TaskShare> shares = divide_budget(budget, static_cast<int>(compute.size()));
  std::vector<std::string> parts;
  for (size_t i = 0; i < compute.size(); ++i) {
    compute[i]->share = shares[i];
    if (a.no_pin) compute[i]->share.cpus.clear();
    parts.push_back(fmt::format("{} {} {} thread{}{}", compute[i]->type, compute[i]->index, shares[i].threads,
                                shares[i].threads == 1 ? "" : "s",
                                compute[i]->share.cpus.empty() ? "" : " on CPU " + cpu_list(shares[i].cpus)));
  }
  std::string line = fmt::format("threads: {}; {}", budget.describe(), fmt::join(parts, ", "));
  if (a.no_pin) {
    line += " (not pinned: --no-pin)";
  } else if (shares[0].cpus.empty()) {
    line += fmt::format(" (not pinned: fewer CPUs than the {} training tasks)", compute.size());
  }
  if (compute.size() < tasks.size()) line += "; ps and evaluator tasks 1 thread each, not pinned";
  if (!choice.note.empty()) line += "; " + choice.note;
  return line;
}

// How long the other tasks have to end by themselves after one failed (the
// coordination service tells them at once) before launch stops them; then
// how long SIGTERM has before SIGKILL.
constexpr std::chrono::seconds kStopGrace{10};
constexpr std::chrono::seconds kKillGrace{5};

// "exited with code 2", or "was killed by SIGKILL" (try_reap gives 128 + signal).
std::string describe_exit(int code) {
  if (code > 128 && code < 128 + 65) {
    const char* abbrev = sigabbrev_np(code - 128);
    return fmt::format("was killed by {}",
                       abbrev != nullptr ? "SIG" + std::string(abbrev) : std::to_string(code - 128));
  }
  return fmt::format("exited with code {}", code);
}

// Whether process `pid` has a handler for `sig` (SigCgt in /proc/PID/status).
// A dtrain task installs its handlers before main; until then, while the
// shared libraries load, a stop signal would kill it.
bool catches(pid_t pid, int sig) {
  std::FILE* f = std::fopen(fmt::format("/proc/{}/status", pid).c_str(), "r");
  if (f == nullptr) return true;  // gone: it will be reaped
  char line[256];
  bool caught = true;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, "SigCgt:", 7) == 0) {
      caught = (std::strtoull(line + 7, nullptr, 16) >> (sig - 1)) & 1;
      break;
    }
  }
  std::fclose(f);
  return caught;
}

// Prints a task's output line with its "[type index] " prefix.
void print_line(std::FILE* out, const std::string& prefix, std::string_view line) {
  std::fprintf(out, "%s%.*s\n", prefix.c_str(), static_cast<int>(line.size()), line.data());
  std::fflush(out);
}

}  // namespace

Status no_cluster_addresses(const JobSpec& job, const std::string& path, const char* how) {
  if (job.cluster.tasks().empty()) return Status::Ok();
  return config_error(fmt::format("{}: cluster: the job lists cluster addresses, which take precedence over the "
                                  "TF_CONFIG that {} gives each task; remove them (keep cluster.timeout_secs) to use {}",
                                  path, how, how));
}

namespace {

// How one start of the cluster ended.
struct Outcome {
  int code = 0;       // 0, or the exit code of the first task that failed (kCluster for one that died)
  std::string cause;  // that task and how it ended, e.g. "worker 1 (127.0.0.1:4242) was killed by SIGKILL"
  int forwarded = 0;  // the stop signal launch passed on (0: none)
  std::vector<std::string> lost;  // workers lost without ending the training (strategy.elastic)
};

// Addresses for every task: --port-base's ports, else free loopback ports,
// never one port twice; the TF_CONFIG cluster of them.
Status assign_addresses(const LaunchArgs& a, std::vector<Task>& tasks, nlohmann::json& cluster) {
  cluster = nlohmann::json::object();
  std::set<int> taken;  // the kernel may offer a port it gave an earlier task again: pick another
  for (size_t i = 0; i < tasks.size(); ++i) {
    int port = a.port_base > 0 ? a.port_base + static_cast<int>(i) : free_port(/*loopback_only=*/true);
    for (int tries = 0; a.port_base <= 0 && port > 0 && taken.count(port) != 0 && tries < 100; ++tries) {
      port = free_port(/*loopback_only=*/true);
    }
    if (taken.count(port) != 0) port = 0;
    taken.insert(port);
    if (port <= 0 || port > 65535) return config_error(fmt::format("launch: no port for task {}", i));
    tasks[i].address = fmt::format("127.0.0.1:{}", port);
    cluster[tasks[i].type].push_back(tasks[i].address);
  }
  return Status::Ok();
}

// Starts task t as `dtrain train` with its TF_CONFIG.
Status start_task(const LaunchArgs& a, const nlohmann::json& cluster, Task& t) {
  t.exit_code = -1;
  t.forwarded = 0;
  std::vector<std::string> argv = {self_exe(), "train", a.job};
  argv.insert(argv.end(), a.train_args.begin(), a.train_args.end());
  if (t.share.threads > 0) argv.insert(argv.end(), {"--threads", std::to_string(t.share.threads)});
  const nlohmann::json tf_config = {{"cluster", cluster}, {"task", {{"type", t.type}, {"index", t.index}}}};
  // DTRAIN_LAUNCH_PID: the task gets SIGTERM if this process dies
  // (PR_SET_PDEATHSIG, cli/main.cpp), so a kill -9 of launch stops its tasks
  // as a stop signal does (a checkpoint, exit 75) instead of leaving them training.
  auto child = spawn_child(argv, {"TF_CONFIG=" + tf_config.dump(), fmt::format("DTRAIN_LAUNCH_PID={}", ::getpid())},
                           "", t.share.cpus);
  if (!child) return runtime_error("launch: " + child.error().message);
  t.child = std::move(*child);
  return Status::Ok();
}

// Starts every task; on a failure the ones already started get SIGTERM.
Status start_tasks(const LaunchArgs& a, const nlohmann::json& cluster, std::vector<Task>& tasks) {
  for (Task& t : tasks) {
    if (Status s = start_task(a, cluster, t); !s) {
      for (Task& started : tasks) {
        if (&started == &t) break;
        ::kill(started.child.pid, SIGTERM);
      }
      return s;
    }
  }
  return Status::Ok();
}

// Relays the tasks' output and the stop signals until every task has ended.
// stops_cluster(t): whether t's failure ends the training (then launch stops
// the tasks that do not end by themselves). may_be_lost(t): whether t's
// death leaves the others training (strategy.elastic): it is no failure;
// rejoin(t) may then start it again (true when it did).
template <class StopsCluster, class MayBeLost, class Rejoin>
Outcome watch_tasks(std::vector<Task>& tasks, const StopSignals& signals, const StopsCluster& stops_cluster,
                    const MayBeLost& may_be_lost, const Rejoin& rejoin, const std::string& lost_why) {
  Outcome o;
  // After a task failed: when the rest get SIGTERM, then SIGKILL, if still running.
  std::optional<std::chrono::steady_clock::time_point> term_at, kill_at;
  for (;;) {
    // A stop signal goes on to every task once the task catches it (one
    // still loading would die of it; it catches it within a few ms).
    if (const int sig = signals.last(); sig != 0) {
      for (Task& t : tasks) {
        if (t.exit_code < 0 && t.forwarded != sig && catches(t.child.pid, sig)) {
          ::kill(t.child.pid, sig);
          t.forwarded = sig;
          o.forwarded = sig;
        }
      }
    }
    std::vector<pollfd> fds;
    std::vector<std::pair<Task*, bool>> owners;  // (task, is stderr)
    for (Task& t : tasks) {
      if (t.child.out_fd >= 0) {
        fds.push_back({t.child.out_fd, POLLIN, 0});
        owners.emplace_back(&t, false);
      }
      if (t.child.err_fd >= 0) {
        fds.push_back({t.child.err_fd, POLLIN, 0});
        owners.emplace_back(&t, true);
      }
    }
    if (!fds.empty() && ::poll(fds.data(), fds.size(), 200) > 0) {
      for (size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        Task& t = *owners[i].first;
        const std::string prefix = fmt::format("[{} {}] ", t.type, t.index);
        std::FILE* out = owners[i].second ? stderr : stdout;
        auto print = [&](std::string_view line) { print_line(out, prefix, line); };
        if (owners[i].second) {
          read_lines(t.child.err_fd, t.child.err_buf, print);
        } else {
          read_lines(t.child.out_fd, t.child.out_buf, print);
        }
      }
    } else if (fds.empty()) {
      ::usleep(50000);
    }
    bool running = false;
    for (Task& t : tasks) {
      if (t.exit_code >= 0) continue;
      if (auto code = try_reap(t.child.pid)) {
        t.exit_code = *code;
        if (t.exit_code != 0) {
          const std::string how = fmt::format("{} {} ({}) {}", t.type, t.index, t.address, describe_exit(t.exit_code));
          std::fprintf(stderr, "dtrain launch: %s\n", how.c_str());
          // A task killed by a signal (not one launch forwarded) died: a cluster
          // error. The evaluator ends with a forwarded signal's default action
          // (it has nothing to save): not a failure.
          const bool died = t.exit_code > 128 && o.forwarded == 0;
          // An evaluator that lost the coordination service (exit 4) with it.
          const bool cut_off = t.type == "evaluator" && t.exit_code == static_cast<int>(ExitCode::kCluster) &&
                               o.forwarded == 0;
          if ((died || cut_off) && may_be_lost(t) && signals.last() == 0) {
            // Its last output first (the pipes of a dead process end at once).
            const std::string prefix = fmt::format("[{} {}] ", t.type, t.index);
            for (int tries = 0; tries < 1000 && (t.child.out_fd >= 0 || t.child.err_fd >= 0); ++tries) {
              if (t.child.out_fd >= 0) {
                read_lines(t.child.out_fd, t.child.out_buf, [&](std::string_view l) { print_line(stdout, prefix, l); });
              }
              if (t.child.err_fd >= 0) {
                read_lines(t.child.err_fd, t.child.err_buf, [&](std::string_view l) { print_line(stderr, prefix, l); });
              }
            }
            if (rejoin(t)) {
              running = true;
              continue;
            }
            if (t.type == "ps") {
              std::fprintf(stderr, "dtrain launch: %s: training pauses until ps %d starts again (at most "
                           "cluster.timeout_secs; launch restarts it under --max-restarts)\n", lost_why.c_str(),
                           t.index);
            } else {
              std::fprintf(stderr, "dtrain launch: %s: the other tasks go on without %s %d\n", lost_why.c_str(),
                           t.type.c_str(), t.index);
            }
            o.lost.push_back(how);
            continue;
          }
          const bool evaluator_stopped = t.type == "evaluator" && o.forwarded != 0 && t.exit_code == 128 + o.forwarded;
          if (o.code == 0 && !evaluator_stopped) {
            o.code = died ? static_cast<int>(ExitCode::kCluster) : t.exit_code;
            o.cause = how;
          }
          // A stop (75) ends every task by itself; any other failure should too,
          // told by the coordination service, but a task that never joined
          // the cluster leaves the others waiting for it: launch stops them.
          if (t.exit_code != static_cast<int>(ExitCode::kStopped) && stops_cluster(t) && !term_at) {
            term_at = std::chrono::steady_clock::now() + kStopGrace;
          }
        }
      } else {
        running = true;
      }
    }
    const auto now = std::chrono::steady_clock::now();
    if (running && term_at && now >= *term_at && !kill_at) {
      std::fprintf(stderr, "dtrain launch: the other tasks did not end within %lld s of the failure; stopping them\n",
                   static_cast<long long>(kStopGrace.count()));
      for (Task& t : tasks) {
        if (t.exit_code < 0) ::kill(t.child.pid, SIGTERM);
      }
      kill_at = now + kKillGrace;
    } else if (running && kill_at && now >= *kill_at) {
      for (Task& t : tasks) {
        if (t.exit_code < 0) ::kill(t.child.pid, SIGKILL);
      }
      kill_at = now + std::chrono::hours(1);
    }
    const bool open_pipes = std::any_of(tasks.begin(), tasks.end(), [](const Task& t) {
      return t.child.out_fd >= 0 || t.child.err_fd >= 0;
    });
    if (!running && !open_pipes) return o;
  }
}

}  // namespace

int run_launch(const LaunchArgs& a) {
  auto fail = [](const Error& e) {
    std::fprintf(stderr, "dtrain: %s\n", e.message.c_str());
    return static_cast<int>(exit_code_for(e.kind));
  };
  if (a.workers < 1) return fail(config_error("launch: --workers must be at least 1"));
  if (a.max_restarts < 0) return fail(config_error("launch: --max-restarts must be at least 0"));
  // The job's own cluster section would take precedence over TF_CONFIG.
  LoadOptions options;
  options.overrides = a.overrides;
  auto job = load_job(a.job, options);
  if (!job) return fail(job.error());
  if (Status s = no_cluster_addresses(*job, a.job, "dtrain launch"); !s) return fail(s.error());

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

  StopSignals signals;
  // The tasks whose failure ends the training (as the coordination service
  // monitors them): not the evaluator, nor in async parameter_server mode a
  // worker other than the first (training goes on without it).
  const bool workers_may_die = strategy_traits(job->strategy).workers_may_die;
  auto stops_cluster = [&](const Task& t) {
    if (t.type == "evaluator") return false;
    return !(workers_may_die && t.type == "worker" && (a.chief || t.index > 0));
  };
  // strategy.elastic: a worker other than the one hosting the coordination
  // service may be lost; the survivors regroup (and stop by themselves,
  // exit 4, when fewer than min_workers remain).
  // Likewise any worker but the first in async parameter_server mode
  // (workers_may_die): training goes on without it, and one restarted trains on.
  const bool elastic = strategy_traits(job->strategy).elastic && job->strategy.elastic_min_workers > 0;
  const std::string lost_why = elastic ? "strategy.elastic" : "parameter_server mode async";
  // And in an elastic sync parameter_server job a ps task: training
  // pauses until it is started again, and every ps is reloaded from the
  // latest checkpoint.
  const bool ps_may_be_lost = elastic && strategy_traits(job->strategy).needs_ps_tasks;
  // Elastic collective: the task hosting the coordination service too (a
  // survivor hosts a new one and takes over the chief's duties), and the
  // evaluator, which ends when that service goes and finds the new one
  // when started again.
  const bool host_may_be_lost = elastic && !strategy_traits(job->strategy).needs_ps_tasks;
  auto may_be_lost = [&](const Task& t) {
    if (t.type == "ps") return ps_may_be_lost;
    if (t.type == "evaluator" || t.type == "chief" || (t.type == "worker" && t.index == 0 && !a.chief)) {
      return host_may_be_lost;
    }
    return (elastic || workers_may_die) && t.type == "worker";
  };
  const std::string threads_line = share_threads(a, *job, tasks);
  for (int restarts = 0;; ++restarts) {
    nlohmann::json cluster;
    if (Status s = assign_addresses(a, tasks, cluster); !s) return fail(s.error());
    std::fprintf(stderr, "dtrain launch: %zu tasks on 127.0.0.1: %s\n", tasks.size(), cluster.dump().c_str());
    if (restarts == 0) std::fprintf(stderr, "dtrain launch: %s\n", threads_line.c_str());
    if (Status s = start_tasks(a, cluster, tasks); !s) return fail(s.error());
    // strategy.elastic: a lost worker starts again alone, with its identity,
    // and joins the running training (each counts as a restart).
    auto rejoin = [&](Task& t) {
      if (restarts >= a.max_restarts) return false;
      ++restarts;
      std::fprintf(stderr,
                   "dtrain launch: restarting %s %d alone with its identity (restart %d of %d): %s (%s)\n",
                   t.type.c_str(), t.index, restarts, a.max_restarts,
                   t.type == "ps"          ? "every ps is reloaded from the latest checkpoint"
                   : t.type == "evaluator" ? "it goes on watching the model directory"
                                           : "it joins the running training",
                   lost_why.c_str());
      if (Status s = start_task(a, cluster, t); !s) {
        std::fprintf(stderr, "dtrain: %s\n", s.error().message.c_str());
        t.exit_code = 1;
        return false;
      }
      return true;
    };
    const Outcome o = watch_tasks(tasks, signals, stops_cluster, may_be_lost, rejoin, lost_why);
    if (o.code == 0) {
      const std::string after =
          restarts == 0 ? "" : fmt::format(" (after {} restart{})", restarts, restarts == 1 ? "" : "s");
      if (o.lost.empty()) {
        std::fprintf(stderr, "dtrain launch: all %zu tasks finished%s\n", tasks.size(), after.c_str());
      } else {
        std::fprintf(stderr, "dtrain launch: training finished%s on %zu of %zu tasks; lost along the way: %s\n",
                     after.c_str(), tasks.size() - o.lost.size(), tasks.size(), fmt::format("{}", fmt::join(o.lost, "; ")).c_str());
      }
      return 0;
    }
    // Only a lost task restarts the cluster: a stop, a config or data error
    // would end the same way again.
    const bool lost = o.code == static_cast<int>(ExitCode::kCluster) && o.forwarded == 0 && signals.last() == 0;
    if (!lost || restarts >= a.max_restarts) {
      if (lost && a.max_restarts > 0) {
        std::fprintf(stderr, "dtrain launch: %s; not restarting: --max-restarts %d used up\n", o.cause.c_str(),
                     a.max_restarts);
      }
      return o.code;
    }
    std::fprintf(stderr,
                 "dtrain launch: %s; restarting every task with its identity (restart %d of %d): they resume from "
                 "the latest checkpoint in the model directory\n",
                 o.cause.c_str(), restarts + 1, a.max_restarts);
  }
}

}  // namespace dtrain::cli
