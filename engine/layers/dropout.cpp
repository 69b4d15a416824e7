// Dropout layer: the masks and y = x * mask are ops::dropout (counter-based
// masks, engine/kernels/dropout.hpp), the mask saved in the cache for backward.
#include "engine/layers/dropout.hpp"

#include <fmt/format.h>

#include <cassert>
#include <utility>

#include "engine/layers/layer_util.hpp"
#include "engine/layers/registry.hpp"
#include "engine/ops/core.hpp"
#include "engine/ops/layer_ops.hpp"
#include "engine/rng.hpp"

namespace dtrain {

namespace {

uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

uint64_t dropout_key(uint64_t seed, int64_t step, uint64_t salt) {
  return splitmix64(splitmix64(seed ^ salt) ^ static_cast<uint64_t>(step));
}

Dropout::Dropout(float rate, std::string name) : rate_(rate), name_(std::move(name)) {
  assert(rate_ >= 0.0f && rate_ < 1.0f);
}

Result<Shape> Dropout::build(const Shape& input) {
  salt_ = hash64(name_, hash64(shape_str(input)));
  return input;
}

uint64_t Dropout::mask_key(uint64_t seed, int64_t step) const {
  return dropout_key(seed, step, salt_);
}

void Dropout::forward(const ForwardContext& ctx, std::span<Tensor>, const Tensor& x, Tensor& y,
                      LayerCache& cache) const {
  cache.ints.assign(1, 0);
  if (!ctx.training || rate_ == 0.0f) {
    y = x;
    return;
  }
  cache.ints[0] = 1;
  cache.saved.resize(1);
  Tensor& mask = cache.saved[0];
  prepare_output(mask, x.shape(), {&x});
  prepare_output(y, x.shape(), {&x, &mask});
  ops::dropout(*ctx.ops, x, mask_key(ctx.seed, ctx.step), ctx.example_offset, rate_, mask, y);
}

void Dropout::backward(const ForwardContext& ctx, std::span<const Tensor>, std::span<Tensor>, const Tensor&,
                       const Tensor&, const Tensor& dy, Tensor* dx, const LayerCache& cache) const {
  if (dx == nullptr) return;
  if (cache.ints.empty() || cache.ints[0] == 0) {
    *dx = dy;
    return;
  }
  const Tensor& mask = cache.saved[0];
  assert(mask.numel() == dy.numel());
  prepare_output(*dx, dy.shape(), {&mask});
  ops::mul(*ctx.ops, dy, mask, *dx);
}

std::span<const Field> dropout_fields() {
  static const Field kFields[] = {
      field<&DropoutSpec::rate>("rate", "Fraction of the inputs to drop.").min(0).below(1).need(),
  };
  return kFields;
}

Result<std::unique_ptr<Layer>> make_dropout(const LayerSpec& spec) {
  const auto& s = layer_options<DropoutSpec>(spec);
  if (!(s.rate >= 0.0f && s.rate < 1.0f)) {
    return config_error(fmt::format("dropout: rate must be in [0, 1); got {}", s.rate));
  }
  return std::unique_ptr<Layer>(std::make_unique<Dropout>(s.rate, spec.name));
}

}  // namespace dtrain
