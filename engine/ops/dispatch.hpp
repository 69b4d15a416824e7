// How an op reaches its backend. The one table of backends is the switch in
// on_device(): cpu runs the CPU kernel directly, debug runs the same CPU
// kernel with the device's memory opened for the duration of the call
// (engine/backend/debug), cuda runs the call site's GPU kernel (a call into
// the CUDA module through engine/backend/cuda/gpu_ops.hpp). Which (op,
// device, dtype) a backend can run is in support.hpp and is checked when the
// model is built; a call site without a GPU kernel is an op the support table
// refuses on cuda (never a silent fallback to the CPU).
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
// raw()) on a cpu or debug ctx.device, or `gpu_kernel` (which passes raw()
// pointers to the GPU ops of engine/backend/cuda) on a cuda one. REQUIRES:
// every non-null tensor lives in ctx.device's memory; `extra` names further
// devices whose memory the kernel reads (an all-reduce summing another
// replica's buffer).
template <class F, class G>
void on_device(const Context& ctx, const char* op, std::initializer_list<const Tensor*> tensors, F&& cpu_kernel,
               G&& gpu_kernel, std::initializer_list<Device> extra = {}) {
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
      std::forward<G>(gpu_kernel)();
      return;
  }
}

// The GPU kernel of an op that has none yet: the support table refuses the
// op on cuda when the model is built, so reaching this is a dtrain bug.
struct NoGpuKernel {
  const char* op;
  Device device;
  [[noreturn]] void operator()() const { no_backend(op, device); }
};

// An op with only the CPU kernel (no GPU kernel yet).
template <class F>
void on_device(const Context& ctx, const char* op, std::initializer_list<const Tensor*> tensors, F&& cpu_kernel,
               std::initializer_list<Device> extra = {}) {
  on_device(ctx, op, tensors, std::forward<F>(cpu_kernel), NoGpuKernel{op, ctx.device}, extra);
}

}  // namespace dtrain::ops
