// Seeded variable initializers. Values are a pure function of (seed,
// variable name, element index) through the counter-based RNG, so every
// replica and every strategy creates identical variables.
#pragma once

#include <cstdint>
#include <string_view>

#include "engine/layer.hpp"
#include "engine/base/status.hpp"
#include "engine/tensor.hpp"

namespace dtrain {

// Fans follow Keras: rank 1 (n): fan_in = fan_out = n; rank 2 (in, out);
// rank 4 (kh, kw, in, out): fan_in = kh*kw*in, fan_out = kh*kw*out.
// glorot_uniform: U(-l, l), l = sqrt(6 / (fan_in + fan_out)); he_normal: truncated
// normal (|z| <= 2, redrawn) with stddev sqrt(2 / fan_in) / 0.87962566103423978;
// random_uniform: U(spec.minval, spec.maxval) (Keras RandomUniform, whose
// defaults -0.05, 0.05 are Embedding's "uniform"); zeros; ones; constant (spec.value).
Status initialize(Tensor& t, const InitializerSpec& spec, uint64_t seed, std::string_view variable_name);

// A config error for an initializer whose arguments cannot work, before any
// variable is made: random_uniform with minval > maxval (or a non-finite bound).
Status check_initializer(const InitializerSpec& spec);

}  // namespace dtrain
