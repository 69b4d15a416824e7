// The model's passes over one replica's state: forward, then backward in
// reverse layer order, each buffer taken from and given back to the replica's
// pool as the buffer plan (memory_plan.cpp) says.
#include <algorithm>
#include <cassert>
#include <optional>

#include "engine/model/model.hpp"
#include "engine/ops/core.hpp"
#include "engine/profiler.hpp"

namespace dtrain {

namespace {

// Before a layer's pass: when `slot` holds no buffer, one of `shape` from the
// pool, and a handle on it in `handed`. After: `handed` goes back to the pool
// when the layer put another tensor in the slot (a view of its input), so
// the buffer is not lost to the next step.
void take_into(BufferPool& pool, Tensor& slot, const Shape& shape, const Device& device, Tensor& handed) {
  if (!slot.empty()) return;
  slot = pool.take(shape, DType::f32, device);
  handed = slot;
}

void settle(BufferPool& pool, const Tensor& slot, Tensor& handed) {
  if (handed.empty()) return;
  if (slot.shares_storage(handed)) {
    handed = Tensor();
  } else {
    pool.give(handed);
    handed = Tensor();
  }
}

Shape with_batch(int64_t batch, const Shape& shape) {
  Shape s{batch};
  s.insert(s.end(), shape.begin(), shape.end());
  return s;
}

}  // namespace

const Tensor& Model::forward(const ForwardContext& ctx, ReplicaState& rs, const Tensor& x,
                             std::span<const Tensor> extra) const {
  assert(extra.size() + 1 == inputs_.size());
  rs.pool.new_pass();
  const int64_t batch = x.rank() == 0 ? 1 : x.dim(0);
  Tensor handed;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Entry& e = layers_[i];
    std::span<Tensor> params(rs.values.data() + e.first_var, e.num_vars);
    const ProfileScope profile(ctx.profiler, "forward", ctx.profiler ? e.name : std::string());
    const BufferRole& role = roles_[i];
    if (!role.view) take_into(rs.pool, rs.activations[i], with_batch(batch, e.out_shape), rs.ctx.device, handed);
    if (e.inputs.size() == 1) {
      const Tensor& in = input_tensor(e.inputs[0], rs, x, extra);
      e.layer->forward(ctx, params, in, rs.activations[i], rs.caches[i]);
    } else {
      for (size_t j = 0; j < e.inputs.size(); ++j) {
        rs.in_ptrs[j] = &input_tensor(e.inputs[j], rs, x, extra);
      }
      e.layer->forward_inputs(ctx, params, std::span<const Tensor* const>(rs.in_ptrs.data(), e.inputs.size()),
                              rs.activations[i], rs.caches[i]);
    }
    settle(rs.pool, rs.activations[i], handed);
    for (size_t src : role.free_after_forward) rs.pool.give(rs.activations[src]);
  }
  return layers_.empty() ? x : rs.activations.back();
}

void Model::backward(const ForwardContext& ctx, ReplicaState& rs, const Tensor& x, const Tensor& dlogits,
                     const std::function<void(size_t)>& layer_done, std::span<const Tensor> extra) const {
  assert(outputs_.size() == 1);
  backward_outputs(ctx, rs, x, std::span<const Tensor>(&dlogits, 1), layer_done, extra);
}

