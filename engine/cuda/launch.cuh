// Launch shapes shared by the elementwise kernels (.cu files only).
#pragma once

#include <algorithm>
#include <cstdint>

namespace dtrain::cuda {

inline constexpr int kThreadsPerBlock = 256;

// Blocks for a grid-stride loop over n items: one item per thread up to 2^16
// blocks (16.7 M threads, many per SM on an H100), then each thread loops.
inline unsigned grid_for(int64_t n) {
  return static_cast<unsigned>(std::min<int64_t>((n + kThreadsPerBlock - 1) / kThreadsPerBlock, int64_t{1} << 16));
}

__device__ inline int64_t global_thread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t grid_threads() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

}  // namespace dtrain::cuda
