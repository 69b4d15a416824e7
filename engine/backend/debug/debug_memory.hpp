// The debug device's memory: every allocation is its own mapping between two
// PROT_NONE guard pages, NaN-filled when allocated, and itself PROT_NONE
// except while a kernel of its device runs (DebugAccess). Host code that
// touches debug memory outside a kernel, or a kernel that runs past its
// buffer, dies with SIGSEGV at the faulting access: a missed transfer shows
// up on the CPU instead of corrupting a GPU run.
#pragma once

#include <initializer_list>
#include <vector>

#include "engine/storage.hpp"

namespace dtrain {

DeviceMemory& debug_memory();

// While alive, every allocation of the named debug devices is readable and
// writable (nested and concurrent scopes are counted per device; the last
// one to end protects the memory again). Non-debug devices are ignored.
// Thread-safe.
class DebugAccess {
 public:
  explicit DebugAccess(std::initializer_list<Device> devices);
  explicit DebugAccess(const std::vector<Device>& devices);
  ~DebugAccess();
  DebugAccess(const DebugAccess&) = delete;
  DebugAccess& operator=(const DebugAccess&) = delete;

 private:
  void open();
  std::vector<int> indices_;  // debug device indices, sorted, unique
};

// Live allocations on debug:index (for tests).
int64_t debug_live_allocations(int index);

}  // namespace dtrain
