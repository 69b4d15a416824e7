// The work of one replica in one step, shared by every strategy: forward on
// its shard, loss and metrics, backward to gradients. Thread-safe across
// replicas with distinct ReplicaStates.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "datasets/dataset.hpp"
#include "strategies/program.hpp"
#include "strategies/strategy.hpp"

namespace dtrain {

// `host` on the replica's device: itself when the replica computes in host
// memory, else copied into `buffer` (kept and reused while shapes agree).
Tensor on_replica(const ReplicaState& rs, Tensor& buffer, const Tensor& host);
// A new copy of t on `device` (never shares storage, even in host memory).
Tensor copy_on(const Tensor& t, const Device& device);

// Rows [begin, end) of the batch's extra_features (the model's inputs after
// the first) on the replica's device, in rs.extra_features' buffers.
std::vector<Tensor> extra_on_replica(ReplicaState& rs, const Batch& batch, int64_t begin, int64_t end);

// The same for the batch's extra_labels (the labels of the outputs after the
// first), in rs.extra_labels' buffers.
std::vector<Tensor> extra_labels_on_replica(ReplicaState& rs, const Batch& batch, int64_t begin, int64_t end);

// Forward (inference) on rows [begin, end) of batch: every output's
// predictions (Loss::predictions), host tensors (end - begin, output shape...),
// each row the same bits in any batch (ops::Context::batch_invariant).
std::vector<Tensor> predict_replica(const Program& program, ReplicaState& rs, const Batch& batch, int64_t begin,
                                    int64_t end);

// Runs forward (and, when training, backward) on rows [begin, end) of batch,
// whose global example offset is `begin`. grad_scale multiplies d(loss sum)
// (1 / global batch for a mean over the global batch). Fills rs.grads when
// training; returns the shard's loss sum (the sum over outputs of weight x
// each output's loss sum), example count and metric state.
StepOutput run_replica(const Program& program, ReplicaState& rs, const Batch& batch, int64_t begin, int64_t end,
                       int64_t step, bool training, float grad_scale,
                       const std::function<void(size_t)>& layer_done = {});

// run_replica over rows [begin, end) split into consecutive micro-batches:
// of program.micro_batch_rows rows each (the last may be shorter), else
// program.accumulation_steps of split_batch's split (fewer, of one row each,
// when the shard has fewer rows); each keyed by its global rows as in one run
// over [begin, end); grad_scale as for that one run. Leaves in rs.grads the
// sum of the micro-batches' gradients, grouped as tree_sum groups them
// (strategies/tree_sum.hpp), and returns the summed outputs. layer_done is
// called for each layer during the last micro-batch's backward, once that
// layer's summed gradients are in rs.grads. Only one micro-batch's
// activations are alive at a time.
// REQUIRES: training; end > begin.
StepOutput run_replica_accumulated(const Program& program, ReplicaState& rs, const Batch& batch, int64_t begin,
                                   int64_t end, int64_t step, float grad_scale,
                                   const std::function<void(size_t)>& layer_done = {});

// Adds b into a (loss, examples, metric state) and appends b's predictions
// to a's (a's come first).
void accumulate(StepOutput& a, const StepOutput& b);

// Applies clip_by_global_norm (if configured) and the optimizer to every
// trainable variable: values[i] -= update(grads[i], slots[i]), on ctx.device,
// where all of them live. Under mixed precision the gradients are first
// checked (a step whose gradients are not all finite is skipped: returns
// false, nothing changes) and divided by the loss scale. Returns true when
// the update was applied.
bool apply_gradients(const Program& program, const ops::Context& ctx, std::span<Tensor> values,
                     std::span<Tensor> grads, std::vector<std::vector<Tensor>>& slots, int64_t step, float lr);

// True when the optimizer may update each variable on its own, as soon as
// its gradient is reduced (no mixed-precision check and no global-norm
// clipping, which read every gradient first): the updates are the same bits
// in any order, since Optimizer::apply is pure per variable.
bool optimizer_per_variable(const Program& program);
// The optimizer on variables `vars` alone (REQUIRES: optimizer_per_variable).
void apply_gradients_to(const Program& program, const ops::Context& ctx, std::span<Tensor> values,
                        std::span<Tensor> grads, std::vector<std::vector<Tensor>>& slots, int64_t step, float lr,
                        std::span<const size_t> vars);

// True when every trainable gradient is finite (reads one flag per variable
// back from ctx.device).
bool grads_finite(const Program& program, const ops::Context& ctx, std::span<const Tensor> grads);

// Initial values for every variable of the model (seeded) and the optimizer's
// slots, one logical copy on `device` (computed on the host, then copied).
Status initialize_variables(const Program& program, const Device& device, std::vector<Tensor>& values,
                            std::vector<std::vector<Tensor>>& slots);

// The (name, tensor) list a checkpoint holds: variables then their slots, as
// host tensors (copies of device tensors).
std::vector<std::pair<std::string, Tensor>> state_list(const Program& program, const std::vector<Tensor>& values,
                                                       const std::vector<std::vector<Tensor>>& slots);
// Copies a checkpoint's (host) tensors into values and slots (any device).
Status assign_state(const Program& program, const CheckpointData& ckpt, std::vector<Tensor>& values,
                    std::vector<std::vector<Tensor>>& slots);

}  // namespace dtrain
