// Host memory and the table of device memories (debug: engine/backend/debug;
// cuda: the CUDA module's caching allocator, engine/backend/cuda).
#include "engine/storage.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "engine/backend/cuda/gpu_ops.hpp"
#include "engine/backend/debug/debug_memory.hpp"

namespace dtrain {

namespace {

class HostMemory final : public DeviceMemory {
 public:
  void* allocate(const Device&, size_t bytes) override {
    bytes = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, bytes);
    if (p == nullptr) throw std::bad_alloc();
    std::memset(p, 0, bytes);
    return p;
  }
  void deallocate(const Device&, void* p, size_t) override { std::free(p); }
  void copy(const Device&, void* dst, const Device&, const void* src, size_t bytes) override {
    if (bytes > 0) std::memmove(dst, src, bytes);
  }
  void fill32(const Device&, void* p, uint32_t word, int64_t n) override {
    auto* w = static_cast<uint32_t*>(p);
    std::fill(w, w + n, word);
  }
};

std::atomic<int64_t> g_h2d{0}, g_d2h{0}, g_d2d{0};

}  // namespace

DeviceMemory& memory_of(const Device& d) {
  static HostMemory host;
  switch (d.kind) {
    case DeviceKind::cpu: return host;
    case DeviceKind::debug: return debug_memory();
    case DeviceKind::cuda: return gpu::cuda_memory();
  }
  return host;
}

Storage::Storage(const Device& d, size_t bytes)
    : device_(d), bytes_(bytes), ptr_(memory_of(d).allocate(d, bytes)) {}

Storage::~Storage() { memory_of(device_).deallocate(device_, ptr_, bytes_); }

namespace {
thread_local int t_uncounted = 0;
}  // namespace

UncountedCopies::UncountedCopies() { ++t_uncounted; }
UncountedCopies::~UncountedCopies() { --t_uncounted; }

CopyCounts copy_counts() { return {g_h2d.load(), g_d2h.load(), g_d2d.load()}; }

void count_copy(const Device& dst, const Device& src) {
  if ((dst.is_host() && src.is_host()) || t_uncounted > 0) return;
  if (src.is_host()) {
    ++g_h2d;
  } else if (dst.is_host()) {
    ++g_d2h;
  } else {
    ++g_d2d;
  }
}

}  // namespace dtrain
