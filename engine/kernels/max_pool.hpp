// float32 max pooling on the CPU (NHWC): dtrain's own loops, used in place of
// oneDNN 2.6's, whose AVX2 NHWC pooling runs at a fifth of memory speed
// (mnist_cnn's first pool: 5.8 ms forward, 4.1 ms backward for 6.4 MiB). The
// channels go in vector lanes; each build (x86-64-v4, v3, baseline, picked by
// cpu_isa()) gives the same bits: the max is exact, ties go to the first tap
// in (kh, kw) order, and dx adds the windows' shares in output order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/kernels/pool.hpp"

namespace dtrain::kernels {

// The workspace: one int32 per element of y, the tap (ky * kw + kx) that gave
// the max, or -1 when no tap of the window is inside the input.
size_t max_pool_f32_workspace_bytes(const Pool2dShape& s);
void max_pool_f32_forward(const Pool2dShape& s, const float* x, float* y, int32_t* taps);
void max_pool_f32_backward(const Pool2dShape& s, const float* dy, float* dx, const int32_t* taps);

}  // namespace dtrain::kernels
