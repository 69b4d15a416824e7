// Library ops: device checks, then oneDNN through engine/kernels/.
#include "engine/ops/library.hpp"

#include <cstdint>
#include <vector>

#include "engine/kernels/cast.hpp"
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

}  // namespace

void matmul(const Context& ctx, const kernels::MatmulShape& s, const Tensor& a, const Tensor& b, const Tensor* bias,
            Tensor& c) {
  on_device(ctx, "matmul", {&a, &b, bias, &c}, [&] {
    const float* bias_p = bias ? f32(*bias) : nullptr;
    if (!bf16(ctx)) {
      kernels::matmul(s, f32(a), f32(b), bias_p, f32(c));
      return;
    }
    kernels::MatmulShape t = s;
    t.a_type = t.b_type = kernels::KType::kBf16;
    kernels::matmul(t, as_bf16(a, 0), as_bf16(b, 1), bias_p, f32(c));
  });
}

void conv2d_forward(const Context& ctx, const kernels::Conv2dShape& s, const Tensor& x, const Tensor& w,
                    const Tensor* bias, Tensor& y) {
  on_device(ctx, "conv2d", {&x, &w, bias, &y}, [&] {
    const float* bias_p = bias ? f32(*bias) : nullptr;
    if (!bf16(ctx)) {
      kernels::conv2d_forward(s, f32(x), f32(w), bias_p, f32(y));
      return;
    }
    kernels::Conv2dShape t = s;
    t.x_type = t.w_type = kernels::KType::kBf16;
    kernels::conv2d_forward(t, as_bf16(x, 0), as_bf16(w, 1), bias_p, f32(y));
  });
}

void conv2d_backward_data(const Context& ctx, const kernels::Conv2dShape& s, const Tensor& dy, const Tensor& w,
                          Tensor& dx) {
  on_device(ctx, "conv2d_backward_data", {&dy, &w, &dx}, [&] {
    if (!bf16(ctx)) {
      kernels::conv2d_backward_data(s, f32(dy), f32(w), f32(dx));
      return;
    }
    kernels::Conv2dShape t = s;
    t.dy_type = t.w_type = kernels::KType::kBf16;
    kernels::conv2d_backward_data(t, as_bf16(dy, 0), as_bf16(w, 1), f32(dx));
  });
}

void conv2d_backward_weights(const Context& ctx, const kernels::Conv2dShape& s, const Tensor& x, const Tensor& dy,
                             Tensor& dw, Tensor* db) {
  on_device(ctx, "conv2d_backward_weights", {&x, &dy, &dw, db}, [&] {
    float* db_p = db ? f32(*db) : nullptr;
    if (!bf16(ctx)) {
      kernels::conv2d_backward_weights(s, f32(x), f32(dy), f32(dw), db_p);
      return;
    }
    kernels::Conv2dShape t = s;
    t.x_type = t.dy_type = kernels::KType::kBf16;
    kernels::conv2d_backward_weights(t, as_bf16(x, 0), as_bf16(dy, 1), f32(dw), db_p);
  });
}

// Pooling stays float32 under every policy (it only selects or averages).
void pool2d_forward(const Context& ctx, const kernels::Pool2dShape& s, const Tensor& x, Tensor& y, Tensor* workspace) {
  on_device(ctx, "pool2d", {&x, &y, workspace},
            [&] { kernels::pool2d_forward(s, f32(x), f32(y), workspace ? workspace->raw() : nullptr); });
}

void pool2d_backward(const Context& ctx, const kernels::Pool2dShape& s, const Tensor& dy, Tensor& dx,
                     const Tensor* workspace) {
  on_device(ctx, "pool2d_backward", {&dy, &dx, workspace},
            [&] { kernels::pool2d_backward(s, f32(dy), f32(dx), workspace ? workspace->raw() : nullptr); });
}

}  // namespace dtrain::ops