void Model::backward_outputs(const ForwardContext& ctx, ReplicaState& rs, const Tensor& x,
                             std::span<const Tensor> doutputs, const std::function<void(size_t)>& layer_done,
                             std::span<const Tensor> extra) const {
  assert(doutputs.size() == outputs_.size());
  std::fill(rs.grad_written.begin(), rs.grad_written.end(), 0);
  // The last layer reads its output's gradient in place (it feeds no layer);
  // another output's gradient starts its layer's buffer, final (1), so the
  // gradients of the layers it also feeds are added into it.
  const Tensor* dlast = nullptr;
  for (size_t j = 0; j < outputs_.size(); ++j) {
    const size_t o = outputs_[j].entry;
    if (o + 1 == layers_.size()) {
      dlast = &doutputs[j];
      continue;
    }
    Tensor& buf = rs.output_grads[o];
    if (buf.empty() || buf.shape() != doutputs[j].shape() || buf.device() != rs.ctx.device ||
        buf.dtype() != doutputs[j].dtype()) {
      rs.pool.give(buf);
      buf = rs.pool.take(doutputs[j].shape(), doutputs[j].dtype(), rs.ctx.device);
    }
    buf.copy_from(doutputs[j]);
    rs.grad_written[o] = 1;
  }
  assert(dlast != nullptr);
  for (size_t k = layers_.size(); k-- > 0;) {
    const Entry& e = layers_[k];
    const Tensor& dy = k + 1 == layers_.size() ? *dlast : rs.output_grads[k];
    std::optional<ProfileScope> profile;  // ends before layer_done (a bucket's all-reduce is not backward)
    if (ctx.profiler) profile.emplace(ctx.profiler, "backward", e.name);
    std::span<const Tensor> params(rs.values.data() + e.first_var, e.num_vars);
    std::span<Tensor> grads(rs.grads.data() + e.first_var, e.num_vars);
    // Each input's gradient goes straight into its producer's buffer when
    // this is the first (in reverse order) of the producer's consumers, and
    // is added into it otherwise. The model's input needs none.
    // Their buffers come from the pool (a view layer's dx re-views dy).
    const size_t n = e.inputs.size();
    rs.handed.resize(std::max(rs.handed.size(), n));
    for (size_t j = 0; j < n; ++j) {
      const int src = e.inputs[j];
      if (is_model_input(src)) {
        rs.dx_ptrs[j] = nullptr;
        continue;
      }
      if (!rs.grad_written[static_cast<size_t>(src)]) {
        rs.dx_ptrs[j] = &rs.output_grads[static_cast<size_t>(src)];
        rs.grad_written[static_cast<size_t>(src)] = 2;  // 2: written by this layer, 1: final
      } else {
        rs.dx_ptrs[j] = &rs.extra_grads[k][j];
      }
      if (!roles_[k].view) {
        take_into(rs.pool, *rs.dx_ptrs[j], rs.activations[static_cast<size_t>(src)].shape(), rs.ctx.device,
                  rs.handed[j]);
      }
    }
    if (n == 1) {
      const Tensor& in = input_tensor(e.inputs[0], rs, x, extra);
      e.layer->backward(ctx, params, grads, in, rs.activations[k], dy, rs.dx_ptrs[0], rs.caches[k]);
    } else {
      for (size_t j = 0; j < n; ++j) {
        rs.in_ptrs[j] = &input_tensor(e.inputs[j], rs, x, extra);
      }
      e.layer->backward_inputs(ctx, params, grads, std::span<const Tensor* const>(rs.in_ptrs.data(), n),
                               rs.activations[k], dy, std::span<Tensor* const>(rs.dx_ptrs.data(), n), rs.caches[k]);
    }
    for (size_t j = 0; j < n; ++j) {
      const int src = e.inputs[j];
      if (is_model_input(src)) continue;
      auto& written = rs.grad_written[static_cast<size_t>(src)];
      settle(rs.pool, *rs.dx_ptrs[j], rs.handed[j]);
      if (rs.dx_ptrs[j] == &rs.extra_grads[k][j]) {
        ops::add_into(rs.ctx, rs.output_grads[static_cast<size_t>(src)], rs.extra_grads[k][j]);
        rs.pool.give(rs.extra_grads[k][j]);
      }
      written = 1;
    }
    // Nothing reads this layer's output or its gradient any more.
    rs.pool.give(rs.output_grads[k]);
    if (!roles_[k].output) rs.pool.give(rs.activations[k]);
    profile.reset();
    if (layer_done) layer_done(k);
  }
}

}  // namespace dtrain
