// One replica's forward/backward, gradient application and variable state,
// shared by every strategy.
#include "strategies/replica_step.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <optional>

#include "engine/ops/core.hpp"
#include "engine/optim/initializers.hpp"

namespace dtrain {

Tensor on_replica(const ReplicaState& rs, Tensor& buffer, const Tensor& host) {
  if (rs.ctx.device.same_memory(host.device())) return host;
  if (buffer.shape() != host.shape() || buffer.dtype() != host.dtype() || buffer.device() != rs.ctx.device) {
    buffer = Tensor::empty(host.shape(), host.dtype(), rs.ctx.device);
  }
  buffer.copy_from(host);
  return buffer;
}

Tensor copy_on(const Tensor& t, const Device& device) {
  Tensor out = Tensor::empty(t.shape(), t.dtype(), device);
  out.copy_from(t);
  return out;
}

namespace {

// Rows [begin, end) of each host tensor on the replica's device, staged in
// `buffers` (one per tensor, kept for the next step).
std::vector<Tensor> rows_on_replica(ReplicaState& rs, std::vector<Tensor>& buffers, const std::vector<Tensor>& host,
                                    int64_t begin, int64_t end) {
  buffers.resize(host.size());
  std::vector<Tensor> out;
  out.reserve(host.size());
  for (size_t k = 0; k < host.size(); ++k) out.push_back(on_replica(rs, buffers[k], host[k].rows(begin, end)));
  return out;
}

}  // namespace

std::vector<Tensor> extra_on_replica(ReplicaState& rs, const Batch& batch, int64_t begin, int64_t end) {
  return rows_on_replica(rs, rs.extra_features, batch.extra_features, begin, end);
}

std::vector<Tensor> extra_labels_on_replica(ReplicaState& rs, const Batch& batch, int64_t begin, int64_t end) {
  return rows_on_replica(rs, rs.extra_labels, batch.extra_labels, begin, end);
}

std::vector<Tensor> predict_replica(const Program& program, ReplicaState& rs, const Batch& batch, int64_t begin,
                                    int64_t end) {
  ops::Context inference = rs.ctx;
  inference.batch_invariant = true;  // an example's outputs do not depend on its batch
  ForwardContext ctx{false, program.seed, 0, begin, &inference};
  const Tensor x = on_replica(rs, rs.features, batch.features.rows(begin, end));
  const std::vector<Tensor> extra = extra_on_replica(rs, batch, begin, end);
  program.model->forward(ctx, rs, x, extra);
  std::vector<Tensor> out;
  for (size_t j = 0; j < program.outputs.size(); ++j) {
    out.push_back(program.outputs[j].loss->predictions(program.model->output(rs, j).to_host()));
  }
  return out;
}

StepOutput run_replica(const Program& program, ReplicaState& rs, const Batch& batch, int64_t begin, int64_t end,
                       int64_t step, bool training, float grad_scale, const std::function<void(size_t)>& layer_done) {
  StepOutput out;
  out.metric_state.assign(program.metric_state_size(), 0.0);
  if (end <= begin) return out;  // an empty shard (a final batch smaller than the replicas)
  const size_t n = program.outputs.size();
  assert(batch.extra_labels.size() + 1 == n);
  const Tensor x = on_replica(rs, rs.features, batch.features.rows(begin, end));
  const std::vector<Tensor> extra = extra_on_replica(rs, batch, begin, end);
  std::vector<Tensor> ys = extra_labels_on_replica(rs, batch, begin, end);
  ys.insert(ys.begin(), on_replica(rs, rs.labels, batch.labels.rows(begin, end)));
  ForwardContext ctx{training, program.seed, step, batch.offset + begin, &rs.ctx,
                     training ? rs.cross_replica : nullptr, program.profiler};
  program.model->forward(ctx, rs, x, extra);
  std::vector<Tensor> doutputs(n);
  std::optional<ProfileScope> loss_scope;  // the losses, their gradients and the metrics
  if (program.profiler) loss_scope.emplace(program.profiler, "loss");
  rs.example_weights.resize(n);
  for (size_t j = 0; j < n; ++j) {
    const ProgramOutput& o = program.outputs[j];
    const Tensor& logits = program.model->output(rs, j);
    const Tensor host_y = j == 0 ? batch.labels.rows(begin, end) : batch.extra_labels[j - 1].rows(begin, end);
    // Class weights (training) times the data's weights; empty: none.
    const Tensor host_w = example_weights(o.class_weights, host_y,
                                          batch.weights.empty() ? Tensor() : batch.weights.rows(begin, end), training);
    const Tensor w = host_w.empty() ? Tensor() : on_replica(rs, rs.example_weights[j], host_w);
    const double loss_sum = o.loss->forward_backward(logits, ys[j], training ? &doutputs[j] : nullptr,
                                                     grad_scale * o.weight, rs.ctx, w.empty() ? nullptr : &w);
    out.loss_sum += o.weight * loss_sum;
    if (o.num_metrics == 0 && training) continue;
    // Metrics count on the host, from host copies of the output and labels;
    // evaluation keeps the predictions too (the evaluation report's input).
    const Tensor host_logits = logits.to_host();
    if (!training) out.predictions.push_back(o.loss->predictions(host_logits));
    for (size_t i = o.first_metric; i < o.first_metric + o.num_metrics; ++i) {
      program.metrics[i]->update(host_logits, host_y, loss_sum, program.metric_state(out.metric_state, i),
                                 host_w.empty() ? nullptr : host_w.data());
    }
  }
  loss_scope.reset();
  out.examples = end - begin;
  if (training) program.model->backward_outputs(ctx, rs, x, doutputs, layer_done, extra);
  return out;
}

namespace {

// The micro-batches of a shard of `rows` rows, as [begin, end) within it: of
// run.micro_batch_rows rows each (the last may be shorter), else
// run.accumulation_steps of equal rows (fewer, of one row each, when the
// shard has fewer rows).
std::vector<std::pair<int64_t, int64_t>> micro_batches(const Program& program, int64_t rows) {
  if (program.micro_batch_rows > 0) {
    std::vector<std::pair<int64_t, int64_t>> out;
    for (int64_t b = 0; b < rows; b += program.micro_batch_rows) {
      out.emplace_back(b, std::min(b + program.micro_batch_rows, rows));
    }
    return out;
  }
  return split_batch(rows, static_cast<int>(std::clamp<int64_t>(program.accumulation_steps, 1, rows)));
}

}  // namespace

StepOutput run_replica_accumulated(const Program& program, ReplicaState& rs, const Batch& batch, int64_t begin,
                                   int64_t end, int64_t step, float grad_scale,
                                   const std::function<void(size_t)>& layer_done) {
  assert(end > begin);
  const auto micro = micro_batches(program, end - begin);
  if (micro.size() == 1) return run_replica(program, rs, batch, begin, end, step, true, grad_scale, layer_done);
  const auto& vars = program.model->variables();
  // The micro-batches' gradients are added in tree_sum's grouping
  // (strategies/tree_sum.hpp) with a binary counter: `pending` holds partial
  // sums of 2^a > 2^b > ... micro-batches, and a new one merges into the top
  // while they cover equally many. The last micro-batch is then folded
  // through the pending sums from the top, which is the same grouping:
  // T = S_bottom + (... + (S_top + g_last)).
  std::vector<int64_t> covers;  // micro-batches summed in each pending entry
  std::vector<std::vector<Tensor>>& pending = rs.grad_sums;
  // The last micro-batch adds the pending sums into each layer's gradients
  // as soon as backward has written them, so a strategy reducing layer by
  // layer (layer_done) starts on the final sums.
  const std::function<void(size_t)> add_sums = [&](size_t layer) {
    const auto [first, count] = program.model->layer_variables(layer);
    for (size_t e = covers.size(); e-- > 0;) {
      for (size_t i = first; i < first + count; ++i) {
        if (vars[i].trainable) ops::add_into(rs.ctx, rs.grads[i], pending[e][i]);
      }
    }
    if (layer_done) layer_done(layer);
  };
  StepOutput out;
  out.metric_state.assign(program.metric_state_size(), 0.0);
  for (size_t m = 0; m < micro.size(); ++m) {
    const auto [b, e] = micro[m];
    const bool last = m + 1 == micro.size();
    accumulate(out, run_replica(program, rs, batch, begin + b, begin + e, step, true, grad_scale,
                                last ? add_sums : std::function<void(size_t)>{}));
    if (last) break;
    // Push this micro-batch's gradients as an entry of one.
    const size_t top = covers.size();
    if (pending.size() <= top) pending.resize(top + 1);
    pending[top].resize(rs.grads.size());
    for (size_t i = 0; i < vars.size(); ++i) {
      if (!vars[i].trainable) continue;
      Tensor& sum = pending[top][i];
      const Tensor& g = rs.grads[i];
      if (sum.shape() != g.shape() || sum.dtype() != g.dtype() || sum.device() != g.device()) {
        sum = Tensor::empty(g.shape(), g.dtype(), g.device());
      }
      sum.copy_from(g);
    }
    covers.push_back(1);
    while (covers.size() >= 2 && covers[covers.size() - 2] == covers.back()) {
      const size_t below = covers.size() - 2;
      for (size_t i = 0; i < vars.size(); ++i) {
        if (vars[i].trainable) ops::add_into(rs.ctx, pending[below][i], pending[below + 1][i]);
      }
      covers[below] *= 2;
      covers.pop_back();
    }
  }
  return out;
}

void accumulate(StepOutput& a, const StepOutput& b) {
  a.loss_sum += b.loss_sum;
  a.examples += b.examples;
  if (a.metric_state.size() < b.metric_state.size()) a.metric_state.resize(b.metric_state.size(), 0.0);
  for (size_t i = 0; i < b.metric_state.size(); ++i) a.metric_state[i] += b.metric_state[i];
  if (a.predictions.empty()) {
    a.predictions = b.predictions;
    return;
  }
  for (size_t j = 0; j < b.predictions.size() && j < a.predictions.size(); ++j) {
    const Tensor& x = a.predictions[j];
    const Tensor& y = b.predictions[j];
    if (y.dim(0) == 0) continue;
    Shape shape = x.shape();
    shape[0] += y.dim(0);
    Tensor both(shape);
    both.rows(0, x.dim(0)).copy_from(x);
    both.rows(x.dim(0), shape[0]).copy_from(y);
    a.predictions[j] = std::move(both);
  }
}

bool grads_finite(const Program& program, const ops::Context& ctx, std::span<const Tensor> grads) {
  const auto& vars = program.model->variables();
  bool finite = true;
  for (size_t i = 0; i < vars.size() && finite; ++i) {
    if (vars[i].trainable) finite = ops::all_finite(ctx, grads[i]);
  }
  return finite;
}

bool apply_gradients(const Program& program, const ops::Context& ctx, std::span<Tensor> values,
                     std::span<Tensor> grads, std::vector<std::vector<Tensor>>& slots, int64_t step, float lr) {
  const ProfileScope profile(program.profiler, "optimizer");
  const auto& vars = program.model->variables();
  if (program.mixed()) {
    // Gradients are sums over the global batch (all-reduced, or summed
    // towers): a non-finite value anywhere is non-finite on every replica and
    // worker, so all skip the same step.
    if (!grads_finite(program, ctx, grads)) return false;
    if (const double s = program.loss_scale.scale(); s != 1.0) {
      for (size_t i = 0; i < vars.size(); ++i) {
        if (vars[i].trainable) ops::scale(ctx, grads[i], static_cast<float>(1.0 / s));
      }
    }
  }
  if (program.optimizer_spec.clip_by_global_norm) {
    std::vector<Tensor*> g;
    for (size_t i = 0; i < vars.size(); ++i) {
      if (vars[i].trainable) g.push_back(&grads[i]);
    }
    clip_by_global_norm(g, *program.optimizer_spec.clip_by_global_norm, ctx);
  }
  for (size_t i = 0; i < vars.size(); ++i) {
    if (!vars[i].trainable) continue;
    program.optimizer->apply(step + 1, lr, values[i], grads[i], slots[i], ctx);
  }
  return true;
}

bool optimizer_per_variable(const Program& program) {
  return !program.mixed() && !program.optimizer_spec.clip_by_global_norm;
}

void apply_gradients_to(const Program& program, const ops::Context& ctx, std::span<Tensor> values,
                        std::span<Tensor> grads, std::vector<std::vector<Tensor>>& slots, int64_t step, float lr,
                        std::span<const size_t> vars) {
  const ProfileScope profile(program.profiler, "optimizer");
  const auto& specs = program.model->variables();
  for (size_t i : vars) {
    if (specs[i].trainable) program.optimizer->apply(step + 1, lr, values[i], grads[i], slots[i], ctx);
  }
}

Status initialize_variables(const Program& program, const Device& device, std::vector<Tensor>& values,
                            std::vector<std::vector<Tensor>>& slots) {
  const auto& vars = program.model->variables();
  const auto slot_names = program.optimizer->slot_names();
  values.clear();
  slots.clear();
  for (const VariableSpec& v : vars) {
    Tensor t(v.shape);
    Status s = initialize(t, v.init, program.seed, v.name);
    if (!s) return config_error(fmt::format("variable {}: {}", v.name, s.error().message));
    values.push_back(t.to(device));
    std::vector<Tensor> var_slots;
    if (v.trainable) {
      for (size_t k = 0; k < slot_names.size(); ++k) {
        var_slots.push_back(Tensor(v.shape, program.optimizer->slot_initial_value(k)).to(device));
      }
    }
    slots.push_back(std::move(var_slots));
  }
  return Status::Ok();
}

std::vector<std::pair<std::string, Tensor>> state_list(const Program& program, const std::vector<Tensor>& values,
                                                       const std::vector<std::vector<Tensor>>& slots) {
  const auto& vars = program.model->variables();
  const auto slot_names = program.optimizer->slot_names();
  std::vector<std::pair<std::string, Tensor>> out;
  for (size_t i = 0; i < vars.size(); ++i) out.emplace_back(vars[i].name, values[i].to_host());
  for (size_t i = 0; i < vars.size(); ++i) {
    for (size_t k = 0; k < slots[i].size(); ++k) {
      out.emplace_back(vars[i].name + "/" + slot_names[k], slots[i][k].to_host());
    }
  }
  return out;
}

Status assign_state(const Program& program, const CheckpointData& ckpt, std::vector<Tensor>& values,
                    std::vector<std::vector<Tensor>>& slots) {
  const auto& vars = program.model->variables();
  const auto slot_names = program.optimizer->slot_names();
  for (size_t i = 0; i < vars.size(); ++i) {
    const Tensor* t = ckpt.find(vars[i].name);
    assert(t != nullptr && t->numel() == values[i].numel());
    values[i].copy_from(*t);
    for (size_t k = 0; k < slots[i].size(); ++k) {
      // A checkpoint written with another optimizer has no slots for this one:
      // they keep their initial values (as TensorFlow does).
      if (const Tensor* s = ckpt.find(vars[i].name + "/" + slot_names[k]); s && s->numel() == slots[i][k].numel()) {
        slots[i][k].copy_from(*s);
      }
    }
  }
  return Status::Ok();
}

}  // namespace dtrain
