// Helpers for the GPU tests: skipping without a GPU, and float arrays on
// GPU 0 (allocated from its caching allocator, copied on its compute stream).
#pragma once

#include <doctest.h>

#include <cstdint>
#include <vector>

#include "engine/cuda/device_context.hpp"
#include "engine/cuda/runtime.hpp"
#include "engine/tensor.hpp"

// Ends the current test case, with "no CUDA device: <why>", when this process
// cannot use a GPU (cudaGetDeviceCount failed or found none).
#define DTRAIN_SKIP_WITHOUT_GPU()                                   \
  do {                                                              \
    if (const auto dtrain_why_ = ::dtrain::cuda::no_gpu_reason()) { \
      MESSAGE("no CUDA device: " << *dtrain_why_);                  \
      return;                                                       \
    }                                                               \
  } while (0)

namespace dtrain::cuda::gputest {

// GPU 0's context. REQUIRES: a GPU (DTRAIN_SKIP_WITHOUT_GPU first).
GpuDevice& gpu0();

// n floats on GPU 0.
class DeviceArray {
 public:
  explicit DeviceArray(int64_t n);
  explicit DeviceArray(const std::vector<float>& host);  // uploads and waits
  explicit DeviceArray(const Tensor& host) : DeviceArray(host.to_vector()) {}
  float* data() const { return buf_.floats(); }
  int64_t size() const { return n_; }
  std::vector<float> download() const;  // waits for GPU 0's compute stream first

 private:
  int64_t n_;
  CachedBuffer buf_;
};

// Waits for GPU 0's compute stream; REQUIREs success.
void sync_compute();

// Whether a and b hold the same bits (+0 vs -0 and NaN payloads count).
bool same_bits(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace dtrain::cuda::gputest
