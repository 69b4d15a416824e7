// dtrain launch: a local cluster of dtrain train processes on loopback, each
// with its TF_CONFIG, for trying multi-worker jobs on one machine.
#pragma once

#include <string>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "engine/base/status.hpp"

namespace dtrain::cli {

struct LaunchArgs {
  int workers = 2;          // worker tasks (worker 0 is the chief unless `chief`)
  bool chief = false;       // add a separate chief task
  bool evaluator = false;   // add an evaluator task
  int ps = 0;               // ps tasks (strategy parameter_server)
  int port_base = 0;        // 0: free ports picked by the system
  int threads = 0;          // --threads for every task; 0: launch divides its thread budget
  bool no_pin = false;      // never pin workers to their own CPUs (default: when the budget allows)
  int max_restarts = 0;     // restarts of the whole cluster after a lost task
  std::string job;
  std::vector<std::string> overrides;   // --set, for reading run.threads
  std::vector<std::string> train_args;  // passed to every `dtrain train` (--set, --model-dir, ...)
};

// Threads: with --threads, run.threads or OMP_NUM_THREADS every task uses
// that count and nothing is pinned. Otherwise the workers and the chief
// share launch's thread budget (engine/threads.hpp, divide_budget): each gets
// `--threads K` and, when there are at least as many CPUs as such tasks, its
// own CPUs (sched_setaffinity; not with --no-pin); ps and evaluator tasks get `--threads 1` and
// are not pinned, nor counted: they mostly wait on the network or for
// checkpoints. The start-up line says which task got what.
//
// Starts the tasks, prefixes each output line with "[type index] ", forwards
// SIGINT/SIGTERM to every task, and waits for all. Returns 0 when every task
// succeeded, else the exit code of the first task that failed.
//
// max_restarts: when a task is lost (killed by a signal launch did not pass
// on, or the cluster failed: exit code 4), every task ends (the coordination
// service tells the survivors), then all start again with their identities
// (type and index) on new ports and resume from the latest checkpoint of the
// model directory, up to max_restarts times. Exact resume makes the result
// the unfaulted run's. A stop signal, a config or a data error is not restarted.
int run_launch(const LaunchArgs& args);

// The job's own cluster addresses would take precedence over the TF_CONFIG
// that `how` (dtrain launch, --remote-cluster) gives each task: a config
// error naming the file.
Status no_cluster_addresses(const JobSpec& job, const std::string& path, const char* how);

}  // namespace dtrain::cli
