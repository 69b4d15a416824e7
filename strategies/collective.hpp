// collective (tf.distribute.MultiWorkerMirroredStrategy): mirrored across the
// devices of every worker process. Within a worker the replicas' gradients
// are summed in process; across workers each bucket is then all-reduced by
// Gloo's ring over TCP on a communication thread, while backward goes on.
// Every copy on every worker applies the same update. Run without a cluster
// it is mirrored on this process's devices (a cluster of one).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "strategies/cluster_runtime.hpp"
#include "strategies/gloo_comm.hpp"
#include "strategies/mirrored.hpp"

namespace dtrain {

class CollectiveStrategy final : public MirroredStrategy {
 public:
  // cluster may be null (a single process); else comm spans its training tasks.
  CollectiveStrategy(Program& program, std::vector<Device> devices, double bucket_bytes,
                     ClusterRuntime* cluster, std::unique_ptr<GlooComm> comm);
  std::string name() const override { return "collective"; }
  // Rank 0 of the group; after the coordination service's host was lost,
  // the member that took it over (ClusterRuntime::is_chief).
  bool is_chief() const override { return cluster_ == nullptr || !cluster_->is_training_task() || cluster_->is_chief(); }
  // A rejoining process (no group yet) counts as its place in the cluster.
  int worker_index() const override { return comm_ ? comm_->rank() : rejoining_ ? cluster_->rank() : 0; }
  int num_workers() const override { return comm_ ? comm_->size() : rejoining_ ? cluster_->size() : 1; }

  // Sums over the global batch of every worker (loss, examples, metrics).
  StepOutput train_step(const Batch& batch, int64_t step, float lr) override;
  Status sync_start(std::vector<int64_t>& values) override;
  bool any_worker(bool flag) override;
  std::pair<double, double> last_comm_seconds() const override { return last_comm_; }
  std::vector<std::string> comm_report(const CommTotals& totals) const override;

  bool elastic() const override { return (comm_ != nullptr || rejoining_) && cluster_ != nullptr && cluster_->elastic(); }
  void keep_state(int64_t step) override;
  bool membership_lost() const override { return lost_.has_value(); }
  bool membership_changed() const override { return lost_.has_value() || cluster_->membership_superseded(); }
  bool rejoining() const override { return rejoining_; }
  Result<Regrouped> regroup(int64_t completed, int64_t global_rows,
                            const std::function<int64_t(int64_t)>& position_at) override;

 private:
  // Bucket `bucket` of replica 0's gradients summed over the workers.
  Status reduce_bucket(size_t bucket);
  // Sums `values` over the workers; a failure ends the process (see
  // ClusterRuntime::fail_after_comm_error), or when elastic marks the
  // membership lost (`values` keep this worker's own).
  void sum_over_workers(std::vector<double>& values);
  // A collective failed: elastic training regroups, else the process ends.
  void comm_failed(const Error& e);

  ClusterRuntime* cluster_;
  std::unique_ptr<GlooComm> comm_;
  std::vector<std::vector<float>> flat_;  // per bucket, used by the communication thread only
  std::pair<double, double> last_comm_{0, 0};
  // Elastic training: the first collective error since the last regroup,
  // and the state at the start of the last two steps.
  std::optional<Error> lost_;
  struct Kept {
    int64_t step = -1;
    std::vector<Tensor> state;  // state_tensors(0)'s copies
    LossScale loss_scale{false};
  };
  Kept kept_[2];
  bool rejoining_ = false;  // started again after it was lost: no group until regroup()
  bool stepped_ = false;    // a step ran its all-reduces (the communication thread has had work)
  // Rank 0's state (variables, slots, loss scale) to every rank, and `values`.
  Status broadcast_state(std::vector<int64_t>& values);
  // Puts back the state kept at the start of `step`; without one, true only
  // when `step` is `completed` (this worker's state is that step's start).
  bool restore_kept(int64_t step, int64_t completed);
};

}  // namespace dtrain
