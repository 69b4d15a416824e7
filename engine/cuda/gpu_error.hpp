// The text of a failed CUDA / cuBLAS / cuDNN / NCCL call as a dtrain Error:
// where (file:line), what (the call as written), on which GPU, host and rank,
// and the library's own name and description of the code. Pure C++ (no CUDA
// headers), so the format is tested in CPU-only builds too; check.hpp turns
// the libraries' status enums into GpuFailure.
#pragma once

#include <string>
#include <string_view>

#include "engine/base/status.hpp"

namespace dtrain::cuda {

struct GpuFailure {
  std::string_view call;         // the expression as written, e.g. "cudaMalloc(&p, bytes)"
  std::string_view code_name;    // e.g. "cudaErrorMemoryAllocation", "CUBLAS_STATUS_NOT_INITIALIZED"
  long long code = 0;            // the numeric status
  std::string_view description;  // the library's description ("out of memory")
  std::string_view file;         // __FILE__; leading "./" and "../" are dropped
  int line = 0;
  int device = -1;               // the current GPU, -1 when unknown
};

// "engine/cuda/runtime.cpp:42: cudaMalloc(&p, bytes) failed on gpu:0 (host h1, rank 3):
//  cudaErrorMemoryAllocation (2): out of memory" -- one line; " on gpu:N" is left
// out when device < 0, ", rank R" when rank < 0.
std::string format_gpu_failure(const GpuFailure& f, std::string_view host, int rank);

// format_gpu_failure with this process's host name and rank, as a kRuntime Error.
Error gpu_failure_error(const GpuFailure& f);

// The prefix the build put before source paths in __FILE__: "../" for a
// build directory inside the source tree, longer from elsewhere (derived
// from this library's own __FILE__).
std::string_view source_root();
// `file` relative to the source tree: `root` removed where it leads the
// path, else leading "./" and "../" dropped.
std::string_view source_relative(std::string_view file, std::string_view root);

// The rank named in GPU error messages (set once the cluster is resolved;
// -1, the default, leaves it out). Thread-safe.
void set_gpu_error_rank(int rank);
int gpu_error_rank();

}  // namespace dtrain::cuda
