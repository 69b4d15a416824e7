// Helpers for kernel tests: seeded random buffers, bf16 conversions of whole
// buffers, and max-relative-error comparisons against references.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "engine/kernels/cast.hpp"

namespace dtrain::test {

inline std::vector<float> random_vector(size_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// max |got - want| / max(max |want|, 1e-6): a scale-aware error.
inline double max_rel_error(const std::vector<float>& got, const std::vector<double>& want) {
  double scale = 1e-6, err = 0.0;
  for (double w : want) scale = std::max(scale, std::fabs(w));
  for (size_t i = 0; i < want.size(); ++i) err = std::max(err, std::fabs(got[i] - want[i]));
  return got.size() == want.size() ? err / scale : 1e30;
}

inline double max_rel_error(const std::vector<float>& got, const std::vector<float>& want) {
  return max_rel_error(got, std::vector<double>(want.begin(), want.end()));
}

// The largest per-element error of a bf16 result against an f32 one, in
// units of `want`'s bf16 rounding step: |got - want| / (2^-8 |want| + abs_tol).
// <= 1 means every element is within one bf16 ulp (relative 2^-8 = 3.9e-3)
// of the f32 value, give or take abs_tol for the f32 accumulation order.
inline double max_bf16_ulp_error(const std::vector<float>& got, const std::vector<float>& want, double abs_tol) {
  if (got.size() != want.size()) return 1e30;
  double err = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::fabs(double(got[i]) - want[i]) / (std::ldexp(std::fabs(double(want[i])), -8) + abs_tol));
  }
  return err;
}

inline std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<uint16_t> b(v.size());
  for (size_t i = 0; i < v.size(); ++i) b[i] = kernels::float_to_bf16(v[i]);
  return b;
}

inline std::vector<float> from_bf16(const std::vector<uint16_t>& b) {
  std::vector<float> v(b.size());
  for (size_t i = 0; i < b.size(); ++i) v[i] = kernels::bf16_to_float(b[i]);
  return v;
}

// v with every element rounded to the nearest bf16 value (kept as float).
inline std::vector<float> round_to_bf16(const std::vector<float>& v) { return from_bf16(to_bf16(v)); }

// The largest |x| of v (at least 1e-6): the scale of a scale-aware tolerance.
inline double max_abs(const std::vector<float>& v) {
  double m = 1e-6;
  for (float x : v) m = std::max(m, double(std::fabs(x)));
  return m;
}

}  // namespace dtrain::test
