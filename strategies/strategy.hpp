// The strategy contract (DESIGN.md): a Strategy decides where variables live,
// how a batch is split into replica shards, how gradients and losses are
// reduced, and who is chief — and nothing else. The estimator drives every
// strategy through this interface only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/device.hpp"
#include "engine/base/job_spec.hpp"
#include "datasets/dataset.hpp"
#include "engine/io/checkpoint.hpp"
#include "engine/base/status.hpp"
#include "strategies/program.hpp"

namespace dtrain {

// Sums over the global batch of one step (all replicas, all workers).
struct StepOutput {
  double loss_sum = 0;           // sum of per-example losses
  int64_t examples = 0;
  std::vector<double> metric_state;  // summed metric states (Program::metric_offsets layout)
  // Evaluation steps only (empty in training): each output's predictions
  // (rows, output j's shape...), Loss::predictions of its logits, on the host,
  // rows in input order; accumulate() concatenates them. The evaluation
  // report (engine/metrics/eval_report.hpp) is made from them.
  std::vector<Tensor> predictions;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  // The devices this process computes on, one replica each, e.g. {cpu:0}.
  virtual std::vector<Device> devices() const = 0;
  int num_replicas() const { return static_cast<int>(devices().size()); }
  // Chief writes checkpoints and train summaries (DESIGN.md, contract 4).
  virtual bool is_chief() const { return true; }

  // 1. Creates the variables of program.model and the optimizer slots where
  // this strategy keeps them, initialised from program.seed.
  virtual Status create_variables() = 0;
  // One logical copy of every variable and slot ("var", "var/slot"), the
  // checkpoint's content whatever the strategy.
  virtual std::vector<std::pair<std::string, Tensor>> logical_state() = 0;
  // Assigns every variable and slot from a checkpoint (into every copy).
  // REQUIRES: the checkpoint was checked against the model.
  virtual Status restore(const CheckpointData& ckpt) = 0;

  // 2+3. One training step on the global batch: split, forward/backward on
  // each replica, reduce gradients by loss_reduction, apply the optimizer with
  // learning rate lr for update number `step` (0-based global step).
  virtual StepOutput train_step(const Batch& batch, int64_t step, float lr) = 0;
  // The gradients the last train_step applied, one ("name", host tensor of
  // the variable's shape) per trainable variable in Model::variables()
  // order: summed over the global batch, the loss scale divided out, after
  // optimizer.clip_by_global_norm (a step that mixed precision skipped
  // leaves them scaled and non-finite). Valid until the next train_step;
  // empty where this process does not hold them (parameter_server: the ps
  // tasks apply the pushed gradients). Read by run.histogram_steps' hook on
  // the steps it writes, so it costs nothing otherwise.
  virtual std::vector<std::pair<std::string, Tensor>> applied_gradients() { return {}; }
  // Evaluation: loss and metric sums over the batch (training = false).
  virtual StepOutput eval_step(const Batch& batch) = 0;
  // Predictions of every output (B, output j's shape...) in input order,
  // one tensor per output (Model::outputs()).
  virtual std::vector<Tensor> predict_outputs(const Batch& batch) = 0;
  // The first (or only) output's predictions.
  Tensor predict_step(const Batch& batch) { return predict_outputs(batch)[0]; }

