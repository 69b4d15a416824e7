// RAII handles over the CUDA runtime (runtime.hpp).
#include "engine/cuda/runtime.hpp"

#include <string>
#include <utility>

#include "engine/cuda/check.hpp"

namespace dtrain::cuda {

std::optional<std::string> no_gpu_reason() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    // Without a driver: cudaErrorInsufficientDriver (35), not cudaErrorNoDevice (100).
    cudaGetLastError();
    return std::string("cudaGetDeviceCount: ") + cudaGetErrorString(err) + " (" +
           std::to_string(static_cast<int>(err)) + ")";
  }
  if (count == 0) return std::string("no CUDA device found");
  return std::nullopt;
}

int gpu_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

Result<DeviceGuard> DeviceGuard::set(int device) {
  int previous = 0;
  DTRAIN_CUDA_RETURN_IF_ERROR(cudaGetDevice(&previous));
  if (previous == device) return DeviceGuard(-1);
  DTRAIN_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  return DeviceGuard(previous);
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) cudaSetDevice(previous_);
}

Result<Stream> Stream::create(int device) {
  Result<DeviceGuard> guard = DeviceGuard::set(device);
  if (!guard.ok()) return guard.error();
  cudaStream_t s = nullptr;
  DTRAIN_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return Stream(device, s);
}

Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    if (s_ != nullptr) cudaStreamDestroy(s_);
    device_ = o.device_;
    s_ = std::exchange(o.s_, nullptr);
  }
  return *this;
}

Stream::~Stream() {
  // Work still queued completes; the stream's resources go once it has.
  if (s_ != nullptr) cudaStreamDestroy(s_);
}

Status Stream::synchronize() const {
  DTRAIN_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s_));
  return {};
}

Result<Event> Event::create(int device) {
  Result<DeviceGuard> guard = DeviceGuard::set(device);
  if (!guard.ok()) return guard.error();
  cudaEvent_t e = nullptr;
  DTRAIN_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return Event(device, e);
}

Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    if (e_ != nullptr) cudaEventDestroy(e_);
    device_ = o.device_;
    e_ = std::exchange(o.e_, nullptr);
  }
  return *this;
}

Event::~Event() {
  if (e_ != nullptr) cudaEventDestroy(e_);
}

Status Event::record(const Stream& stream) {
  DTRAIN_CUDA_RETURN_IF_ERROR(cudaEventRecord(e_, stream.get()));
  return {};
}

Status Event::make_wait(const Stream& stream) const {
  DTRAIN_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream.get(), e_, 0));
  return {};
}

Result<bool> Event::finished() const {
  const cudaError_t err = cudaEventQuery(e_);
  if (err == cudaErrorNotReady) return false;
  DTRAIN_CUDA_RETURN_IF_ERROR(err);
  return true;
}

Status Event::synchronize() const {
  DTRAIN_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(e_));
  return {};
}

Result<PinnedBuffer> PinnedBuffer::allocate(size_t bytes) {
  void* p = nullptr;
  if (bytes > 0) DTRAIN_CUDA_RETURN_IF_ERROR(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
  return PinnedBuffer(p, bytes);
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept {
  if (this != &o) {
    if (p_ != nullptr) cudaFreeHost(p_);
    p_ = std::exchange(o.p_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

PinnedBuffer::~PinnedBuffer() {
  if (p_ != nullptr) cudaFreeHost(p_);
}

Status copy_async(void* dst, const void* src, size_t bytes, const Stream& stream) {
  if (bytes == 0) return {};
  DTRAIN_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream.get()));
  return {};
}

}  // namespace dtrain::cuda
