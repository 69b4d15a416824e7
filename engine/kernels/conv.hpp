// 2-D convolution on the CPU through oneDNN: NHWC activations, HWIO weights
// (TensorFlow layout), explicit (possibly asymmetric) padding, dilation;
// float32 or bfloat16 operands with float32 accumulation. Buffers are used
// in place; weights may be reordered internally into a faster blocked layout
// (a per-thread temporary, not kept between calls).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/kernels/ktype.hpp"

namespace dtrain::kernels {

struct Conv2dShape {
  int64_t n = 0;                 // batch
  int64_t ih = 0, iw = 0, ic = 0;  // input height, width, channels
  int64_t oh = 0, ow = 0, oc = 0;  // output height, width, channels
  int64_t kh = 0, kw = 0;        // kernel window
  int64_t sh = 1, sw = 1;        // strides
  int64_t dh = 1, dw = 1;        // dilation (1 = none; TensorFlow's convention)
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  bool relu = false;             // forward only: y = max(conv + bias, 0) in the same pass
  // Element types of the activations, weights and their gradients; each pass
  // reads the ones it touches. Biases, dw and db are always f32. Supported:
  //   forward:          x, w f32 -> y f32;   x, w bf16 -> y f32 or bf16
  //   backward_data:    dy, w f32 -> dx f32; dy, w bf16 -> dx f32 or bf16
  //   backward_weights: x, dy f32 or x, dy bf16 -> dw, db f32
  // Accumulation is f32; a bf16 result is rounded once at the end.
  KType x_type = KType::kF32, w_type = KType::kF32, y_type = KType::kF32;
  KType dy_type = KType::kF32, dx_type = KType::kF32;

  // Geometry and relu (not the types; each pass keys on the types it reads).
  std::vector<int64_t> key() const;
};

// Operands hold elements of the shape's types (float, or uint16_t bf16 bits);
// unsupported type combinations throw ErrorException. All three functions are
// thread-safe.
// x: (n, ih, iw, ic); w: (kh, kw, ic, oc); bias: (oc) f32 or null; y: (n, oh, ow, oc).
// REQUIRES: oh, ow consistent with the padding; y does not alias the inputs.
void conv2d_forward(const Conv2dShape& s, const void* x, const void* w, const float* bias, void* y);
// dy: (n, oh, ow, oc); w: (kh, kw, ic, oc); dx: (n, ih, iw, ic), overwritten.
void conv2d_backward_data(const Conv2dShape& s, const void* dy, const void* w, void* dx);
// x: (n, ih, iw, ic); dy: (n, oh, ow, oc); dw: (kh, kw, ic, oc) f32 and
// db: (oc) f32 (or null) are overwritten.
void conv2d_backward_weights(const Conv2dShape& s, const void* x, const void* dy, float* dw, float* db);

}  // namespace dtrain::kernels
