// The compute backend's entries of the module table (cuda_module.hpp, ABI 2):
// device memory from each GPU's caching allocator, copies, and the ops, each
// queued on the GPU's compute stream. module.cpp puts them in the table.
#pragma once

#include "engine/cuda_module.hpp"

namespace dtrain::cuda::entries {

int32_t mem_alloc(int32_t device, uint64_t bytes, void** out, DtrainCudaError* err) noexcept;
void mem_free(int32_t device, void* p) noexcept;
int32_t mem_copy(int32_t dst_device, void* dst, int32_t src_device, const void* src, uint64_t bytes,
                 DtrainCudaError* err) noexcept;
int32_t mem_fill32(int32_t device, void* p, uint32_t word, int64_t n, DtrainCudaError* err) noexcept;
int32_t matmul(int32_t device, const DtrainCudaMatmul* args, DtrainCudaError* err) noexcept;
int32_t eltwise(int32_t device, const DtrainCudaEltwise* args, DtrainCudaError* err) noexcept;
int32_t rows(int32_t device, const DtrainCudaRows* args, DtrainCudaError* err) noexcept;
int32_t dropout(int32_t device, uint64_t key, int64_t example_offset, float rate, const float* x, float* mask,
                float* y, int64_t rows, int64_t per, DtrainCudaError* err) noexcept;
int32_t sparse_xent(int32_t device, const DtrainCudaXent* args, DtrainCudaError* err) noexcept;
int32_t reduce(int32_t device, int32_t kind, const float* x, int64_t n, double* host_out,
               DtrainCudaError* err) noexcept;
int32_t optimizer(int32_t device, const DtrainCudaOptim* args, DtrainCudaError* err) noexcept;
int32_t conv2d(int32_t device, const DtrainCudaConv* args, DtrainCudaError* err) noexcept;
int32_t pool2d(int32_t device, const DtrainCudaPool* args, DtrainCudaError* err) noexcept;
int32_t mem_stats(int32_t device, DtrainCudaMemStats* out, DtrainCudaError* err) noexcept;

}  // namespace dtrain::cuda::entries
