// Flatten layer: shape bookkeeping only; data is shared, never copied.
#include "engine/layers/flatten.hpp"

#include <fmt/format.h>

#include "engine/layers/layer_util.hpp"
#include "engine/layers/registry.hpp"

namespace dtrain {

Result<Shape> Flatten::build(const Shape& input) {
  features_ = num_elements(input);
  return Shape{features_};
}

void Flatten::forward(const ForwardContext&, std::span<Tensor>, const Tensor& x, Tensor& y, LayerCache&) const {
  y = x.reshaped({x.dim(0), features_});
}

void Flatten::backward(const ForwardContext&, std::span<const Tensor>, std::span<Tensor>, const Tensor& x,
                       const Tensor&, const Tensor& dy, Tensor* dx, const LayerCache&) const {
  if (dx != nullptr) *dx = dy.reshaped(x.shape());
}

Result<std::unique_ptr<Layer>> make_flatten(const LayerSpec&) { return std::unique_ptr<Layer>(std::make_unique<Flatten>()); }

}  // namespace dtrain
