// Host memory and the table of device memories (debug: engine/backend/debug;
// cuda: the CUDA module's caching allocator, engine/backend/cuda).
#include "engine/storage.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include <sys/mman.h>

#include "engine/backend/cuda/gpu_ops.hpp"
#include "engine/backend/debug/debug_memory.hpp"

namespace dtrain {

namespace {

// Allocations from this size on are mapped pages of their own: the kernel
// hands them out zeroed (no memset pass), as transparent huge pages where it
// can (512 times fewer page faults for a batch of images), and munmap returns
// them at once.
constexpr size_t kMappedBytes = size_t{4} << 20;

class HostMemory final : public DeviceMemory {
 public:
  void* allocate(const Device&, size_t bytes) override {
    bytes = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
    if (bytes >= kMappedBytes) {
      void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      madvise(p, bytes, MADV_HUGEPAGE);  // advice only: fine where THP is off
      return p;
    }
    void* p = std::aligned_alloc(64, bytes);
    if (p == nullptr) throw std::bad_alloc();
    std::memset(p, 0, bytes);
    return p;
  }
  void deallocate(const Device&, void* p, size_t bytes) override {
    bytes = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
    if (bytes >= kMappedBytes) {
      munmap(p, bytes);
    } else {
      std::free(p);
    }
  }
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
