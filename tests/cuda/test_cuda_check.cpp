// CUDA runtime, cuBLAS, cuDNN and NCCL failures as dtrain Errors, with the
// full text pinned; and what a CUDA build does on a machine without a GPU.
// Needs a CUDA build, not a GPU: the libraries' status strings are host code.
#include <doctest.h>
#include <unistd.h>

#include <cudnn.h>

#include <string>

#include "engine/cuda/check.hpp"
#include "engine/cuda/device_context.hpp"
#include "engine/cuda/eltwise.hpp"
#include "engine/cuda/runtime.hpp"

namespace dtrain::cuda {
namespace {

std::string where(int line) { return "tests/cuda/test_cuda_check.cpp:" + std::to_string(line) + ": "; }

std::string host() {
  char buf[256] = {};
  REQUIRE(gethostname(buf, sizeof(buf) - 1) == 0);
  return buf;
}

// " on gpu:N" when the runtime has a current device, as the messages say.
std::string on_gpu() {
  int d = -1;
  if (cudaGetDevice(&d) != cudaSuccess) {
    cudaGetLastError();
    return "";
  }
  return " on gpu:" + std::to_string(d);
}

cudaError_t out_of_memory() { return cudaErrorMemoryAllocation; }
cublasStatus_t not_initialized() { return CUBLAS_STATUS_NOT_INITIALIZED; }
cudnnStatus_t not_supported() { return CUDNN_STATUS_NOT_SUPPORTED; }
ncclResult_t invalid_argument() { return ncclInvalidArgument; }

Status returns_status() {
  DTRAIN_CUDA_RETURN_IF_ERROR(cudaSuccess);
  DTRAIN_CUDA_RETURN_IF_ERROR(out_of_memory());
  return runtime_error("not reached");
}

Result<int> returns_result() {
  DTRAIN_CUDA_RETURN_IF_ERROR(not_initialized());
  return 1;
}

TEST_CASE("cuda check: failed CUDA, cuBLAS, cuDNN and NCCL calls become one-line errors naming call and place") {
  const std::string h = host();
  int line = __LINE__ + 1;
  Status s = DTRAIN_CUDA_STATUS(out_of_memory());
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().kind == ErrorKind::kRuntime);
  CHECK(s.error().message == where(line) + "out_of_memory() failed" + on_gpu() + " (host " + h +
                                 "): cudaErrorMemoryAllocation (2): out of memory");

  line = __LINE__ + 1;
  s = DTRAIN_CUDA_STATUS(not_initialized());
  CHECK(s.error().message == where(line) + "not_initialized() failed" + on_gpu() + " (host " + h +
                                 "): CUBLAS_STATUS_NOT_INITIALIZED (1): the library was not initialized");

  line = __LINE__ + 1;
  s = DTRAIN_CUDA_STATUS(invalid_argument());
  CHECK(s.error().message == where(line) + "invalid_argument() failed" + on_gpu() + " (host " + h +
                                 "): ncclInvalidArgument (4): invalid argument (run with NCCL_DEBUG=WARN for details)");

  line = __LINE__ + 1;
  s = DTRAIN_CUDA_STATUS(not_supported());
  CHECK(s.error().message == where(line) + "not_supported() failed" + on_gpu() + " (host " + h +
                                 "): CUDNN_STATUS_NOT_SUPPORTED (3000): no detail from cuDNN");

  // A real cuDNN failure (host-side argument check) carries cuDNN's own detail.
  cudnnTensorDescriptor_t desc = nullptr;
  REQUIRE(DTRAIN_CUDA_STATUS(cudnnCreateTensorDescriptor(&desc)).ok());
  line = __LINE__ + 1;
  s = DTRAIN_CUDA_STATUS(cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, -1, 1, 1, 1));
  cudnnDestroyTensorDescriptor(desc);
  const std::string prefix = where(line) +
                             "cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, -1, 1, 1, 1) failed" +
                             on_gpu() + " (host " + h + "): CUDNN_STATUS_BAD_PARAM (2000): ";
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.starts_with(prefix));
  CHECK(s.error().message.size() > prefix.size());
  CHECK_FALSE(s.error().message.ends_with("no detail from cuDNN"));

  CHECK(DTRAIN_CUDA_STATUS(cudaSuccess).ok());
  CHECK(DTRAIN_CUDA_STATUS(CUBLAS_STATUS_SUCCESS).ok());
  CHECK(DTRAIN_CUDA_STATUS(CUDNN_STATUS_SUCCESS).ok());
  CHECK(DTRAIN_CUDA_STATUS(ncclSuccess).ok());
}

