// The failure paths of check.hpp: names and descriptions from each library.
#include "engine/cuda/check.hpp"

#include <string>

#include "engine/cuda/gpu_error.hpp"

namespace dtrain::cuda {

namespace {

int current_device() {
  int d = -1;
  if (cudaGetDevice(&d) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return d;
}

const char* nccl_name(ncclResult_t code) {
  switch (code) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    default: return "ncclResult_t";
  }
}

}  // namespace

void clear_cudnn_detail() {
  char stale[512];
  cudnnGetLastErrorString(stale, sizeof(stale));  // reading it clears it
}

Error cuda_failure(cudaError_t code, std::string_view call, const char* file, int line) {
  // Clear the (non-sticky) error so a later launch_status does not report it again.
  cudaGetLastError();
  return gpu_failure_error({call, cudaGetErrorName(code), static_cast<long long>(code), cudaGetErrorString(code), file,
                            line, current_device()});
}

Error cublas_failure(cublasStatus_t code, std::string_view call, const char* file, int line) {
  return gpu_failure_error({call, cublasGetStatusName(code), static_cast<long long>(code), cublasGetStatusString(code),
                            file, line, current_device()});
}

Error cudnn_failure(cudnnStatus_t code, std::string_view call, const char* file, int line) {
  // cuDNN 9 keeps a per-thread detail message for the last failure.
  char detail[512] = {};
  cudnnGetLastErrorString(detail, sizeof(detail));
  const std::string description = detail[0] != '\0' ? std::string(detail) : std::string("no detail from cuDNN");
  return gpu_failure_error({call, cudnnGetErrorString(code), static_cast<long long>(code), description, file, line,
                            current_device()});
}

Error nccl_failure(ncclResult_t code, std::string_view call, const char* file, int line) {
  return gpu_failure_error({call, nccl_name(code), static_cast<long long>(code), ncclGetErrorString(code), file, line,
                            current_device()});
}

Status launch_status(std::string_view kernel, const char* file, int line) {
  const cudaError_t code = cudaGetLastError();
  if (code == cudaSuccess) return {};
  const std::string call = "launch of " + std::string(kernel);
  return gpu_failure_error({call, cudaGetErrorName(code), static_cast<long long>(code), cudaGetErrorString(code), file,
                            line, current_device()});
}

}  // namespace dtrain::cuda
