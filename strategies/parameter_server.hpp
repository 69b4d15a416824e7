// parameter_server (TensorFlow's ParameterServerStrategy / replica_device_
// setter with SyncReplicasOptimizer): variables and optimizer slots live in
// the ps tasks, sharded and placed by ps_placement; each worker pulls them
// (one RPC per ps per step, all ps in parallel), runs forward and backward on
// its devices with towers semantics (one local copy, gradients summed over the
// local replicas), and pushes the gradients. sync: the ps apply one update per
// step from exactly one gradient per worker (equal to one_device with the
// global batch); async: each push is applied on arrival.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "strategies/cluster_runtime.hpp"
#include "strategies/ps_placement.hpp"
#include "strategies/ps_service.hpp"
#include "strategies/replicated.hpp"

namespace dtrain {

class ParameterServerStrategy final : public ReplicatedStrategy {
 public:
  ParameterServerStrategy(Program& program, std::vector<Device> devices, ClusterRuntime& cluster,
                          PsPlacement placement, std::vector<std::unique_ptr<PsClient>> ps, bool sync,
                          std::string model_dir);
  std::string name() const override { return "parameter_server"; }
  bool is_chief() const override { return cluster_.resolved().is_chief(); }
  // The rank and the number of workers of the current group (elastic sync
  // training changes them).
  int worker_index() const override { return rank_; }
  int num_workers() const override { return workers_; }
  Status create_variables() override;
  // The chief's checkpoint: a snapshot of every ps at the current step.
  std::vector<std::pair<std::string, Tensor>> logical_state() override;
  Status restore(const CheckpointData& ckpt) override;
  StepOutput train_step(const Batch& batch, int64_t step, float lr) override;
  Status sync_start(std::vector<int64_t>& values) override;
  // sync: every worker's flag through the coordination service (a stop
  // signal that reached some workers stops all after the same step); async:
  // the worker's own (workers stop on their own, as they train).
  bool any_worker(bool flag) override;
  int64_t global_step_after(int64_t step) const override;
  std::string describe() const override;
  std::vector<std::string> comm_report(const CommTotals& totals) const override;
  Status finish_training() override;
  std::pair<double, double> last_comm_seconds() const override { return {last_rpc_seconds_, last_rpc_seconds_}; }
  // strategy.elastic in sync mode: the ps hold the state, and keep it one
  // update back; after a change of workers the group's rank 0 fences every
  // ps at the new generation, steps back those one update past the lowest,
  // and the group redoes the lowest step over the new split.
  bool elastic() const override { return elastic_; }
  bool membership_lost() const override { return lost_.has_value(); }
  bool membership_changed() const override { return elastic_ && (lost_.has_value() || cluster_.membership_superseded()); }
  bool rejoining() const override { return elastic_ && cluster_.rejoining(); }
  Result<Regrouped> regroup(int64_t completed, int64_t global_rows,
                            const std::function<int64_t(int64_t)>& position_at) override;
  // Bytes pulled and pushed so far by this worker.
  int64_t bytes_pulled() const;
  int64_t bytes_pushed() const;

 private:
  // Pulls every ps (min_step) in parallel into values_; returns the largest step seen.
  int64_t pull_all(int64_t min_step);
  [[noreturn]] void fail(const Error& e);
  // A ps call or an agreement failed: in elastic training, because the
  // workers changed (recorded; the loop regroups), else the process ends.
  void failed(const Error& e);
  // Agreements are named by the group's generation and a count since it formed.
  std::string agreement_name();
  // The chief: every ps gets its shards of values_ and slots_ at `step`.
  Status init_ps(int64_t step);
  // Elastic, after a ps task started again: values_ and slots_ from the
  // latest checkpoint (its step, input position and path), then init_ps.
  Status reload_ps(int64_t& step, int64_t& position, std::string& from);

  ClusterRuntime& cluster_;
  PsPlacement placement_;
  std::vector<std::unique_ptr<PsClient>> ps_;
  bool sync_;
  std::string model_dir_;                   // where a restarted ps is reloaded from (elastic)
  std::vector<Tensor> values_;              // this worker's copy, refreshed by pulls
  std::vector<std::vector<Tensor>> slots_;  // only used to initialise the ps and by restore
  int64_t seen_step_ = 0;                   // the ps step of the last pull
  int64_t agreements_ = 0;                  // any_worker calls so far (each names one agreement)
  int64_t snapshot_step_ = 0;
  size_t reported_dead_ = 0;                // async: workers lost so far, already reported
  size_t reported_back_ = 0;                // async: workers that started again, already reported
  double last_rpc_seconds_ = 0;
  // Elastic sync training.
  bool elastic_ = false;
  int rank_ = 0, workers_ = 1;          // in the current group
  std::vector<int> member_ranks_;       // the group's workers, by their rank in the cluster
  int64_t generation_ = 0;              // the group's membership generation
  int64_t global_rows_ = 0;             // the global batch (0: this worker's batch times the workers)
  std::optional<Error> lost_;           // the first failure since the group formed
};

}  // namespace dtrain
