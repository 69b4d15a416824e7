// The CUDA module's GpuBackend (engine/cuda_module.hpp): device memory from
// each GPU's caching allocator, copies, and the ops, each queued on the GPU's
// compute stream. module.cpp exports it.
#pragma once

#include "engine/cuda_module.hpp"

namespace dtrain::cuda {

// The process's one backend (stateless: the per-GPU state is device_context.hpp's).
GpuBackend& cuda_backend();

}  // namespace dtrain::cuda
