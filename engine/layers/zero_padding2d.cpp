// ZeroPadding2D: a copy into the middle of a zeroed output, and the matching
// crop of dy in backward.
#include "engine/layers/zero_padding2d.hpp"

#include <fmt/format.h>

#include <cstring>

#include "engine/layers/layer_util.hpp"
#include "engine/layers/registry.hpp"
#include "engine/ops/dispatch.hpp"

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
  ops::on_device(*ctx.ops, "zero_padding2d", {&x, &y}, [&] {
    const auto* in = static_cast<const float*>(x.raw());
    auto* out = static_cast<float*>(y.raw());
    std::memset(out, 0, static_cast<size_t>(y.numel()) * sizeof(float));
    const int64_t row_in = in_[1] * in_[2], row_out = out_[1] * out_[2];
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t h = 0; h < in_[0]; ++h) {
        std::memcpy(out + (b * out_[0] + h + pad_h_) * row_out + pad_w_ * out_[2], in + (b * in_[0] + h) * row_in,
                    static_cast<size_t>(row_in) * sizeof(float));
      }
    }
  });
}

void ZeroPadding2D::backward(const ForwardContext& ctx, std::span<const Tensor>, std::span<Tensor>, const Tensor& x,
                             const Tensor&, const Tensor& dy, Tensor* dx, const LayerCache&) const {
  if (dx == nullptr) return;
  const int64_t n = x.dim(0);
  prepare_output(*dx, x.shape(), {&dy});
  ops::on_device(*ctx.ops, "zero_padding2d_backward", {&dy, dx}, [&] {
    const auto* g = static_cast<const float*>(dy.raw());
    auto* out = static_cast<float*>(dx->raw());
    const int64_t row_in = in_[1] * in_[2], row_out = out_[1] * out_[2];
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t h = 0; h < in_[0]; ++h) {
        std::memcpy(out + (b * in_[0] + h) * row_in, g + (b * out_[0] + h + pad_h_) * row_out + pad_w_ * out_[2],
                    static_cast<size_t>(row_in) * sizeof(float));
      }
    }
  });
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
