// RAII handles over the CUDA runtime: the current-device guard, streams,
// events, pinned (page-locked) host buffers, and asynchronous copies. Each
// handle is movable, not copyable, and releases its resource on destruction
// (errors there are ignored: the process may be shutting down the runtime).
// Creation returns Result<...> with the failed call, file:line and GPU.
// Thread safety: distinct handles may be used from distinct threads; one
// handle is not synchronised.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <optional>
#include <string>

#include "engine/base/status.hpp"

namespace dtrain::cuda {

// Why this process cannot use a GPU ("cudaGetDeviceCount: CUDA driver version
// is insufficient for CUDA runtime version (35)", "no CUDA device found"), or
// nullopt when at least one GPU is usable.
std::optional<std::string> no_gpu_reason();
// The number of usable GPUs (0 when none or no driver).
int gpu_count();

// Makes `device` current on this thread and restores the previous one on
// destruction.
class DeviceGuard {
 public:
  static Result<DeviceGuard> set(int device);
  DeviceGuard(DeviceGuard&& o) noexcept : previous_(o.previous_) { o.previous_ = -1; }
  DeviceGuard& operator=(DeviceGuard&&) = delete;
  DeviceGuard(const DeviceGuard&) = delete;
  ~DeviceGuard();

 private:
  explicit DeviceGuard(int previous) : previous_(previous) {}
  int previous_ = -1;  // -1: nothing to restore
};

// A non-blocking stream (no implicit ordering with the legacy default stream)
// on one GPU.
class Stream {
 public:
  static Result<Stream> create(int device);
  Stream() = default;
  Stream(Stream&& o) noexcept : device_(o.device_), s_(o.s_) { o.s_ = nullptr; }
  Stream& operator=(Stream&& o) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();

  cudaStream_t get() const { return s_; }
  int device() const { return device_; }
  // Blocks the calling thread until all work queued so far has finished.
  Status synchronize() const;

 private:
  Stream(int device, cudaStream_t s) : device_(device), s_(s) {}
  int device_ = -1;
  cudaStream_t s_ = nullptr;
};

// An event without timing (the cheap kind), for ordering streams.
class Event {
 public:
  static Result<Event> create(int device);
  Event() = default;
  Event(Event&& o) noexcept : device_(o.device_), e_(o.e_) { o.e_ = nullptr; }
  Event& operator=(Event&& o) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();

  cudaEvent_t get() const { return e_; }
  // Captures the work queued on `stream` so far.
  Status record(const Stream& stream);
  // Makes `stream`'s later work wait for the last record() (on the GPU; the
  // calling thread does not block).
  Status make_wait(const Stream& stream) const;
  // Whether the recorded work has finished (false while it runs).
  Result<bool> finished() const;
  Status synchronize() const;

 private:
  Event(int device, cudaEvent_t e) : device_(device), e_(e) {}
  int device_ = -1;
  cudaEvent_t e_ = nullptr;
};

// Page-locked host memory (cudaHostAlloc, portable: usable with every GPU),
// so host-to-device copies of input batches run asynchronously at full speed.
class PinnedBuffer {
 public:
  static Result<PinnedBuffer> allocate(size_t bytes);
  PinnedBuffer() = default;
  PinnedBuffer(PinnedBuffer&& o) noexcept : p_(o.p_), bytes_(o.bytes_) {
    o.p_ = nullptr;
    o.bytes_ = 0;
  }
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer();

  void* data() const { return p_; }
  float* floats() const { return static_cast<float*>(p_); }
  size_t bytes() const { return bytes_; }

 private:
  PinnedBuffer(void* p, size_t bytes) : p_(p), bytes_(bytes) {}
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// Queues a copy of `bytes` bytes on `stream` (any direction; the runtime
// infers it from the pointers). Asynchronous with respect to the host only
// when the host side is pinned.
Status copy_async(void* dst, const void* src, size_t bytes, const Stream& stream);

}  // namespace dtrain::cuda
