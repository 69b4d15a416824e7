// GPU discovery through the CUDA runtime, with cuBLAS, cuDNN and NCCL versions
// (discover.hpp); part of the CUDA module.
#include "engine/cuda/discover.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include <algorithm>
#include <string>

namespace dtrain::cuda {
namespace {

std::string dotted(int v, int major_div, int minor_div, int minor_mod) {
  return std::to_string(v / major_div) + "." + std::to_string((v / minor_div) % minor_mod);
}

// 92801 -> "9.28.1" (cuDNN's and NCCL's encodings).
std::string dotted3(long long v) {
  return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." + std::to_string(v % 100);
}

}  // namespace

void discover_gpus(DtrainCudaReport& r) {
  r = DtrainCudaReport{};
  int runtime = 0, driver = 0;
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) copy_c_text(r.cuda_runtime, dotted(runtime, 1000, 10, 100));
  if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0) {
    copy_c_text(r.cuda_driver, dotted(driver, 1000, 10, 100));
  }
  copy_c_text(r.cudnn, dotted3(static_cast<long long>(cudnnGetVersion())));
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess) copy_c_text(r.nccl, dotted3(nccl));
  int cublas = 0;
  if (cublasGetProperty(MAJOR_VERSION, &cublas) == CUBLAS_STATUS_SUCCESS) {
    int minor = 0, patch = 0;
    cublasGetProperty(MINOR_VERSION, &minor);
    cublasGetProperty(PATCH_LEVEL, &patch);
    copy_c_text(r.cublas, std::to_string(cublas) + "." + std::to_string(minor) + "." + std::to_string(patch));
  }
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    // Without a driver this is cudaErrorInsufficientDriver (35), not
    // cudaErrorNoDevice (100): both mean "no usable GPU".
    copy_c_text(r.status, std::string("no usable GPU: cudaGetDeviceCount: ") + cudaGetErrorString(err) + " (" +
                              std::to_string(static_cast<int>(err)) + ")");
    cudaGetLastError();
    return;
  }
  copy_c_text(r.status, count == 0 ? "no GPU found" : "ok");
  for (int i = 0; i < std::min(count, static_cast<int>(kDtrainCudaMaxGpus)); ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    DtrainCudaGpu& g = r.gpus[r.gpu_count++];
    g.index = i;
    copy_c_text(g.name, p.name);
    g.total_memory = static_cast<uint64_t>(p.totalGlobalMem);
    g.cc_major = p.major;
    g.cc_minor = p.minor;
    g.multiprocessors = p.multiProcessorCount;
  }
}

}  // namespace dtrain::cuda
