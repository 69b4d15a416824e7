// Debug device memory: mmap'd allocations with guard pages, protected
// outside the device's own kernels.
#include "engine/backend/debug/debug_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>

namespace dtrain {

namespace {

size_t page_size() {
  static const size_t p = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return p;
}

// One debug device: its live allocations (data address -> data bytes rounded
// to pages) and how many scopes have it open.
struct DebugDevice {
  std::mutex mu;
  std::map<void*, size_t> live;  // GUARDED_BY(mu)
  int open = 0;                  // GUARDED_BY(mu)
};

DebugDevice& device_state(int index) {
  static std::mutex mu;
  static std::map<int, std::unique_ptr<DebugDevice>> devices;  // never shrinks: references stay valid
  std::lock_guard<std::mutex> lock(mu);
  auto& d = devices[index];
  if (!d) d = std::make_unique<DebugDevice>();
  return *d;
}

void protect(void* p, size_t bytes, bool accessible) {
  if (mprotect(p, bytes, accessible ? PROT_READ | PROT_WRITE : PROT_NONE) != 0) {
    std::perror("dtrain: debug device: mprotect");
    std::abort();
  }
}

class DebugMemory final : public DeviceMemory {
 public:
  void* allocate(const Device& d, size_t bytes) override {
    const size_t page = page_size();
    const size_t data = (std::max<size_t>(bytes, 1) + page - 1) / page * page;
    void* base = mmap(nullptr, data + 2 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) throw std::bad_alloc();
    void* p = static_cast<char*>(base) + page;
    protect(p, data, true);
    // NaN in every float32 and bfloat16 lane: uninitialised reads show.
    auto* w = static_cast<uint32_t*>(p);
    std::fill(w, w + data / 4, 0x7fc07fc0u);
    DebugDevice& dev = device_state(d.index);
    std::lock_guard<std::mutex> lock(dev.mu);
    dev.live.emplace(p, data);
    if (dev.open == 0) protect(p, data, false);
    return p;
  }

  void deallocate(const Device& d, void* p, size_t) override {
    DebugDevice& dev = device_state(d.index);
    std::lock_guard<std::mutex> lock(dev.mu);
    auto it = dev.live.find(p);
    if (it == dev.live.end()) {
      std::fprintf(stderr, "dtrain: debug device: free of unknown pointer %p on debug:%d\n", p, d.index);
      std::abort();
    }
    const size_t page = page_size();
    munmap(static_cast<char*>(p) - page, it->second + 2 * page);
    dev.live.erase(it);
  }

  void copy(const Device& dst_dev, void* dst, const Device& src_dev, const void* src, size_t bytes) override {
    count_copy(dst_dev, src_dev);
    if (bytes == 0) return;
    DebugAccess access{dst_dev, src_dev};
    std::memmove(dst, src, bytes);
  }

  void fill32(const Device& d, void* p, uint32_t word, int64_t n) override {
    DebugAccess access{d};
    auto* w = static_cast<uint32_t*>(p);
    std::fill(w, w + n, word);
  }
};

}  // namespace

DeviceMemory& debug_memory() {
  static DebugMemory m;
  return m;
}

DebugAccess::DebugAccess(std::initializer_list<Device> devices) : DebugAccess(std::vector<Device>(devices)) {}

DebugAccess::DebugAccess(const std::vector<Device>& devices) {
  for (const Device& d : devices) {
    if (d.kind == DeviceKind::debug) indices_.push_back(d.index);
  }
  std::sort(indices_.begin(), indices_.end());
  indices_.erase(std::unique(indices_.begin(), indices_.end()), indices_.end());
  open();
}

void DebugAccess::open() {
  for (int i : indices_) {
    DebugDevice& dev = device_state(i);
    std::lock_guard<std::mutex> lock(dev.mu);
    if (dev.open++ == 0) {
      for (const auto& [p, bytes] : dev.live) protect(p, bytes, true);
    }
  }
}

DebugAccess::~DebugAccess() {
  for (int i : indices_) {
    DebugDevice& dev = device_state(i);
    std::lock_guard<std::mutex> lock(dev.mu);
    if (--dev.open == 0) {
      for (const auto& [p, bytes] : dev.live) protect(p, bytes, false);
    }
  }
}

int64_t debug_live_allocations(int index) {
  DebugDevice& dev = device_state(index);
  std::lock_guard<std::mutex> lock(dev.mu);
  return static_cast<int64_t>(dev.live.size());
}

}  // namespace dtrain
