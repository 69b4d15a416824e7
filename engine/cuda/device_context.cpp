// Per-GPU allocator and streams (device_context.hpp).
#include "engine/cuda/device_context.hpp"

#include <fmt/format.h>

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/cuda/check.hpp"

namespace dtrain::cuda {

namespace {

class CudaSegmentBackend final : public SegmentBackend {
 public:
  explicit CudaSegmentBackend(int device) : device_(device) {}

  Result<void*> allocate(size_t bytes) override {
    Result<DeviceGuard> guard = DeviceGuard::set(device_);
    if (!guard.ok()) return guard.error();
    void* p = nullptr;
    DTRAIN_CUDA_RETURN_IF_ERROR(cudaMalloc(&p, bytes));
    return p;
  }

  void release(void* segment, size_t) override {
    Result<DeviceGuard> guard = DeviceGuard::set(device_);
    // cudaFree waits for the GPU to finish work that may still use the segment.
    cudaFree(segment);
  }

  std::string name() const override { return fmt::format("gpu:{}", device_); }

 private:
  int device_;
};

}  // namespace

GpuDevice::GpuDevice(int i, Stream compute_stream, Stream copy_stream)
    : index(i), compute(std::move(compute_stream)), copy(std::move(copy_stream)), allocator(cuda_segment_backend(i)) {}

std::unique_ptr<SegmentBackend> cuda_segment_backend(int device) {
  return std::make_unique<CudaSegmentBackend>(device);
}

Result<GpuDevice*> gpu_device(int index) {
  static std::mutex mu;
  static std::vector<GpuDevice*>* devices = new std::vector<GpuDevice*>();  // leaked on purpose
  std::lock_guard<std::mutex> lock(mu);
  const int count = gpu_count();
  if (index < 0 || index >= count) {
    const std::optional<std::string> why = no_gpu_reason();
    return runtime_error(fmt::format("gpu:{} does not exist: this machine has {} usable GPU{}{}", index, count,
                                     count == 1 ? "" : "s", why ? " (" + *why + ")" : std::string()));
  }
  if (devices->size() < static_cast<size_t>(count)) devices->resize(static_cast<size_t>(count), nullptr);
  GpuDevice*& slot = (*devices)[static_cast<size_t>(index)];
  if (slot == nullptr) {
    Result<Stream> compute = Stream::create(index);
    if (!compute.ok()) return compute.error();
    Result<Stream> copy = Stream::create(index);
    if (!copy.ok()) return copy.error();
    slot = new GpuDevice(index, std::move(*compute), std::move(*copy));
  }
  return slot;
}

}  // namespace dtrain::cuda
