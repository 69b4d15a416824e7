// Dropout layer: counter-based masks (Philox, four elements per block), saved
// in the cache for backward.
#include "engine/layers/registry.hpp"
#include "engine/layers/dropout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <utility>

#include "engine/backend/cuda/gpu_ops.hpp"
#include "engine/layers/layer_util.hpp"
#include "engine/ops/core.hpp"
#include "engine/ops/dispatch.hpp"
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

// Draws exactly CounterRng(key, example).uniform(e) for each element e (the
// Philox block of e holds elements 4*(e/4) .. 4*(e/4)+3), four at a time.
void dropout_mask(uint64_t key, uint64_t example, float rate, float* mask, int64_t n) {
  const std::array<uint32_t, 2> k{static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)};
  const float scale = 1.0f / (1.0f - rate);
  for (int64_t base = 0; base < n; base += 4) {
    const auto block = static_cast<uint64_t>(base / 4);
    const auto r = philox4x32({static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                               static_cast<uint32_t>(example), static_cast<uint32_t>(example >> 32)},
                              k);
    const int64_t end = std::min<int64_t>(base + 4, n);
    for (int64_t e = base; e < end; ++e) {
      const float u = static_cast<float>(r[static_cast<size_t>(e - base)] >> 8) * (1.0f / 16777216.0f);
      mask[e] = u >= rate ? scale : 0.0f;
    }
  }
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
  const int64_t batch = x.dim(0);
  const int64_t per = batch == 0 ? 0 : x.numel() / batch;
  const uint64_t key = mask_key(ctx.seed, ctx.step);
  ops::on_device(*ctx.ops, "dropout", {&x, &mask, &y}, [&] {
    const auto* xp = static_cast<const float*>(x.raw());
    auto* mp = static_cast<float*>(mask.raw());
    auto* yp = static_cast<float*>(y.raw());
    for (int64_t r = 0; r < batch; ++r) {
      const auto example = static_cast<uint64_t>(ctx.example_offset + r);
      dropout_mask(key, example, rate_, mp + r * per, per);
    }
    for (int64_t i = 0; i < batch * per; ++i) yp[i] = xp[i] * mp[i];
  }, [&] {
    // The same masks, bit for bit (engine/cuda/dropout.hpp).
    gpu::dropout(ctx.ops->device, key, ctx.example_offset, rate_, static_cast<const float*>(x.raw()),
                 static_cast<float*>(mask.raw()), static_cast<float*>(y.raw()), batch, per);
  });
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
