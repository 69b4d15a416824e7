// The CUDA module's entry point: the one table of what libdtrain_cuda.so offers
// dtrain (engine/cuda_module.hpp). Each entry catches its own exceptions, so
// none crosses into the executable.
#include <cstdio>
#include <exception>

#include "engine/cuda/backend_entries.hpp"
#include "engine/cuda/discover.hpp"
#include "engine/cuda_module.hpp"

namespace dtrain::cuda {
namespace {

void discover_gpus_entry(DtrainCudaReport* out) noexcept {
  try {
    discover_gpus(*out);
  } catch (const std::exception& e) {
    *out = DtrainCudaReport{};
    std::snprintf(out->status, sizeof(out->status), "GPU discovery failed: %s", e.what());  // allocates nothing
  } catch (...) {
    *out = DtrainCudaReport{};
    copy_c_text(out->status, "GPU discovery failed: unknown exception");
  }
}

constexpr DtrainCudaModule kTable = {
    .abi_version = kDtrainCudaModuleAbi,
    .table_size = sizeof(DtrainCudaModule),
    .discover_gpus = &discover_gpus_entry,
    .mem_alloc = &entries::mem_alloc,
    .mem_free = &entries::mem_free,
    .mem_copy = &entries::mem_copy,
    .mem_fill32 = &entries::mem_fill32,
    .matmul = &entries::matmul,
    .eltwise = &entries::eltwise,
    .rows = &entries::rows,
    .dropout = &entries::dropout,
    .sparse_xent = &entries::sparse_xent,
    .reduce = &entries::reduce,
    .optimizer = &entries::optimizer,
    .mem_stats = &entries::mem_stats,
    .conv2d = &entries::conv2d,
    .pool2d = &entries::pool2d,
};

}  // namespace
}  // namespace dtrain::cuda

extern "C" const DtrainCudaModule* dtrain_cuda_module(void) noexcept { return &dtrain::cuda::kTable; }