  // Multi-worker strategies (one process per worker). This worker's index
  // among the training tasks and their number: the input is sharded by them.
  virtual int worker_index() const { return 0; }
  virtual int num_workers() const { return 1; }
  // Makes every worker start from the chief's state: broadcasts the chief's
  // variables and slots, and `values` (global step, input position), to all.
  virtual Status sync_start(std::vector<int64_t>& values) {
    (void)values;
    return Status::Ok();
  }
  // True on every worker when `flag` is true on any (a stop signal, the end
  // of a worker's input), so that all workers stop after the same step.
  virtual bool any_worker(bool flag) { return flag; }
  // The lines worth printing about communication at the end of training,
  // from the totals of last_comm_seconds() over `steps` steps of `step_ms`
  // each (none for single-process strategies).
  struct CommTotals {
    double seconds = 0, exposed_seconds = 0;
    int64_t steps = 0;
    double step_ms = 0;
  };
  virtual std::vector<std::string> comm_report(const CommTotals& totals) const {
    (void)totals;
    return {};
  }
  // Start-up details worth printing (e.g. a parameter server placement); "".
  virtual std::string describe() const { return ""; }
  // After the last step (and the chief's final checkpoint): ends what the
  // strategy started (parameter_server: the chief waits for the workers,
  // then stops the ps tasks).
  virtual Status finish_training() { return Status::Ok(); }
  // The global step after a train_step made for `step` (0-based): step + 1,
  // except for asynchronous parameter servers, where every worker's update
  // advances it and the ps report where it is.
  virtual int64_t global_step_after(int64_t step) const { return step + 1; }
  // Elastic training (collective with strategy.elastic.min_workers): the
  // loop keeps the state at the start of each step; when a worker is lost,
  // every collective of the step fails and membership_lost() turns true;
  // regroup() then forms the group of the survivors and rolls back to the
  // state of the first step not completed by every one of them.
  virtual bool elastic() const { return false; }
  // Keeps this process's state at the start of `step` in memory (variables,
  // slots, the loss scale); the last two steps' are kept.
  virtual void keep_state(int64_t step) { (void)step; }
  // True once a collective failed because a worker was lost: nothing
  // computed since the last kept state may be used or saved.
  virtual bool membership_lost() const { return false; }
  // True when the membership changed (a worker lost or one joining): the
  // loop regroups at the start of the step.
  virtual bool membership_changed() const { return false; }
  // This process was lost earlier and started again: instead of sync_start
  // it joins the running training through regroup(kJoining, ...).
  virtual bool rejoining() const { return false; }
  static constexpr int64_t kJoining = -1;
  struct Regrouped {
    int64_t redo_step = 0;             // the step the group trains next
    // For a joining process, or every one when the group went back to a
    // checkpoint: the input's batches delivered at redo_step (-1: its own).
    int64_t input_position = -1;
    std::string redo_why = "the last step every one of them completed";
    std::vector<std::string> changes;  // who was lost or joined, how, after which step
    int workers = 0, rank = 0;         // the new group and this process's place in it
    int workers_before = 0;
    // Where each worker's rows of a global batch begin (workers + 1
    // boundaries, the last the global batch).
    std::vector<int64_t> row_cuts;
    bool restored = false;  // the state was put back (or received) inside the agreement
    // A joining process: the group's global batch (its own cluster spec may
    // count other workers); 0: the one given.
    int64_t global_rows = 0;
  };
  // After membership_lost() or membership_changed(): `completed` is the
  // number of steps this process finished (kJoining for a process that
  // joins), `global_rows` the global batch, `position_at(step)` the input
  // position kept for `step` (-1 if none). Restores the state kept for the
  // returned redo_step; a joining process receives it (and the input
  // position) from rank 0. Errors are kCluster (too few workers left, the
  // group could not form).
  virtual Result<Regrouped> regroup(int64_t completed, int64_t global_rows,
                                    const std::function<int64_t(int64_t)>& position_at) {
    (void)completed;
    (void)global_rows;
    (void)position_at;
    return Error{ErrorKind::kCluster, "this strategy is not elastic"};
  }
  // Seconds the last train_step spent in cross-worker communication, and the
  // part of it not overlapped with backward (0 for single-process strategies).
  virtual std::pair<double, double> last_comm_seconds() const { return {0, 0}; }
};

// The one table of strategies (strategies/registry.cpp). Resolves devices
// ("auto", num_gpus) and rejects what this build cannot run, with the field.
// `cluster` is this process's membership of a multi-task cluster (null for a
// single local process); collective and parameter_server need one to span
// processes and run as a cluster of one without.
class ClusterRuntime;
Result<std::unique_ptr<Strategy>> make_strategy(const JobSpec& job, Program& program,
                                                ClusterRuntime* cluster = nullptr);

// What a strategy needs of the cluster it runs in, from the strategy table's
// flags: cli/ and estimator/ read these, never strategy names.
struct StrategyTraits {
  bool spans_processes = false;  // trains across a cluster's tasks (one process otherwise)
  bool needs_ps_tasks = false;   // its variables live on the cluster's ps tasks
  bool workers_may_die = false;  // a worker other than the chief may end without stopping training
  bool elastic = false;          // can regroup over the workers that remain (strategy.elastic)
};
// The traits of spec.type (all false for a type not in the table).
StrategyTraits strategy_traits(const StrategySpec& spec);

// strategy.elastic fits the job: a strategy that regroups, nothing summed
// over the workers that is not regrouped, min_workers at most the cluster's
// `training_tasks` (-1: not known yet). Config errors name the field.
// make_strategy checks it; the CLI checks it before joining, so that every
// task stops with the same error.
Status check_elastic(const JobSpec& job, int training_tasks);

// What make_strategy checks before it needs the machine: the job's devices
// resolve, and every layer, loss, optimizer and reduction of `program` has a
// backend on each of them in the job's compute type (a config error naming
// the layer or field, the device and the type). Whether a GPU is present is
// not checked here: `dtrain validate` runs this on any machine.
Status check_job_devices(const JobSpec& job, const Program& program);

// Splits a global batch of `global` rows into `replicas` contiguous shards
// along dimension 0, as evenly as possible (the first global % replicas
// shards get one more row). Returns [begin, end) per replica.
std::vector<std::pair<int64_t, int64_t>> split_batch(int64_t global, int replicas);

}  // namespace dtrain
