// ZeroPadding2D: a copy into the middle of a zeroed output, and the matching
// crop of dy in backward (ops::zero_pad2d, _backward).
#include "engine/layers/zero_padding2d.hpp"

#include <fmt/format.h>

#include "engine/layers/layer_util.hpp"
#include "engine/layers/registry.hpp"
#include "engine/ops/layer_ops.hpp"

namespace dtrain {

Result<Shape> ZeroPadding2D::build(const Shape& input) {
  if (input.size() != 3) {
    return config_error(fmt::format("zero_padding2d expects an image input (height, width, channels); got shape {}",
                                    shape_str(input)));
  }
  in_ = input;
  out_ = {input[0] + 2 * pad_h_, input[1] + 2 * pad_w_, input[2]};
  return out_;
}

void ZeroPadding2D::forward(const ForwardContext& ctx, std::span<Tensor>, const Tensor& x, Tensor& y,
                            LayerCache&) const {
  const int64_t n = x.dim(0);
  prepare_output(y, with_batch(n, out_), {&x});
  ops::zero_pad2d(*ctx.ops, x, pad_h_, pad_w_, y);
}

void ZeroPadding2D::backward(const ForwardContext& ctx, std::span<const Tensor>, std::span<Tensor>, const Tensor& x,
                             const Tensor&, const Tensor& dy, Tensor* dx, const LayerCache&) const {
  if (dx == nullptr) return;
  prepare_output(*dx, x.shape(), {&dy});
  ops::zero_pad2d_backward(*ctx.ops, dy, pad_h_, pad_w_, *dx);
}

std::span<const Field> zero_padding2d_fields() {
  static const Field kFields[] = {
      field<&ZeroPadding2dSpec::padding>("padding", "Zeros added on each side: an integer, or [rows, columns].")
          .size2()
          .shaped(R"({"type": ["integer", "array"], "minimum": 0, "items": {"type": "integer", "minimum": 0},
                      "minItems": 1, "maxItems": 2})"),
  };
  return kFields;
}

Result<std::unique_ptr<Layer>> make_zero_padding2d(const LayerSpec& spec) {
  const auto& s = layer_options<ZeroPadding2dSpec>(spec);
  std::vector<int64_t> pad = s.padding.empty() ? std::vector<int64_t>{1, 1} : s.padding;
  if (pad.size() == 1) pad.push_back(pad[0]);
  if (pad.size() != 2 || pad[0] < 0 || pad[1] < 0) {
    return config_error(fmt::format("zero_padding2d: padding must be an integer >= 0 or [rows, columns]; got {}",
                                    shape_str(Shape(s.padding.begin(), s.padding.end()))));
  }
  return std::unique_ptr<Layer>(std::make_unique<ZeroPadding2D>(pad[0], pad[1]));
}

}  // namespace dtrain
