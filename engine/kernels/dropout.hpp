// Inverted dropout's float32 CPU kernels: counter-based masks (Philox, four
// elements per block; engine/rng.hpp), so that an element's keep/drop decision
// depends only on (key, global example, element), not on how the batch is
// split among replicas or threads. The CUDA module draws the same masks, bit
// for bit (engine/cuda/dropout.hpp). Thread-safe.
#pragma once

#include <cstdint>

namespace dtrain::kernels {

// One example's inverted-dropout mask: mask[e] = 1 / (1 - rate) when
// CounterRng(key, example).uniform(e) >= rate, else 0, for e in [0, n).
void dropout_mask(uint64_t key, uint64_t example, float rate, float* mask, int64_t n);

// x, mask, y (rows, per): row r is global example example_offset + r; mask :=
// its dropout_mask, y := x * mask. Rows are split over the OpenMP team
// (kernels/parallel.hpp). REQUIRES: 0 <= rate < 1.
void dropout_forward(const float* x, float* mask, float* y, int64_t rows, int64_t per, uint64_t key,
                     int64_t example_offset, float rate);

}  // namespace dtrain::kernels
