// Fused optimizer updates on the GPU: every variable of a step updated in a
// few launches (one per kMaxTensorsPerLaunch tensors, multi_tensor.hpp),
// with math bit-identical to engine/optim's CPU sgd and adam/adamw
// (update_math.hpp). Work is queued on `stream`; the Status reports a failed
// launch.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>

#include "engine/cuda/update_math.hpp"
#include "engine/base/status.hpp"

namespace dtrain::cuda {

// One variable and its gradient and slots, all float32 device memory of
// `numel` elements. Slots unused by an optimizer may be nullptr.
// REQUIRES: no two buffers of one update call overlap.
struct OptimTensor {
  float* var = nullptr;
  const float* grad = nullptr;
  float* slot0 = nullptr;  // sgd: "momentum" (when momentum > 0); adam: "m"
  float* slot1 = nullptr;  // adam: "v"
  int64_t numel = 0;
};

// sgd.cpp: w -= lr g when momentum <= 0, else Keras' momentum / Nesterov
// update with slot0 as the velocity.
Status sgd_update(std::span<const OptimTensor> tensors, float lr, float momentum, bool nesterov,
                  cudaStream_t stream);

// adam.cpp: `s` from exact::adam_scalars(beta1, beta2, epsilon, weight_decay
// (0 for adam), lr, step).
Status adam_update(std::span<const OptimTensor> tensors, const exact::AdamScalars& s, cudaStream_t stream);

}  // namespace dtrain::cuda
