// Merge layers: elementwise combinations of same-shaped inputs, and
// concatenation along one axis. Every output and input gradient is its own
// buffer (never a view of dy): the model graph adds gradients of a value
// used twice into one buffer, which must not be shared with another input's.
// The loops are ops (ops::merge_forward, concatenate_forward, ... over
// kernels/merge.cpp).
#include "engine/layers/merge.hpp"

#include <fmt/format.h>

#include <cassert>

#include "engine/layers/layer_util.hpp"
#include "engine/layers/registry.hpp"
#include "engine/ops/layer_ops.hpp"

namespace dtrain {

Result<Shape> MultiInputLayer::build(const Shape&) {
  return config_error(fmt::format("{} needs several inputs", type()));
}

void MultiInputLayer::forward(const ForwardContext&, std::span<Tensor>, const Tensor&, Tensor&, LayerCache&) const {
  assert(false && "the model calls forward_inputs on a multi-input layer");
}

void MultiInputLayer::backward(const ForwardContext&, std::span<const Tensor>, std::span<Tensor>, const Tensor&,
                               const Tensor&, const Tensor&, Tensor*, const LayerCache&) const {
  assert(false && "the model calls backward_inputs on a multi-input layer");
}

namespace {

std::string shapes_of(std::span<const Shape> inputs) {
  std::string s;
  for (size_t i = 0; i < inputs.size(); ++i) s += fmt::format("{}input {}: {}", i == 0 ? "" : ", ", i, shape_str(inputs[i]));
  return s;
}

kernels::MergeOp merge_op(MergeKind k) {
  switch (k) {
    case MergeKind::kAdd: return kernels::MergeOp::kAdd;
    case MergeKind::kSubtract: return kernels::MergeOp::kSubtract;
    case MergeKind::kMultiply: return kernels::MergeOp::kMultiply;
    case MergeKind::kAverage: return kernels::MergeOp::kAverage;
    case MergeKind::kMaximum: return kernels::MergeOp::kMaximum;
  }
  return kernels::MergeOp::kAdd;
}

}  // namespace

std::string Merge::type() const {
  switch (kind_) {
    case MergeKind::kAdd: return "add";
    case MergeKind::kSubtract: return "subtract";
    case MergeKind::kMultiply: return "multiply";
    case MergeKind::kAverage: return "average";
    case MergeKind::kMaximum: return "maximum";
  }
  return "merge";
}

Result<Shape> Merge::build_inputs(std::span<const Shape> inputs) {
  for (const Shape& s : inputs) {
    if (s != inputs[0]) {
      return config_error(fmt::format("{} needs inputs of one shape (no broadcasting); got {}", type(),
                                      shapes_of(inputs)));
    }
  }
  return inputs[0];
}

void Merge::forward_inputs(const ForwardContext& ctx, std::span<Tensor>, std::span<const Tensor* const> xs, Tensor& y,
                           LayerCache&) const {
  prepare_output(y, xs[0]->shape(), xs);
  ops::merge_forward(*ctx.ops, merge_op(kind_), xs, y);
}

void Merge::backward_inputs(const ForwardContext& ctx, std::span<const Tensor>, std::span<Tensor>,
                            std::span<const Tensor* const> xs, const Tensor&, const Tensor& dy,
                            std::span<Tensor* const> dxs, const LayerCache&) const {
  for (Tensor* dx : dxs) {
    if (dx != nullptr) prepare_output(*dx, xs[0]->shape(), {&dy});
  }
  ops::merge_backward(*ctx.ops, merge_op(kind_), xs, dy, dxs);
}

Result<Shape> Concatenate::build_inputs(std::span<const Shape> inputs) {
  const auto rank = static_cast<int64_t>(inputs[0].size());
  const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
  if (axis < 0 || axis >= rank) {
    return config_error(fmt::format("concatenate axis {} is out of range for inputs of rank {} (shape {}); use -{}..{}",
                                    axis_, rank, shape_str(inputs[0]), rank, rank - 1));
  }
  resolved_axis_ = axis;
  Shape out = inputs[0];
  out[static_cast<size_t>(axis)] = 0;
  inner_ = 1;
  for (int64_t d = axis + 1; d < rank; ++d) inner_ *= inputs[0][static_cast<size_t>(d)];
  widths_.clear();
  for (const Shape& s : inputs) {
    bool fits = static_cast<int64_t>(s.size()) == rank;
    for (int64_t d = 0; fits && d < rank; ++d) fits = d == axis || s[static_cast<size_t>(d)] == inputs[0][static_cast<size_t>(d)];
    if (!fits) {
      return config_error(fmt::format("concatenate along axis {} needs inputs equal in every other dimension; got {}",
                                      axis_, shapes_of(inputs)));
    }
    out[static_cast<size_t>(axis)] += s[static_cast<size_t>(axis)];
    widths_.push_back(s[static_cast<size_t>(axis)] * inner_);
  }
  out_width_ = out[static_cast<size_t>(axis)] * inner_;
  return out;
}

void Concatenate::forward_inputs(const ForwardContext& ctx, std::span<Tensor>, std::span<const Tensor* const> xs,
                                 Tensor& y, LayerCache&) const {
  Shape shape = xs[0]->shape();
  shape[static_cast<size_t>(resolved_axis_) + 1] = out_width_ / inner_;
  prepare_output(y, shape, xs);
  ops::concatenate_forward(*ctx.ops, xs, widths_, y);
}

void Concatenate::backward_inputs(const ForwardContext& ctx, std::span<const Tensor>, std::span<Tensor>,
                                  std::span<const Tensor* const> xs, const Tensor&, const Tensor& dy,
                                  std::span<Tensor* const> dxs, const LayerCache&) const {
  for (size_t i = 0; i < xs.size(); ++i) {
    if (dxs[i] != nullptr) prepare_output(*dxs[i], xs[i]->shape(), {&dy});
  }
  ops::concatenate_backward(*ctx.ops, dy, widths_, dxs);
}

std::span<const Field> add_fields() {
  static const Field kFields[] = {
      activation_field("Activation applied to the sum: linear (none), relu, gelu, tanh, sigmoid or softmax."),
  };
  return kFields;
}

std::span<const Field> concatenate_fields() {
  static const Field kFields[] = {
      field<&ConcatenateSpec::axis>("axis",
                                    "The axis of the per-example shape to join along; negative counts from the end."),
  };
  return kFields;
}

Result<std::unique_ptr<Layer>> make_concatenate(const LayerSpec& spec) {
  return std::unique_ptr<Layer>(std::make_unique<Concatenate>(layer_options<ConcatenateSpec>(spec).axis));
}

}  // namespace dtrain
