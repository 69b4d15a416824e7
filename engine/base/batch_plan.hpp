// The rows of one training step, from a data source's batch size: the one
// place the job's batch_size or batch_size_per_replica is multiplied by the
// replicas and the workers, or divided among them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dtrain {

struct BatchPlan {
  int64_t per_process = 0;  // rows one training process reads per step (its input's batch)
  int replicas = 1;         // model replicas in the process, each taking a contiguous share
  int workers = 1;          // training processes stepping together, each with per_process rows

  // Rows of one step over every worker.
  int64_t global() const { return per_process * workers; }
  // Rows each replica takes: per_replica(), one more on the first extra() replicas.
  int64_t per_replica() const { return per_process / replicas; }
  int64_t extra() const { return per_process % replicas; }
  // The rows an input orders as one batch: every worker's together when the
  // workers cut each batch into rows (shard: data), else this process's.
  int64_t ordered(bool rows_across_workers) const { return rows_across_workers ? global() : per_process; }
  // "12 = 3 replica(s) x 4", "13 = 3 replica(s) x 4 (+1 on the first 1)".
  std::string replica_split() const {
    std::string s = std::to_string(per_process) + " = " + std::to_string(replicas) + " replica(s) x " +
                    std::to_string(per_replica());
    if (extra() != 0) s += " (+1 on the first " + std::to_string(extra()) + ")";
    return s;
  }
};

// batch_size_per_replica (when given) times the replicas, else batch_size, per
// process. REQUIRES: replicas >= 1, workers >= 1.
inline BatchPlan plan_batch(int64_t batch_size, std::optional<int64_t> batch_size_per_replica, int replicas,
                            int workers) {
  return BatchPlan{batch_size_per_replica ? *batch_size_per_replica * replicas : batch_size, replicas, workers};
}

}  // namespace dtrain
