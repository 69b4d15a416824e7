// Convolution, pooling and softmax on the GPU through cuDNN: the GPU
// counterparts of engine/kernels/conv.hpp, pool.hpp and the softmax of the
// losses (softmax_rows.hpp), with the same shapes, NHWC activations and HWIO
// weights, and the same explicit (possibly asymmetric, TensorFlow SAME)
// padding. One cuDNN handle per GPU, bound to its compute stream, and one
// plan per distinct convolution and policy (its descriptors and, per
// direction, the algorithm chosen on first use), kept, so a warm call only
// runs kernels. Every call
// queues its work there without waiting for it and takes workspace and
// scratch (reordered weights, padded inputs) from the GPU's caching
// allocator. Calls for one GPU are thread-safe (serialised on its lock).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/cuda/device_context.hpp"
#include "engine/cuda/matmul_lt.hpp"
#include "engine/kernels/conv.hpp"
#include "engine/kernels/pool.hpp"
#include "engine/base/status.hpp"

namespace dtrain::cuda {

// How conv2d runs asymmetric padding (cuDNN takes one pad per dimension):
// symmetric padding goes to cuDNN directly; otherwise the input is copied
// into a zero-padded buffer and cuDNN runs with no padding. Plain arithmetic,
// usable without a GPU.
struct ConvPadPlan {
  bool explicit_pad = false;  // copy x into a (n, padded_h, padded_w, ic) buffer
  int64_t padded_h = 0, padded_w = 0;
  int64_t pad_h = 0, pad_w = 0;  // what cuDNN is told
};
ConvPadPlan conv_pad_plan(const kernels::Conv2dShape& s);

// Pooling padding for cuDNN, which takes one pad per dimension: the top and
// left pads, supported when the windows they place give exactly s.oh x s.ow
// outputs. The windows then start where the CPU's do, and any extra bottom or
// right pad of SAME is never reached (padded positions count in neither max
// nor average, so the results agree). supported = false otherwise.
struct PoolPadPlan {
  bool supported = false;
  int64_t pad_h = 0, pad_w = 0;
};
PoolPadPlan pool_pad_plan(const kernels::Pool2dShape& s);

// How a convolution's algorithm is chosen. mode kFloat32 restricts cuDNN to
// FMA math (no TF32 tensor cores). deterministic (run.deterministic) prefers
// algorithms cuDNN marks CUDNN_DETERMINISTIC (no atomics: the same bits on
// every run); only when cuDNN offers none for a convolution does it take the
// best other one, and the note says so.
struct ConvPolicy {
  MathMode mode = MathMode::kFloat32;
  bool deterministic = false;
};

// One algorithm of cuDNN's heuristic ranking, as pick_conv_algorithm sees it.
struct ConvAlgoCandidate {
  bool usable = false;     // status CUDNN_STATUS_SUCCESS
  bool tensor_op = false;  // a tensor-op (TF32) math type
  bool deterministic = false;
};
// The candidate a convolution runs with: the first (best ranked) usable one
// the policy allows, preferring deterministic ones under p.deterministic.
// index -1 when none is allowed. Plain logic, usable without a GPU.
struct ConvAlgoPick {
  int index = -1;
  bool deterministic = false;
};
ConvAlgoPick pick_conv_algorithm(std::span<const ConvAlgoCandidate> ranked, const ConvPolicy& p);

// The algorithms cuDNN was asked to run so far in this process, one line per
// distinct convolution and direction, in the order first used:
//   "cuDNN conv2d 32x28x28x1 -> 32x28x28x32, kernel 3x3, strides 1x1, dilation 1x1: backward-filter
//    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 (deterministic, FMA math)"
std::vector<std::string> conv_algorithm_notes();

// Shapes and layouts as engine/kernels/conv.hpp:
//   x: (n, ih, iw, ic)   w: (kh, kw, ic, oc)   bias, db: (oc)   y, dy: (n, oh, ow, oc)
// y = conv(x, w) [+ bias], then max(y, 0) when s.relu. bias may be null.
Status conv2d_forward(GpuDevice& dev, const kernels::Conv2dShape& s, const float* x, const float* w,
                      const float* bias, float* y, const ConvPolicy& policy);
// dx (n, ih, iw, ic), overwritten.
Status conv2d_backward_data(GpuDevice& dev, const kernels::Conv2dShape& s, const float* dy, const float* w, float* dx,
                            const ConvPolicy& policy);
// dw (kh, kw, ic, oc) and db (oc, or null) overwritten.
Status conv2d_backward_weights(GpuDevice& dev, const kernels::Conv2dShape& s, const float* x, const float* dy,
                               float* dw, float* db, const ConvPolicy& policy);

// Shapes as engine/kernels/pool.hpp: x, dx: (n, ih, iw, c); y, dy: (n, oh, ow, c).
// Max pooling ignores padded positions; average pooling excludes them from
// the count. Errors (kRuntime) for asymmetric padding that pool_pad_plan
// cannot express.
Status pool2d_forward(GpuDevice& dev, const kernels::Pool2dShape& s, const float* x, float* y);
// Unlike the CPU, cuDNN recomputes the argmax from x and y (no workspace).
// dx is overwritten.
Status pool2d_backward(GpuDevice& dev, const kernels::Pool2dShape& s, const float* x, const float* y,
                       const float* dy, float* dx);

// y (rows, cols) = softmax of each row of x (rows, cols), accurate
// (max-subtracted) as softmax_last_dim. y may be x.
Status softmax_forward(GpuDevice& dev, int64_t rows, int64_t cols, const float* x, float* y);

}  // namespace dtrain::cuda
