// Merge layers: elementwise combinations of same-shaped inputs, and
// concatenation along one axis. Every output and input gradient is its own
// buffer (never a view of dy): the model graph adds gradients of a value
// used twice into one buffer, which must not be shared with another input's.
// The elementwise loops split their elements over the OpenMP team.
#include "engine/layers/merge.hpp"

#include <fmt/format.h>

#include <cassert>
#include <cstring>

#include "engine/kernels/parallel.hpp"
#include "engine/layers/layer_util.hpp"
#include "engine/layers/registry.hpp"
#include "engine/ops/dispatch.hpp"

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

const float* in_f32(const Tensor& t) { return static_cast<const float*>(t.raw()); }
float* out_f32(Tensor& t) { return static_cast<float*>(t.raw()); }

std::string shapes_of(std::span<const Shape> inputs) {
  std::string s;
  for (size_t i = 0; i < inputs.size(); ++i) s += fmt::format("{}input {}: {}", i == 0 ? "" : ", ", i, shape_str(inputs[i]));
  return s;
}

// Merge's input gradients at elements [first, last).
void merge_backward_range(MergeKind kind, std::span<const Tensor* const> xs, const Tensor& dy,
                          std::span<Tensor* const> dxs, int64_t first, int64_t last) {
  const int64_t n = last - first;
  const float* g = in_f32(dy) + first;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (dxs[i] == nullptr) continue;
    float* out = out_f32(*dxs[i]) + first;
    switch (kind) {
      case MergeKind::kAdd:
        std::memcpy(out, g, static_cast<size_t>(n) * sizeof(float));
        break;
      case MergeKind::kSubtract: {
        const float sign = i == 0 ? 1.0f : -1.0f;
        for (int64_t e = 0; e < n; ++e) out[e] = sign * g[e];
        break;
      }
      case MergeKind::kAverage: {
        const float inv = 1.0f / static_cast<float>(xs.size());
        for (int64_t e = 0; e < n; ++e) out[e] = g[e] * inv;
        break;
      }
      case MergeKind::kMultiply:
        // d/dx_i prod_j x_j = prod_{j != i} x_j, in input order.
        std::memcpy(out, g, static_cast<size_t>(n) * sizeof(float));
        for (size_t j = 0; j < xs.size(); ++j) {
          if (j == i) continue;
          const float* x = in_f32(*xs[j]) + first;
          for (int64_t e = 0; e < n; ++e) out[e] *= x[e];
        }
        break;
      case MergeKind::kMaximum:
        // The gradient goes to the first input holding the maximum.
        for (int64_t e = first; e < last; ++e) {
          size_t arg = 0;
          float best = in_f32(*xs[0])[e];
          for (size_t j = 1; j < xs.size(); ++j) {
            const float v = in_f32(*xs[j])[e];
            if (v > best) {
              best = v;
              arg = j;
            }
          }
          out[e - first] = arg == i ? g[e - first] : 0.0f;
        }
        break;
    }
  }
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
  ops::on_device(*ctx.ops, type().c_str(), {xs[0], &y}, [&] {
    float* y0 = out_f32(y);
    kernels::parallel_ranges(y.numel(), static_cast<int64_t>(xs.size()), [&](int64_t first, int64_t last) {
      const int64_t n = last - first;
      float* out = y0 + first;
      std::memcpy(out, in_f32(*xs[0]) + first, static_cast<size_t>(n) * sizeof(float));
      for (size_t i = 1; i < xs.size(); ++i) {
        const float* x = in_f32(*xs[i]) + first;
        switch (kind_) {
          case MergeKind::kAdd:
          case MergeKind::kAverage:
            for (int64_t e = 0; e < n; ++e) out[e] += x[e];
            break;
          case MergeKind::kSubtract:
            for (int64_t e = 0; e < n; ++e) out[e] -= x[e];
            break;
          case MergeKind::kMultiply:
            for (int64_t e = 0; e < n; ++e) out[e] *= x[e];
            break;
          case MergeKind::kMaximum:
            for (int64_t e = 0; e < n; ++e) out[e] = x[e] > out[e] ? x[e] : out[e];
            break;
        }
      }
      if (kind_ == MergeKind::kAverage) {
        const float inv = 1.0f / static_cast<float>(xs.size());
        for (int64_t e = 0; e < n; ++e) out[e] *= inv;
      }
    });
  });
}

void Merge::backward_inputs(const ForwardContext& ctx, std::span<const Tensor>, std::span<Tensor>,
                            std::span<const Tensor* const> xs, const Tensor&, const Tensor& dy,
                            std::span<Tensor* const> dxs, const LayerCache&) const {
  for (Tensor* dx : dxs) {
    if (dx != nullptr) prepare_output(*dx, xs[0]->shape(), {&dy});
  }
  ops::on_device(*ctx.ops, "merge_backward", {&dy, xs[0]}, [&] {
    kernels::parallel_ranges(dy.numel(), static_cast<int64_t>(xs.size()), [&](int64_t first, int64_t last) {
      merge_backward_range(kind_, xs, dy, dxs, first, last);
    });
  });
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
  ops::on_device(*ctx.ops, "concatenate", {xs[0], &y}, [&] {
    // Outer blocks: the batch and the dims before the axis.
    const int64_t outer = y.numel() / out_width_;
    float* out = out_f32(y);
    for (int64_t o = 0; o < outer; ++o) {
      int64_t at = o * out_width_;
      for (size_t i = 0; i < xs.size(); ++i) {
        std::memcpy(out + at, in_f32(*xs[i]) + o * widths_[i], static_cast<size_t>(widths_[i]) * sizeof(float));
        at += widths_[i];
      }
    }
  });
}

void Concatenate::backward_inputs(const ForwardContext& ctx, std::span<const Tensor>, std::span<Tensor>,
                                  std::span<const Tensor* const> xs, const Tensor&, const Tensor& dy,
                                  std::span<Tensor* const> dxs, const LayerCache&) const {
  for (size_t i = 0; i < xs.size(); ++i) {
    if (dxs[i] != nullptr) prepare_output(*dxs[i], xs[i]->shape(), {&dy});
  }
  ops::on_device(*ctx.ops, "concatenate_backward", {&dy}, [&] {
    const int64_t outer = dy.numel() / out_width_;
    const float* g = in_f32(dy);
    for (int64_t o = 0; o < outer; ++o) {
      int64_t at = o * out_width_;
      for (size_t i = 0; i < xs.size(); ++i) {
        if (dxs[i] != nullptr) {
          std::memcpy(out_f32(*dxs[i]) + o * widths_[i], g + at, static_cast<size_t>(widths_[i]) * sizeof(float));
        }
        at += widths_[i];
      }
    }
  });
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
