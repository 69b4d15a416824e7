// The launch plan of the fused multi-tensor kernels (multi_tensor.hpp).
#include "engine/cuda/multi_tensor.hpp"

#include <cassert>

namespace dtrain::cuda {

std::vector<MultiTensorLaunch> plan_multi_tensor(std::span<const int64_t> sizes, int max_tensors, int64_t chunk,
                                                 int32_t max_blocks) {
  assert(max_tensors >= 1 && chunk >= 1 && max_blocks >= 1);
  std::vector<MultiTensorLaunch> plan;
  MultiTensorLaunch cur;
  cur.chunk_start = {0};
  for (size_t i = 0; i < sizes.size(); ++i) {
    assert(sizes[i] >= 0);
    const int64_t chunks = (sizes[i] + chunk - 1) / chunk;
    assert(chunks <= max_blocks);
    if (cur.count == max_tensors || static_cast<int64_t>(cur.blocks()) + chunks > max_blocks) {
      plan.push_back(std::move(cur));
      cur = MultiTensorLaunch{};
      cur.first = i;
      cur.chunk_start = {0};
    }
    cur.chunk_start.push_back(static_cast<int32_t>(cur.blocks() + chunks));
    ++cur.count;
  }
  if (cur.count > 0) plan.push_back(std::move(cur));
  return plan;
}

}  // namespace dtrain::cuda
