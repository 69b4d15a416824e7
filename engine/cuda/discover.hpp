// GPU discovery inside the CUDA module: the CUDA runtime, driver, cuBLAS, cuDNN
// and NCCL versions and the GPUs this process can use, as the plain report of
// engine/cuda_module.hpp. The host reaches it only through GpuBackend::discover_gpus.
#pragma once

#include "engine/cuda_module.hpp"

namespace dtrain::cuda {

// Fills all of `out`. May throw std::bad_alloc; the backend's method catches it.
void discover_gpus(DtrainCudaReport& out);

}  // namespace dtrain::cuda
