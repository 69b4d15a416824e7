// How the fused multi-tensor kernels (fused_optim.cu) cover a list of
// tensors: launches of at most kMaxTensorsPerLaunch tensors, in which block b
// updates one chunk of kChunkElements elements of one tensor. The plan is
// made on the host and its lookup runs on the GPU; both are pure and tested
// on the host.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/cuda/host_device.hpp"

namespace dtrain::cuda {

// 64 tensors keep a launch's arguments (4 pointers, a size and a chunk start
// per tensor: 2.8 KB) under the classic 4 KB kernel-parameter limit.
inline constexpr int kMaxTensorsPerLaunch = 64;
inline constexpr int64_t kChunkElements = 16384;

struct MultiTensorLaunch {
  size_t first = 0;  // index in the list of this launch's first tensor
  int count = 0;     // tensors in this launch (consecutive in the list)
  // count + 1 entries: blocks [chunk_start[t], chunk_start[t + 1]) update
  // tensor first + t; a tensor of 0 elements has an empty range.
  std::vector<int32_t> chunk_start;
  int32_t blocks() const { return chunk_start.back(); }
};

// Splits tensors of the given element counts, in order, into launches of at
// most `max_tensors` tensors and at most `max_blocks` blocks each.
// REQUIRES: sizes[i] >= 0; max_tensors >= 1; chunk >= 1; one tensor needs at
// most max_blocks chunks.
std::vector<MultiTensorLaunch> plan_multi_tensor(std::span<const int64_t> sizes, int max_tensors = kMaxTensorsPerLaunch,
                                                 int64_t chunk = kChunkElements, int32_t max_blocks = 0x7fffffff);

// The tensor t (0 <= t < count) with chunk_start[t] <= block < chunk_start[t + 1].
// REQUIRES: chunk_start non-decreasing, chunk_start[0] == 0, 0 <= block < chunk_start[count].
DTRAIN_HOST_DEVICE inline int tensor_of_block(const int32_t* chunk_start, int count, int32_t block) {
  int lo = 0, hi = count - 1;  // the answer is the last t with chunk_start[t] <= block
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (chunk_start[mid] <= block) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

}  // namespace dtrain::cuda
