// Library ops: device checks, then oneDNN through engine/kernels/ on the
// CPU, or the CUDA module (cuBLASLt, cuDNN) on a GPU (float32 only so far).
#include "engine/ops/library.hpp"

#include <cassert>
#include <cstdint>
#include <vector>

#include "engine/backend/cuda/gpu_ops.hpp"
#include "engine/kernels/cast.hpp"
#include "engine/kernels/parallel.hpp"
#include "engine/ops/dispatch.hpp"

namespace dtrain::ops {

namespace {

const float* f32(const Tensor& t) { return static_cast<const float*>(t.raw()); }
float* f32(Tensor& t) { return static_cast<float*>(t.raw()); }

// A bfloat16 copy of a float32 operand in the calling thread's scratch slot
// (valid until the thread's next call with the same slot). The copy is the
// kernel's own working memory: on the debug device it is made inside the
// kernel's access window, like the read it replaces.
const uint16_t* as_bf16(const Tensor& t, int slot) {
  thread_local std::vector<uint16_t> scratch[3];
  std::vector<uint16_t>& buf = scratch[slot];
  if (buf.size() < static_cast<size_t>(t.numel())) buf.resize(static_cast<size_t>(t.numel()));
  kernels::cast_f32_to_bf16(f32(t), buf.data(), t.numel());
  return buf.data();
}

bool bf16(const Context& ctx) { return ctx.compute == DType::bf16; }

// An operand as the kernel takes it: a bfloat16 tensor as it is; a float32
// one as it is under a float32 policy, else rounded into scratch `slot`.
struct Operand {
  const void* p;
  kernels::KType type;
};
Operand operand(const Context& ctx, const Tensor& t, int slot) {
  if (t.dtype() == DType::bf16) return {t.raw(), kernels::KType::kBf16};
  if (bf16(ctx)) return {as_bf16(t, slot), kernels::KType::kBf16};
  return {t.raw(), kernels::KType::kF32};
}

}  // namespace

const Tensor& to_compute(const Context& ctx, const Tensor& t, Tensor& buf) {
  if (!bf16(ctx) || t.dtype() == DType::bf16) return t;
  if (buf.shape() != t.shape() || buf.dtype() != DType::bf16 || buf.device() != t.device()) {
    buf = Tensor::empty(t.shape(), DType::bf16, t.device());
  }
  on_device(ctx, "cast", {&t, &buf}, [&] {
    kernels::cast_f32_to_bf16(f32(t), static_cast<uint16_t*>(buf.raw()), t.numel());
  });
  return buf;
}

void relu_grad_to_compute(const Context& ctx, const Tensor& dy, const Tensor& y, Tensor& dx) {
  assert(bf16(ctx) && dy.dtype() == DType::f32 && y.dtype() == DType::f32 && dx.dtype() == DType::bf16);
  assert(dy.shape() == y.shape() && dx.shape() == y.shape());
  on_device(ctx, "relu gradient cast", {&dy, &y, &dx}, [&] {
    const float* g = f32(dy);
    const float* out = f32(y);
    auto* d = static_cast<uint16_t*>(dx.raw());
    // Each thread casts its own range (the kernel runs on its calling thread).
    kernels::parallel_ranges(dy.numel(), 1, [&](int64_t begin, int64_t end) {
      kernels::relu_grad_f32_to_bf16(g + begin, out + begin, d + begin, end - begin);
    });
  });
}

void matmul(const Context& ctx, const kernels::MatmulShape& s, const Tensor& a, const Tensor& b, const Tensor* bias,
            Tensor& c) {
  on_device(ctx, "matmul", {&a, &b, bias, &c}, [&] {
    const Operand oa = operand(ctx, a, 0), ob = operand(ctx, b, 1);
    kernels::MatmulShape t = s;
    t.a_type = oa.type;
    t.b_type = ob.type;
    t.row_invariant = ctx.batch_invariant;
    kernels::matmul(t, oa.p, ob.p, bias ? f32(*bias) : nullptr, f32(c));
  }, [&] {
    // The support table admits cuda matmuls only under a float32 policy.
    assert(a.dtype() == DType::f32 && b.dtype() == DType::f32 && s.batch == 1);
    gpu::matmul(ctx.device, s, f32(a), f32(b), bias ? f32(*bias) : nullptr, f32(c), false, ctx.tf32);
  });
}

namespace {
// How a GPU convolution of this context may compute.
GpuMath gpu_math(const Context& ctx) { return GpuMath{ctx.tf32, ctx.deterministic}; }
}  // namespace

void conv2d_forward(const Context& ctx, const kernels::Conv2dShape& s, const Tensor& x, const Tensor& w,
                    const Tensor* bias, Tensor& y) {
  on_device(ctx, "conv2d", {&x, &w, bias, &y}, [&] {
    const Operand ox = operand(ctx, x, 0), ow = operand(ctx, w, 1);
    kernels::Conv2dShape t = s;
    t.x_type = ox.type;
    t.w_type = ow.type;
    kernels::conv2d_forward(t, ox.p, ow.p, bias ? f32(*bias) : nullptr, f32(y));
  }, [&] {
    assert(x.dtype() == DType::f32 && w.dtype() == DType::f32);
    gpu::conv2d_forward(ctx.device, s, f32(x), f32(w), bias ? f32(*bias) : nullptr, f32(y), gpu_math(ctx));
  });
}

void conv2d_backward_data(const Context& ctx, const kernels::Conv2dShape& s, const Tensor& dy, const Tensor& w,
                          Tensor& dx) {
  on_device(ctx, "conv2d_backward_data", {&dy, &w, &dx}, [&] {
    const Operand ody = operand(ctx, dy, 0), ow = operand(ctx, w, 1);
    kernels::Conv2dShape t = s;
    t.dy_type = ody.type;
    t.w_type = ow.type;
    kernels::conv2d_backward_data(t, ody.p, ow.p, f32(dx));
  }, [&] {
    assert(dy.dtype() == DType::f32 && w.dtype() == DType::f32);
    gpu::conv2d_backward_data(ctx.device, s, f32(dy), f32(w), f32(dx), gpu_math(ctx));
  });
}

void conv2d_backward_weights(const Context& ctx, const kernels::Conv2dShape& s, const Tensor& x, const Tensor& dy,
                             Tensor& dw, Tensor* db) {
  on_device(ctx, "conv2d_backward_weights", {&x, &dy, &dw, db}, [&] {
    const Operand ox = operand(ctx, x, 0), ody = operand(ctx, dy, 1);
    kernels::Conv2dShape t = s;
    t.x_type = ox.type;
    t.dy_type = ody.type;
    kernels::conv2d_backward_weights(t, ox.p, ody.p, f32(dw), db ? f32(*db) : nullptr);
  }, [&] {
    assert(x.dtype() == DType::f32 && dy.dtype() == DType::f32);
    gpu::conv2d_backward_weights(ctx.device, s, f32(x), f32(dy), f32(dw), db ? f32(*db) : nullptr, gpu_math(ctx));
  });
}

// Pooling stays float32 under every policy (it only selects or averages).
size_t pool2d_workspace_bytes(const Context& ctx, const kernels::Pool2dShape& s) {
  return ctx.device.kind == DeviceKind::cuda ? 0 : kernels::pool2d_workspace_bytes(s);
}

void pool2d_forward(const Context& ctx, const kernels::Pool2dShape& s, const Tensor& x, Tensor& y, Tensor* workspace) {
  on_device(ctx, "pool2d", {&x, &y, workspace},
            [&] { kernels::pool2d_forward(s, f32(x), f32(y), workspace ? workspace->raw() : nullptr); },
            [&] { gpu::pool2d_forward(ctx.device, s, f32(x), f32(y)); });
}

void pool2d_backward(const Context& ctx, const kernels::Pool2dShape& s, const Tensor& x, const Tensor& y,
                     const Tensor& dy, Tensor& dx, const Tensor* workspace) {
  on_device(ctx, "pool2d_backward", {&x, &y, &dy, &dx, workspace},
            [&] { kernels::pool2d_backward(s, f32(dy), f32(dx), workspace ? workspace->raw() : nullptr); },
            [&] { gpu::pool2d_backward(ctx.device, s, f32(x), f32(y), f32(dy), f32(dx)); });
}

}  // namespace dtrain::ops
