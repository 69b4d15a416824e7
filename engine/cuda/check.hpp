// CUDA runtime, cuBLAS/cuBLASLt, cuDNN and NCCL status codes as dtrain
// Errors, wrapped at the call site with the call, file:line, GPU, host and
// rank (format in gpu_error.hpp):
//   DTRAIN_CUDA_RETURN_IF_ERROR(cudaMalloc(&p, bytes));   // in a function returning Status or Result<T>
//   Status s = DTRAIN_CUDA_STATUS(cublasLtMatmul(...));
//   kernel<<<g, b, 0, stream>>>(...); return DTRAIN_CUDA_LAUNCH_STATUS("relu_forward");
// Success costs one comparison; the message is built only on failure.
#pragma once

#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <cudnn_graph.h>
#include <nccl.h>

#include <string_view>
#include <type_traits>

#include "engine/base/status.hpp"

namespace dtrain::cuda {

Error cuda_failure(cudaError_t code, std::string_view call, const char* file, int line);
Error cublas_failure(cublasStatus_t code, std::string_view call, const char* file, int line);
Error cudnn_failure(cudnnStatus_t code, std::string_view call, const char* file, int line);
Error nccl_failure(ncclResult_t code, std::string_view call, const char* file, int line);

inline Status call_status(cudaError_t code, std::string_view call, const char* file, int line) {
  if (code == cudaSuccess) return {};
  return cuda_failure(code, call, file, line);
}
inline Status call_status(cublasStatus_t code, std::string_view call, const char* file, int line) {
  if (code == CUBLAS_STATUS_SUCCESS) return {};
  return cublas_failure(code, call, file, line);
}
inline Status call_status(cudnnStatus_t code, std::string_view call, const char* file, int line) {
  if (code == CUDNN_STATUS_SUCCESS) return {};
  return cudnn_failure(code, call, file, line);
}
inline Status call_status(ncclResult_t code, std::string_view call, const char* file, int line) {
  if (code == ncclSuccess) return {};
  return nccl_failure(code, call, file, line);
}

// cuDNN keeps a per-thread detail message of its last failure until it is
// read: a later successful call leaves it there, and cuDNN also leaves traces
// of failures it handled itself (an engine that does not support a shape). A
// wrapped cuDNN call therefore reads and drops it first, so that a failure
// reports only its own detail (cudnn_failure), or "no detail from cuDNN".
void clear_cudnn_detail();

// call() checked as call_status; a cuDNN call starts from a clear detail message.
template <class Call>
Status checked_call(Call&& call, std::string_view text, const char* file, int line) {
  if constexpr (std::is_same_v<std::invoke_result_t<Call&>, cudnnStatus_t>) clear_cudnn_detail();
  return call_status(call(), text, file, line);
}

// The error of the kernel launch just made on this thread (bad launch
// configuration, no kernel image for this GPU), as "launch of <kernel>".
// Errors of the kernel's execution surface later, at a synchronising call.
Status launch_status(std::string_view kernel, const char* file, int line);

}  // namespace dtrain::cuda

#define DTRAIN_CUDA_STATUS(call) \
  ::dtrain::cuda::checked_call([&]() { return (call); }, #call, __FILE__, __LINE__)
#define DTRAIN_CUDA_RETURN_IF_ERROR(call)                                     \
  do {                                                                       \
    if (::dtrain::Status dtrain_s_ = DTRAIN_CUDA_STATUS(call); !dtrain_s_.ok()) \
      return dtrain_s_.error();                                              \
  } while (0)
#define DTRAIN_CUDA_LAUNCH_STATUS(kernel) ::dtrain::cuda::launch_status((kernel), __FILE__, __LINE__)
