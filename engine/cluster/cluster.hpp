// Cluster resolution: which processes make up the training cluster and which
// task this process is, from the job file, TF_CONFIG, Slurm, or a local run.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "engine/base/status.hpp"

namespace dtrain {

// Reads one environment variable; nullopt when unset. Tests pass a map-backed
// lookup, the CLI passes process_env().
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The real process environment (std::getenv).
EnvLookup process_env();

// A task of the cluster: type is one of chief, worker, ps, evaluator.
struct TaskSpec {
  std::string type;
  int64_t index = 0;
};

// TF_CONFIG's "cluster": task type -> "host:port" addresses, in index order.
// Types with no addresses are absent (never an empty list).
struct ClusterSpec {
  std::map<std::string, std::vector<std::string>> tasks;

  size_t count(const std::string& type) const;   // addresses of `type` (0 if absent)
  size_t num_training_tasks() const;              // chief + worker
  bool empty() const { return tasks.empty(); }
};

// The task types TF_CONFIG knows, in the order dtrain prints them.
const std::vector<std::string>& task_types();

struct ResolvedCluster {
  ClusterSpec cluster;
  TaskSpec task;
  std::string address;      // this task's host:port; "" for a local process or an unlisted evaluator
  std::string source;       // "job file", "TF_CONFIG", "Slurm" or "local"
  double timeout_secs = 60;  // cluster.timeout_secs of the job
  std::vector<std::string> notes;  // how legacy or sparse TF_CONFIG forms were read

  // As TensorFlow's multi_worker_util.is_chief: the chief, or worker 0 when
  // the cluster has no chief. A local process is chief of a cluster of one.
  bool is_chief() const;
  bool is_local() const { return source == "local"; }
  // "chief", "worker", "ps" or "evaluator" (worker 0 without a chief is "chief").
  std::string role() const;
};

// Checks a cluster and task found in `source` before any connection is tried.
// Errors are kConfig and start with `where` ("TF_CONFIG", "job.yaml", "Slurm"):
// unknown task types, bad host:port, duplicate addresses, more than one chief
// or evaluator, the evaluator's address among the training tasks, no training
// task, ps tasks for a strategy other than parameter_server, and a task whose
// type or index is not in the cluster. An evaluator need not be listed in the
// cluster (TensorFlow: the evaluator is not part of the training cluster);
// then its index must be 0 and it has no address.
Status validate_cluster(const ClusterSpec& cluster, const TaskSpec& task, const std::string& strategy_type,
                        const std::string& where);

// Resolves, in order of precedence:
//  1. the job file's cluster section, when it lists any address (cluster.task required);
//  2. TF_CONFIG, when set, non-empty and its "cluster" lists any address;
//  3. Slurm, when SLURM_PROCID is set and non-empty (any SLURM_NTASKS >= 1: one task is a
//     Slurm cluster of one; see slurm.hpp);
//  4. a single local process: chief 0 of a cluster of one, source "local".
Result<ResolvedCluster> resolve_cluster(const JobSpec& job, const EnvLookup& env);

// The report of `dtrain cluster`: source, each task type's addresses, this
// task (type, index, address) and its role.
std::string format_cluster(const ResolvedCluster& rc);

}  // namespace dtrain