// A raw (unwrapped) cuDNN call that fails, as cuDNN's own internal attempts
// do: it leaves its detail message behind on this thread.
// Its detail ("padA[i] < 0") differs from the tensor shape failure below.
void leave_a_stale_cudnn_detail() {
  cudnnConvolutionDescriptor_t desc = nullptr;
  REQUIRE(cudnnCreateConvolutionDescriptor(&desc) == CUDNN_STATUS_SUCCESS);
  CHECK(cudnnSetConvolution2dDescriptor(desc, -1, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT) ==
        CUDNN_STATUS_BAD_PARAM);
  cudnnDestroyConvolutionDescriptor(desc);
}

TEST_CASE("cuda check: a cuDNN failure reports its own detail, never one an earlier call left behind") {
  const std::string h = host();
  // The stale detail is there until read: the raw API shows it.
  leave_a_stale_cudnn_detail();
  char raw[512] = {};
  cudnnGetLastErrorString(raw, sizeof(raw));
  REQUIRE_MESSAGE(raw[0] != '\0', "cuDNN left no detail for a bad parameter: the checks below would prove nothing");

  // A wrapped failure without detail of its own after a stale one: no detail.
  leave_a_stale_cudnn_detail();
  int line = __LINE__ + 1;
  Status s = DTRAIN_CUDA_STATUS(not_supported());
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message == where(line) + "not_supported() failed" + on_gpu() + " (host " + h +
                                 "): CUDNN_STATUS_NOT_SUPPORTED (3000): no detail from cuDNN");

  // A successful wrapped call between does not carry the stale detail over either.
  leave_a_stale_cudnn_detail();
  cudnnTensorDescriptor_t desc = nullptr;
  REQUIRE(DTRAIN_CUDA_STATUS(cudnnCreateTensorDescriptor(&desc)).ok());
  CHECK(DTRAIN_CUDA_STATUS(cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 1, 2, 3, 4)).ok());
  s = DTRAIN_CUDA_STATUS(not_supported());
  CHECK(s.error().message.ends_with("CUDNN_STATUS_NOT_SUPPORTED (3000): no detail from cuDNN"));

  // A real failure after a stale one reports its own detail: the width it was given.
  leave_a_stale_cudnn_detail();
  s = DTRAIN_CUDA_STATUS(cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 1, 2, 3, -7));
  cudnnDestroyTensorDescriptor(desc);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("CUDNN_STATUS_BAD_PARAM (2000): ") != std::string::npos);
  CHECK_FALSE(s.error().message.ends_with("no detail from cuDNN"));
  CHECK_MESSAGE(s.error().message.find(raw) == std::string::npos, s.error().message, " carries the stale ", raw);
  // Nothing is left for the next failure once this one was reported.
  CHECK(DTRAIN_CUDA_STATUS(not_supported()).error().message.ends_with("no detail from cuDNN"));
}

TEST_CASE("cuda check: DTRAIN_CUDA_RETURN_IF_ERROR returns the error from Status and Result functions") {
  const Status s = returns_status();
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("out_of_memory() failed") != std::string::npos);
  const Result<int> r = returns_result();
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("not_initialized() failed") != std::string::npos);
}

TEST_CASE("cuda check: asking for a GPU that is not there fails saying how many there are and why") {
  const int count = gpu_count();
  Result<GpuDevice*> d = gpu_device(count);
  REQUIRE_FALSE(d.ok());
  const std::optional<std::string> why = no_gpu_reason();
  CHECK(d.error().message == "gpu:" + std::to_string(count) + " does not exist: this machine has " +
                                 std::to_string(count) + " usable GPU" + (count == 1 ? "" : "s") +
                                 (why ? " (" + *why + ")" : std::string()));
  if (count == 0) {
    // Without a GPU a kernel launch fails at once, naming the kernel and the runtime's reason.
    int n = 0;
    const cudaError_t code = cudaGetDeviceCount(&n);
    cudaGetLastError();
    const Status s = relu_forward(nullptr, nullptr, 10, nullptr);
    REQUIRE_FALSE(s.ok());
    const std::string& m = s.error().message;
    CHECK(m.starts_with("engine/cuda/eltwise.cu:"));
    CHECK(m.find(": launch of relu_forward_kernel failed (host " + host() + "): ") != std::string::npos);
    if (code != cudaSuccess) {
      CHECK(m.ends_with(std::string(cudaGetErrorName(code)) + " (" + std::to_string(static_cast<int>(code)) +
                        "): " + cudaGetErrorString(code)));
    }
  }
}

}  // namespace
}  // namespace dtrain::cuda
