// Fused multi-tensor optimizer kernels (fused_optim.hpp). The tensor list of
// a launch travels in the kernel's parameters (__grid_constant__: read in
// place, never copied per thread); block b finds its tensor by binary search
// over the launch's chunk starts and updates one chunk of it.
#include <vector>

#include "engine/cuda/check.hpp"
#include "engine/cuda/fused_optim.hpp"
#include "engine/cuda/multi_tensor.hpp"

namespace dtrain::cuda {

namespace {

constexpr int kOptimThreads = 256;

struct TensorList {
  float* var[kMaxTensorsPerLaunch];
  const float* grad[kMaxTensorsPerLaunch];
  float* slot0[kMaxTensorsPerLaunch];
  float* slot1[kMaxTensorsPerLaunch];
  int64_t numel[kMaxTensorsPerLaunch];
  int32_t chunk_start[kMaxTensorsPerLaunch + 1];
  int32_t count;
};
// Kernel parameters must fit in 4 KB on every CUDA version we might meet.
static_assert(sizeof(TensorList) + 64 <= 4096, "TensorList too large for kernel parameters");

struct SgdOp {
  float lr;
  __device__ void operator()(float* w, const float* g, float*, float*, int64_t i) const {
    float wi = w[i];
    exact::sgd(wi, g[i], lr);
    w[i] = wi;
  }
};

struct SgdMomentumOp {
  float lr, momentum;
  bool nesterov;
  __device__ void operator()(float* w, const float* g, float* v, float*, int64_t i) const {
    float wi = w[i], vi = v[i];
    exact::sgd_momentum(wi, vi, g[i], lr, momentum, nesterov);
    w[i] = wi;
    v[i] = vi;
  }
};

struct AdamOp {
  exact::AdamScalars s;
  __device__ void operator()(float* w, const float* g, float* m, float* v, int64_t i) const {
    float wi = w[i], mi = m[i], vi = v[i];
    exact::adam(wi, mi, vi, g[i], s);
    w[i] = wi;
    m[i] = mi;
    v[i] = vi;
  }
};

template <class Op>
__global__ void multi_tensor_kernel(const __grid_constant__ TensorList list, const Op op) {
  const int32_t block = static_cast<int32_t>(blockIdx.x);
  const int t = tensor_of_block(list.chunk_start, list.count, block);
  const int64_t begin = static_cast<int64_t>(block - list.chunk_start[t]) * kChunkElements;
  const int64_t end = begin + kChunkElements < list.numel[t] ? begin + kChunkElements : list.numel[t];
  float* const w = list.var[t];
  const float* const g = list.grad[t];
  float* const s0 = list.slot0[t];
  float* const s1 = list.slot1[t];
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) op(w, g, s0, s1, i);
}

template <class Op>
Status launch_all(std::span<const OptimTensor> tensors, const Op& op, cudaStream_t stream, const char* name) {
  std::vector<int64_t> sizes(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) sizes[i] = tensors[i].numel;
  for (const MultiTensorLaunch& launch : plan_multi_tensor(sizes)) {
    if (launch.blocks() == 0) continue;
    TensorList list{};
    list.count = launch.count;
    for (int t = 0; t < launch.count; ++t) {
      const OptimTensor& x = tensors[launch.first + static_cast<size_t>(t)];
      list.var[t] = x.var;
      list.grad[t] = x.grad;
      list.slot0[t] = x.slot0;
      list.slot1[t] = x.slot1;
      list.numel[t] = x.numel;
    }
    for (int t = 0; t <= launch.count; ++t) list.chunk_start[t] = launch.chunk_start[static_cast<size_t>(t)];
    multi_tensor_kernel<Op><<<static_cast<unsigned>(launch.blocks()), kOptimThreads, 0, stream>>>(list, op);
    if (Status s = DTRAIN_CUDA_LAUNCH_STATUS(name); !s.ok()) return s;
  }
  return {};
}

}  // namespace

Status sgd_update(std::span<const OptimTensor> tensors, float lr, float momentum, bool nesterov,
                  cudaStream_t stream) {
  if (momentum <= 0.0f) return launch_all(tensors, SgdOp{lr}, stream, "multi_tensor_kernel<SgdOp>");
  return launch_all(tensors, SgdMomentumOp{lr, momentum, nesterov}, stream, "multi_tensor_kernel<SgdMomentumOp>");
}

Status adam_update(std::span<const OptimTensor> tensors, const exact::AdamScalars& s, cudaStream_t stream) {
  return launch_all(tensors, AdamOp{s}, stream, "multi_tensor_kernel<AdamOp>");
}

}  // namespace dtrain::cuda
