// Per-GPU state shared by everything that runs on one GPU: the caching
// allocator of its memory (over cudaMalloc/cudaFree), one compute stream, and
// one copy stream on which input batches are copied ahead of use, overlapped
// with compute (the compute stream waits on an event of the copy).
#pragma once

#include <memory>

#include "engine/cuda/caching_allocator.hpp"
#include "engine/cuda/runtime.hpp"
#include "engine/base/status.hpp"

namespace dtrain::cuda {

struct GpuDevice {
  GpuDevice(int index, Stream compute, Stream copy);
  const int index;
  const Stream compute;
  const Stream copy;
  CachingAllocator allocator;
};

// The process's GpuDevice for GPU `index`, created on first use and never
// destroyed (at exit the CUDA runtime may already be gone). Thread-safe.
// Errors: no such GPU, or creating its streams failed.
Result<GpuDevice*> gpu_device(int index);

// The SegmentBackend of GPU `device`: cudaMalloc and cudaFree with that GPU
// current. Its name() is "gpu:<device>".
std::unique_ptr<SegmentBackend> cuda_segment_backend(int device);

// The stream id the caching allocator keys on.
inline StreamId stream_id(const Stream& s) { return reinterpret_cast<StreamId>(s.get()); }

}  // namespace dtrain::cuda
