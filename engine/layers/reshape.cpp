// Reshape layer: resolves -1 and checks element counts at build; views at run time.
#include "engine/layers/reshape.hpp"

#include <fmt/format.h>

#include "engine/layers/layer_util.hpp"
#include "engine/layers/registry.hpp"

namespace dtrain {

Result<Shape> Reshape::build(const Shape& input) {
  const int64_t n = num_elements(input);
  int64_t known = 1;
  int inferred = -1;
  for (size_t i = 0; i < target_.size(); ++i) {
    const int64_t d = target_[i];
    if (d == -1) {
      if (inferred >= 0) {
        return config_error(fmt::format("reshape target_shape {} may contain -1 only once", shape_str(target_)));
      }
      inferred = static_cast<int>(i);
    } else if (d <= 0) {
      return config_error(
          fmt::format("reshape target_shape {} entries must be positive (or one -1)", shape_str(target_)));
    } else {
      known *= d;
    }
  }
  out_ = target_;
  if (inferred >= 0) {
    if (n % known != 0) {
      return config_error(fmt::format(
          "reshape cannot turn input shape {} ({} elements) into target_shape {}: {} is not a multiple of {}",
          shape_str(input), n, shape_str(target_), n, known));
    }
    out_[static_cast<size_t>(inferred)] = n / known;
  } else if (known != n) {
    return config_error(fmt::format("reshape cannot turn input shape {} ({} elements) into target_shape {} ({} elements)",
                                    shape_str(input), n, shape_str(target_), known));
  }
  return out_;
}

void Reshape::forward(const ForwardContext&, std::span<Tensor>, const Tensor& x, Tensor& y, LayerCache&) const {
  y = x.reshaped(with_batch(x.dim(0), out_));
}

void Reshape::backward(const ForwardContext&, std::span<const Tensor>, std::span<Tensor>, const Tensor& x,
                       const Tensor&, const Tensor& dy, Tensor* dx, const LayerCache&) const {
  if (dx != nullptr) *dx = dy.reshaped(x.shape());
}

std::span<const Field> reshape_fields() {
  static const Field kFields[] = {
      field<&ReshapeSpec::target_shape>("target_shape", "The new shape of one example, without the batch dimension.")
          .shaped(R"({"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 1})")
          .need(),
  };
  return kFields;
}

Result<std::unique_ptr<Layer>> make_reshape(const LayerSpec& spec) {
  const auto& s = layer_options<ReshapeSpec>(spec);
  if (s.target_shape.empty()) return config_error("reshape: target_shape is required (without the batch dimension)");
  return std::unique_ptr<Layer>(std::make_unique<Reshape>(Shape(s.target_shape.begin(), s.target_shape.end())));
}

}  // namespace dtrain
