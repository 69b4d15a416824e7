// The library ops layers call: matmul, 2-D convolution and pooling on a
// context's device, in its compute type. The CPU (and debug) backend runs
// them through oneDNN (engine/kernels/). Tensor shapes are those of the
// kernel shape structs: x (n, ih, iw, ic), w (kh, kw, ic, oc), y (n, oh, ow, oc).
// Outputs and gradients are float32. Inputs are float32 or bfloat16 tensors;
// with ctx.compute == bf16 float32 inputs are rounded to bfloat16 (into the
// calling thread's scratch) and the products accumulate in float32. A layer
// that reads an input twice (forward, then backward) rounds it once with
// to_compute() and passes the bfloat16 tensor.
#pragma once

#include "engine/kernels/conv.hpp"
#include "engine/kernels/matmul.hpp"
#include "engine/kernels/pool.hpp"
#include "engine/ops/context.hpp"
#include "engine/tensor.hpp"

namespace dtrain::ops {

// t in ctx's compute type: t itself under float32; under bfloat16 a rounded
// copy in `buf` (re-allocated on t's device when its shape or type differ),
// which is returned.
const Tensor& to_compute(const Context& ctx, const Tensor& t, Tensor& buf);

// The gradient through a ReLU in ctx's compute type, in one pass:
// dx = (y > 0 ? dy : 0) rounded to bfloat16, bit for bit the mask followed by
// to_compute(). dy, y: float32 of one shape; dx: bfloat16 of that shape, on
// their device. REQUIRES: ctx.compute == bf16 (a float32 policy masks in place
// without a cast).
void relu_grad_to_compute(const Context& ctx, const Tensor& dy, const Tensor& y, Tensor& dx);

// c (M, N) = op(a) op(b) [+ bias (N)]; c must not alias a, b or bias.
void matmul(const Context& ctx, const kernels::MatmulShape& s, const Tensor& a, const Tensor& b, const Tensor* bias,
            Tensor& c);
void conv2d_forward(const Context& ctx, const kernels::Conv2dShape& s, const Tensor& x, const Tensor& w,
                    const Tensor* bias, Tensor& y);
void conv2d_backward_data(const Context& ctx, const kernels::Conv2dShape& s, const Tensor& dy, const Tensor& w,
                          Tensor& dx);
void conv2d_backward_weights(const Context& ctx, const kernels::Conv2dShape& s, const Tensor& x, const Tensor& dy,
                             Tensor& dw, Tensor* db);
// workspace: on the CPU, a tensor of at least pool2d_workspace_bytes(ctx, s)
// bytes for max pooling (null when that is 0). The backward reads the
// workspace on the CPU and x and y on a GPU (cuDNN finds the max again).
// On cuda, convolutions and pooling run float32 through cuDNN (the support
// table admits no other policy), the convolutions with TF32 tensor cores
// when ctx.tf32.
size_t pool2d_workspace_bytes(const Context& ctx, const kernels::Pool2dShape& s);
void pool2d_forward(const Context& ctx, const kernels::Pool2dShape& s, const Tensor& x, Tensor& y, Tensor* workspace);
void pool2d_backward(const Context& ctx, const kernels::Pool2dShape& s, const Tensor& x, const Tensor& y,
                     const Tensor& dy, Tensor& dx, const Tensor* workspace);

}  // namespace dtrain::ops
