// The CUDA module's entry point: the one function libdtrain_cuda.so exports,
// handing dtrain its GpuBackend (engine/cuda_module.hpp). The backend catches
// its own exceptions, so none crosses into the executable.
#include "engine/cuda/cuda_backend.hpp"
#include "engine/cuda_module.hpp"

extern "C" const DtrainCudaModule* dtrain_cuda_module(void) noexcept {
  static const DtrainCudaModule module = {
      .abi_version = kDtrainCudaModuleAbi,
      .table_size = sizeof(DtrainCudaModule),
      .backend = &dtrain::cuda::cuda_backend(),
  };
  return &module;
}
