// How an op reaches its backend. The one table of backends is the switch in
// on_device(): cpu runs the CPU kernel directly, debug runs the same CPU
// kernel with the device's memory opened for the duration of the call
// (engine/backend/debug), cuda is the GPU backend's (not in this build: the
// strategy refuses GPU devices before any op runs). Which (op, device, dtype)
// a backend can run is in support.hpp and is checked when the model is built.
#pragma once

#include <initializer_list>
#include <utility>

#include "engine/backend/debug/debug_memory.hpp"
#include "engine/ops/context.hpp"
#include "engine/tensor.hpp"

namespace dtrain::ops {

// Reports an op given a tensor on another device than its context's, then
// aborts (a strategy bug: transfers are explicit).
[[noreturn]] void wrong_device(const char* op, const Tensor& t, const Device& expected);
[[noreturn]] void no_backend(const char* op, const Device& d);

// Runs `cpu_kernel` (which reads and writes the tensors' memory through
// raw()) on ctx.device. REQUIRES: every non-null tensor lives in ctx.device's
// memory; `extra` names further devices whose memory the kernel reads (an
// all-reduce summing another replica's buffer).
template <class F>
void on_device(const Context& ctx, const char* op, std::initializer_list<const Tensor*> tensors, F&& cpu_kernel,
               std::initializer_list<Device> extra = {}) {
  for (const Tensor* t : tensors) {
    if (t != nullptr && !t->empty() && !t->device().same_memory(ctx.device)) wrong_device(op, *t, ctx.device);
  }
  switch (ctx.device.kind) {
    case DeviceKind::cpu:
      std::forward<F>(cpu_kernel)();
      return;
    case DeviceKind::debug: {
      std::vector<Device> open{ctx.device};
      open.insert(open.end(), extra.begin(), extra.end());
      DebugAccess access(open);
      std::forward<F>(cpu_kernel)();
      return;
    }
    case DeviceKind::cuda:
      no_backend(op, ctx.device);
  }
}

}  // namespace dtrain::ops
