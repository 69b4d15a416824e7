// The per-element updates of engine/optim's sgd (sgd.cpp) and adam/adamw
// (adam.cpp), written once for the fused CUDA kernels and for host tests
// that compare them with the CPU optimizers. Every float operation is
// rounded on its own, in the CPU loops' order, and never contracted into an
// FMA (__fmul_rn and friends on the GPU), because the CPU loops are compiled
// without FMA (x86-64 baseline, no -march): the GPU's results are then
// bit-identical to the CPU's. Keep these in step with sgd.cpp and adam.cpp;
// the tests in tests/cuda/ fail when they drift.
#pragma once

#include <cmath>
#include <cstdint>

#include "engine/cuda/host_device.hpp"

namespace dtrain::cuda::exact {

DTRAIN_HOST_DEVICE inline float mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
DTRAIN_HOST_DEVICE inline float add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
DTRAIN_HOST_DEVICE inline float sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
DTRAIN_HOST_DEVICE inline float div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
DTRAIN_HOST_DEVICE inline float sqrt(float a) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}

// sgd without momentum: w -= lr g.
DTRAIN_HOST_DEVICE inline void sgd(float& w, float g, float lr) { w = sub(w, mul(lr, g)); }

// sgd with momentum m (> 0), Keras': v = m v - lr g; w += v, or with
// nesterov w += m v - lr g.
DTRAIN_HOST_DEVICE inline void sgd_momentum(float& w, float& v, float g, float lr, float m, bool nesterov) {
  const float vi = sub(mul(m, v), mul(lr, g));
  v = vi;
  w = nesterov ? add(w, sub(mul(m, vi), mul(lr, g))) : add(w, vi);
}

// The scalars of one adam/adamw update, computed on the host exactly as
// adam.cpp computes them (double, then float).
struct AdamScalars {
  float lr_t = 0;          // lr sqrt(1 - b2^t) / (1 - b1^t)
  float one_minus_b1 = 0;
  float one_minus_b2 = 0;
  float keep = 1;          // 1 - lr wd (adamw), 1 for adam
  float eps = 0;
};

// REQUIRES: step >= 1. weight_decay: 0 for adam, the spec's for adamw.
inline AdamScalars adam_scalars(double beta1, double beta2, double epsilon, double weight_decay, float lr,
                                int64_t step) {
  const double t = static_cast<double>(step);
  AdamScalars s;
  s.lr_t = static_cast<float>(static_cast<double>(lr) * std::sqrt(1.0 - std::pow(beta2, t)) /
                              (1.0 - std::pow(beta1, t)));
  s.one_minus_b1 = static_cast<float>(1.0 - beta1);
  s.one_minus_b2 = static_cast<float>(1.0 - beta2);
  s.keep = static_cast<float>(1.0 - static_cast<double>(lr) * weight_decay);
  s.eps = static_cast<float>(epsilon);
  return s;
}

// m += (1 - b1)(g - m); v += (1 - b2)(g^2 - v); w = keep w - lr_t m / (sqrt(v) + eps).
DTRAIN_HOST_DEVICE inline void adam(float& w, float& m, float& v, float g, const AdamScalars& s) {
  const float mi = add(m, mul(s.one_minus_b1, sub(g, m)));
  const float vi = add(v, mul(s.one_minus_b2, sub(mul(g, g), v)));
  m = mi;
  v = vi;
  w = sub(mul(s.keep, w), div(mul(s.lr_t, mi), add(sqrt(vi), s.eps)));
}

}  // namespace dtrain::cuda::exact
