// Dropout masks on the GPU, bit-identical to the CPU layer
// (engine/layers/dropout.cpp): element e of row r keeps its value, scaled by
// 1 / (1 - rate), when CounterRng(key, example_offset + r).uniform(e) >= rate,
// with key = Dropout::mask_key(seed, step). Work is queued on `stream`.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/base/status.hpp"

namespace dtrain::cuda {

// x, mask, y: (rows, per) float32 device memory; mask gets 0 or 1 / (1 - rate),
// y = x * mask. y may be x; mask is distinct from both.
// REQUIRES: 0 <= rate < 1.
Status dropout_forward(uint64_t key, int64_t example_offset, float rate, const float* x, float* mask, float* y,
                       int64_t rows, int64_t per, cudaStream_t stream);
// dx = dy * mask. All (n); dx may be dy.
Status dropout_backward(const float* mask, const float* dy, float* dx, int64_t n, cudaStream_t stream);

}  // namespace dtrain::cuda
