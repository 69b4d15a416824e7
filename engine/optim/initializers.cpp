// Seeded initializers: glorot_uniform, he_normal (truncated), random_uniform,
// zeros, ones, constant. Element i of a variable depends only on (seed, name, i).
#include "engine/optim/initializers.hpp"

#include <fmt/format.h>

#include <cmath>

#include "engine/losses/choice_error.hpp"
#include "engine/rng.hpp"

namespace dtrain {

namespace {
// Keeps initializer streams apart from other users of the seed (dropout).
constexpr uint64_t kInitStreamTag = 0x696e6974ull << 32;  // "init"
// A truncated draw is redrawn at most this often (P(|z| > 2) = 0.0455 per
// draw, so the cap is never reached in practice; if it were, z is clamped).
constexpr uint64_t kMaxRedraws = 32;

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

struct Fans {
  double in, out;
};

Fans fans_of(const Shape& s) {
  if (s.empty()) return {1.0, 1.0};
  if (s.size() == 1) return {static_cast<double>(s[0]), static_cast<double>(s[0])};
  if (s.size() == 2) return {static_cast<double>(s[0]), static_cast<double>(s[1])};
  double receptive = 1.0;  // kernel spatial dims (kh, kw, ...), then (in, out)
  for (size_t i = 0; i + 2 < s.size(); ++i) receptive *= static_cast<double>(s[i]);
  return {receptive * static_cast<double>(s[s.size() - 2]), receptive * static_cast<double>(s.back())};
}
}  // namespace

Status initialize(Tensor& t, const InitializerSpec& spec, uint64_t seed, std::string_view variable_name) {
  float* x = t.data();
  const int64_t n = t.numel();
  const uint64_t key = hash64(variable_name) ^ splitmix64(seed);
  if (spec.type == "zeros" || spec.type == "ones" || spec.type == "constant") {
    t.fill(spec.type == "zeros" ? 0.0f : spec.type == "ones" ? 1.0f : spec.value);
    return Status::Ok();
  }
  const Fans fans = fans_of(t.shape());
  if (spec.type == "glorot_uniform") {
    const CounterRng rng(key, kInitStreamTag);
    const float limit = static_cast<float>(std::sqrt(6.0 / (fans.in + fans.out)));
    for (int64_t i = 0; i < n; ++i) x[i] = limit * (2.0f * rng.uniform(static_cast<uint64_t>(i)) - 1.0f);
    return Status::Ok();
  }
  if (spec.type == "random_uniform") {
    const CounterRng rng(key, kInitStreamTag);
    const float lo = spec.minval, width = spec.maxval - spec.minval;
    for (int64_t i = 0; i < n; ++i) x[i] = lo + width * rng.uniform(static_cast<uint64_t>(i));
    return Status::Ok();
  }
  if (spec.type == "he_normal") {
    // 0.8796... is the stddev of a standard normal truncated to [-2, 2] (Keras).
    const float stddev = static_cast<float>(std::sqrt(2.0 / fans.in) / 0.87962566103423978);
    for (int64_t i = 0; i < n; ++i) {
      float z = 0.0f;
      for (uint64_t attempt = 0; attempt < kMaxRedraws; ++attempt) {
        z = CounterRng(key, kInitStreamTag + attempt).normal(static_cast<uint64_t>(i));
        if (std::fabs(z) <= 2.0f) break;
      }
      x[i] = stddev * std::fmax(-2.0f, std::fmin(2.0f, z));
    }
    return Status::Ok();
  }
  return unknown_choice_error(std::string(variable_name) + ": initializer", spec.type,
                              {"glorot_uniform", "he_normal", "random_uniform", "zeros", "ones", "constant"});
}

Status check_initializer(const InitializerSpec& spec) {
  if (spec.type == "random_uniform" &&
      !(std::isfinite(spec.minval) && std::isfinite(spec.maxval) && spec.minval <= spec.maxval)) {
    return config_error(fmt::format("random_uniform needs finite minval <= maxval; got minval {} and maxval {}",
                                    spec.minval, spec.maxval));
  }
  return Status::Ok();
}

}  // namespace dtrain
