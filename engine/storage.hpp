// Device memory: one DeviceMemory per kind of device (host, debug, CUDA)
// allocates, fills and copies bytes; Storage is one reference-counted
// allocation on one device. Host code reaches non-host memory only through
// DeviceMemory's copies (Tensor::copy_from, to_host), never by pointer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "engine/base/device.hpp"

namespace dtrain {

class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  // At least `bytes` (>= 1), 64-byte aligned. Contents: zero on the host,
  // NaN-filled on the debug device, unspecified on a GPU. Throws on failure
  // (std::bad_alloc; on a GPU std::runtime_error naming the allocator's usage).
  virtual void* allocate(const Device& d, size_t bytes) = 0;
  virtual void deallocate(const Device& d, void* p, size_t bytes) = 0;
  // Copies bytes between this kind's memory on `dst_dev` / `src_dev` and the
  // host (either side may be the host; the other is of this kind, or both
  // are of this kind).
  virtual void copy(const Device& dst_dev, void* dst, const Device& src_dev, const void* src, size_t bytes) = 0;
  // Sets n 4-byte words at p to `word`.
  virtual void fill32(const Device& d, void* p, uint32_t word, int64_t n) = 0;
};

// The memory of a device kind (host for cpu). cuda: the CUDA module's caching
// allocator; where the module or the GPU is not usable this reports the
// problem and aborts (strategies check gpu::check_device before any tensor
// is made).
DeviceMemory& memory_of(const Device& d);

// One allocation. Owned through shared_ptr by every Tensor viewing it.
class Storage {
 public:
  Storage(const Device& d, size_t bytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  const Device& device() const { return device_; }

 private:
  Device device_;
  size_t bytes_;
  void* ptr_;
};

// Host<->device copies made so far (all devices, all threads): the debug
// device counts them so tests can assert what a training step transfers.
struct CopyCounts {
  int64_t host_to_device = 0;
  int64_t device_to_host = 0;
  int64_t device_to_device = 0;
};
CopyCounts copy_counts();
void count_copy(const Device& dst, const Device& src);

// While one lives, copies made by this thread are not counted: for checks
// that are not part of what a step transfers (assertions in debug builds).
class UncountedCopies {
 public:
  UncountedCopies();
  ~UncountedCopies();
  UncountedCopies(const UncountedCopies&) = delete;
  UncountedCopies& operator=(const UncountedCopies&) = delete;
};

}  // namespace dtrain
