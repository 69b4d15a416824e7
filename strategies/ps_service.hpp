// The parameter service of a ps task (strategy parameter_server): it holds
// its shards of the model's variables and their optimizer slots, and applies
// the optimizer to gradients pushed by the workers; workers pull the current
// values. gRPC, one service per ps task, one RPC per ps per pull or push.
//
// Synchronous mode (SyncReplicasOptimizer semantics): the update of global
// step s is applied once exactly one gradient for step s has arrived from
// every worker; the gradients are summed over the workers in tree_sum's
// grouping (strategies/tree_sum.hpp: ((g0 + g1) + g2), (g0 + g1) + (g2 + g3),
// ...), so the result does not depend on arrival order. A pull for step s waits until
// step s's values exist. Asynchronous mode: every push is applied on arrival
// and advances the global step by one.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "engine/base/status.hpp"
#include "engine/tensor.hpp"

namespace dtrain {

// One shard held by a ps task: rows [row_begin, row_end) along dimension 0
// of variable `name` (the whole variable when it is not partitioned; a
// scalar or 1-D variable has rows = its first dimension, or 1 for a scalar).
struct PsShard {
  std::string name;        // the variable's name, e.g. "dense_0/kernel"
  int64_t row_begin = 0, row_end = 0;
  Shape shape;             // the shard's shape (dimension 0 = row_end - row_begin)
  bool trainable = true;   // non-trainable shards are assigned (push_values), never optimized
};

struct PsConfig {
  OptimizerSpec optimizer;  // the job's optimizer (its slots live on the ps)
  bool sync = true;
  int num_workers = 1;      // workers pushing (sync: one gradient each per step)
  double timeout_secs = 60; // longest a pull/snapshot waits for a step before failing (kCluster)
  // strategy.elastic (sync): the ps keeps its state before each update, so
  // that a change of workers can step back one update (PsClient::fence).
  bool elastic = false;
};

// The state of a ps task's shards at one global step.
struct PsState {
  int64_t step = 0;
  std::vector<Tensor> values;              // per shard, in PsClient::init order
  std::vector<std::vector<Tensor>> slots;  // per shard, the optimizer's slots (slot_names() order)
};

class ParameterService {
 public:
  // Listens on listen_address ("host:port", port 0 picks one). Holds nothing
  // until a client calls init(). Errors are kCluster naming the address.
  static Result<std::unique_ptr<ParameterService>> start(const std::string& listen_address, const PsConfig& config);
  ~ParameterService();
  int port() const;
  // Blocks until a client called shutdown() (returns true) or `deadline`
  // passed (false).
  bool wait_for_shutdown(std::chrono::steady_clock::time_point deadline);

  class Impl;

 private:
  explicit ParameterService(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A worker's (or the chief's) connection to one ps task. Thread-safe.
class PsClient {
 public:
  // Connects (retrying until timeout_secs). `label` names the ps task in
  // messages: "ps 1 (127.0.0.1:2224)".
  static Result<std::unique_ptr<PsClient>> connect(const std::string& address, const std::string& label,
                                                   double timeout_secs);
  ~PsClient();
  // Chief only, once per cluster start: the shards this ps holds, their
  // initial values and slots, and the global step they are at (a restored
  // checkpoint's, or 0). Every other call waits (up to the timeout) until
  // init happened. Calling init again replaces everything (a restart).
  Status init(const std::vector<PsShard>& shards, const PsState& state);
  // The shards' values once the global step is >= min_step (sync: the values
  // that step's update produced); returns the step they are at.
  // out.slots is left empty.
  Result<PsState> pull(int64_t min_step);
  // Gradients of every trainable shard (in init order; non-trainable shards
  // get an empty Tensor) from `worker` for global step `step`, applied with
  // learning rate lr. Sync: the call returns once the gradient is recorded
  // (not applied); a second push from the same worker for the same step, or
  // a push for a step that is already applied, is a kCluster error naming it.
  // Async: applied before returning; `step` is informational.
  // skip: the worker's gradient is not finite (mixed precision); the ps
  // skip that update (sync: the whole step) and advance the step.
  // generation: elastic sync training's membership generation (0 before
  // the first change); `worker` is then the rank in it.
  Status push(int worker, int64_t step, float lr, const std::vector<Tensor>& grads, bool skip = false,
              int64_t generation = 0);
  // Elastic sync training, after the workers changed (see FenceRequest in
  // parameter_server.proto): the ps takes generation `generation` of
  // `members` workers whose gradients cover the micro-batch ranges `bounds`
  // (empty: tree_sum over the members) and forgets the step in flight; with
  // rewind_to >= 0 a ps at rewind_to + 1 steps back to rewind_to. Returns
  // the step the ps is at, or kHoldsNothing for a ps that holds nothing
  // (started again after it was lost; the fence changed nothing).
  static constexpr int64_t kHoldsNothing = -1;
  Result<int64_t> fence(int64_t generation, int members, const std::vector<size_t>& bounds, int64_t rewind_to);
  // Pulls and snapshots that wait for a step, and calls retried while the
  // ps does not answer, give up (kCluster error) once abandon() is true,
  // checked every 50 ms (elastic training: the workers or the ps changed and
  // the step will not come).
  void set_abandon(std::function<bool()> abandon);
  // Non-trainable shards' new values (batch_norm moving statistics) from the
  // chief, assigned as they are.
  Status push_values(const std::vector<Tensor>& values);
  // Values and slots once the global step is >= min_step (a consistent
  // snapshot for checkpoints: in sync mode no update is applied while it is
  // copied).
  Result<PsState> snapshot(int64_t min_step);
  // Bytes sent and received by this client so far (request and response
  // tensor payloads), for the benchmark.
  int64_t bytes_sent() const;
  int64_t bytes_received() const;
  // Ends the ps task (its wait_for_shutdown returns true).
  Status shutdown();

  class Impl;

 private:
  explicit PsClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dtrain
