// dtrain train JOB --remote-cluster SPEC: the client of `dtrain server`s.
// It reserves one server per task, gives each task a TF_CONFIG built from the
// ports the servers picked, runs the job on all of them, prints their output
// prefixed "[worker 1] " as it arrives, and stops them when interrupted
// (the first SIGINT/SIGTERM is passed on to every task, so the chief saves a
// checkpoint; a second one drops the connections, which ends the tasks too).
#pragma once

#include <string>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "engine/base/status.hpp"

namespace dtrain {

// One entry of --remote-cluster: "[type=]host:port" (no type: a worker).
struct RemoteTaskSpec {
  std::string type;  // chief, worker, ps, evaluator
  int index = 0;     // among the tasks of its type, in the order given
  std::string server;  // host:port of its dtrain server
  std::string host;    // the host part: the task serves there too
};

// Parses "chief=h:7000,h2:7000,ps=h3:7000": tasks in order, indices per type.
Result<std::vector<RemoteTaskSpec>> parse_remote_cluster(const std::string& spec);

// The TF_CONFIG "cluster" object with each task at `host:task_ports[i]`.
std::string remote_cluster_json(const std::vector<RemoteTaskSpec>& tasks, const std::vector<int>& task_ports);

struct RemoteRun {
  std::string job_path;                // as the user gave it (for messages)
  JobSpec job;                         // loaded with --set; run.model_dir absolute
  std::vector<RemoteTaskSpec> tasks;
  std::vector<std::string> train_args;  // --no-eval, --log-format for every task
};

// Reserves, runs and watches the tasks. Returns 0 when all succeeded, else
// the exit code of the first task that failed (4 when a server could not be
// reached or refused).
int run_remote_cluster(const RemoteRun& run);

}  // namespace dtrain
