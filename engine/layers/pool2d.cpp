// Pooling layers: TF window arithmetic at build, oneDNN (CPU) or cuDNN (GPU) pooling per call.
#include "engine/layers/pool2d.hpp"

#include <fmt/format.h>

#include <cassert>

#include "engine/kernels/padding.hpp"
#include "engine/layers/layer_util.hpp"
#include "engine/layers/registry.hpp"
#include "engine/ops/dispatch.hpp"
#include "engine/ops/library.hpp"

namespace dtrain {

std::string Pool2D::type() const { return o_.kind == kernels::PoolKind::kMax ? "max_pool2d" : "avg_pool2d"; }

std::vector<std::string_view> Pool2D::ops() const {
  const bool pad_after = geom_.pad_bottom != geom_.pad_top || geom_.pad_right != geom_.pad_left;
  return {pad_after ? "pool2d_pad_after" : "pool2d"};
}

Result<Shape> Pool2D::build(const Shape& input) {
  if (input.size() != 3) {
    return config_error(fmt::format(
        "{} expects an image input (height, width, channels); got shape {}; "
        "add {{type: reshape, target_shape: [height, width, channels]}} before it",
        type(), shape_str(input)));
  }
  const auto h = kernels::window_1d(input[0], o_.size[0], o_.strides[0], 1, o_.same);
  const auto w = kernels::window_1d(input[1], o_.size[1], o_.strides[1], 1, o_.same);
  if (h.out <= 0 || w.out <= 0 || input[2] <= 0) {
    return config_error(fmt::format(
        "{} output would be empty: a {}x{} window with padding {} does not fit input {}; "
        "use padding: same, a smaller size or a larger input",
        type(), o_.size[0], o_.size[1], o_.same ? "same" : "valid", shape_str(input)));
  }
  geom_ = {};
  geom_.kind = o_.kind;
  geom_.ih = input[0];
  geom_.iw = input[1];
  geom_.c = input[2];
  geom_.oh = h.out;
  geom_.ow = w.out;
  geom_.kh = o_.size[0];
  geom_.kw = o_.size[1];
  geom_.sh = o_.strides[0];
  geom_.sw = o_.strides[1];
  geom_.pad_top = h.pad_before;
  geom_.pad_bottom = h.pad_after;
  geom_.pad_left = w.pad_before;
  geom_.pad_right = w.pad_after;
  return Shape{h.out, w.out, input[2]};
}

kernels::Pool2dShape Pool2D::shape_for(int64_t batch) const {
  kernels::Pool2dShape s = geom_;
  s.n = batch;
  return s;
}

void Pool2D::forward(const ForwardContext& ctx, std::span<Tensor>, const Tensor& x, Tensor& y,
                     LayerCache& cache) const {
  assert(x.rank() == 4 && x.dim(1) == geom_.ih && x.dim(2) == geom_.iw && x.dim(3) == geom_.c);
  const auto s = shape_for(x.dim(0));
  prepare_output(y, {s.n, s.oh, s.ow, s.c}, {&x});
  if (s.n == 0) return;
  const size_t ws_bytes = ops::pool2d_workspace_bytes(*ctx.ops, s);
  Tensor* ws = nullptr;
  if (ws_bytes > 0) {
    cache.saved.resize(1);
    const auto words = static_cast<int64_t>((ws_bytes + sizeof(float) - 1) / sizeof(float));
    prepare_output(cache.saved[0], {words}, {&x, &y});
    ws = &cache.saved[0];
  }
  ops::pool2d_forward(*ctx.ops, s, x, y, ws);
}

void Pool2D::backward(const ForwardContext& ctx, std::span<const Tensor>, std::span<Tensor>, const Tensor& x,
                      const Tensor& y, const Tensor& dy, Tensor* dx, const LayerCache& cache) const {
  if (dx == nullptr) return;
  const auto s = shape_for(x.dim(0));
  assert(dy.rank() == 4 && dy.dim(0) == s.n && dy.dim(1) == s.oh && dy.dim(2) == s.ow && dy.dim(3) == s.c);
  prepare_output(*dx, x.shape(), {&dy});
  if (s.n == 0) return;
  const Tensor* ws = nullptr;
  if (ops::pool2d_workspace_bytes(*ctx.ops, s) > 0) {
    assert(!cache.saved.empty() && !cache.saved[0].empty());
    ws = &cache.saved[0];
  }
  ops::pool2d_backward(*ctx.ops, s, x, y, dy, *dx, ws);
}

std::span<const Field> pool2d_fields() {
  static const Field kFields[] = {
      field<&Pool2dSpec::size>("size", "Pool window: an integer or [height, width].").size2().follows("size2"),
      field<&Pool2dSpec::strides>("strides", "Strides: an integer or [height, width]; null means the same as size.")
          .size2()
          .shaped(R"({"type": ["integer", "array", "null"], "minimum": 1, "items": {"type": "integer", "minimum": 1},
                      "minItems": 2, "maxItems": 2})"),
      field<&Pool2dSpec::padding>("padding", "Padding: valid (none) or same (output size = ceil(input / stride)).").follows("padding"),
  };
  return kFields;
}

namespace {

Result<std::unique_ptr<Layer>> make_pool(const LayerSpec& spec, kernels::PoolKind kind) {
  const auto& s = layer_options<Pool2dSpec>(spec);
  Pool2dOptions o;
  o.kind = kind;
  const std::string where = spec.type + ": ";
  auto size = window_pair(s.size, where + "size", {2, 2});
  if (!size) return size.error();
  auto strides = window_pair(s.strides, where + "strides", *size);
  if (!strides) return strides.error();
  auto same = parse_padding(s.padding);
  if (!same) return config_error(where + same.error().message);
  o.size = *size;
  o.strides = *strides;
  o.same = *same;
  return std::unique_ptr<Layer>(std::make_unique<Pool2D>(o));
}

}  // namespace

Result<std::unique_ptr<Layer>> make_max_pool2d(const LayerSpec& spec) { return make_pool(spec, kernels::PoolKind::kMax); }
Result<std::unique_ptr<Layer>> make_avg_pool2d(const LayerSpec& spec) { return make_pool(spec, kernels::PoolKind::kAvg); }

}  // namespace dtrain
