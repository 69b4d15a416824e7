// 2-D max / average pooling on the CPU through oneDNN, NHWC in place, with
// explicit (possibly asymmetric) padding, in float32 or bfloat16. Average
// pooling excludes padding from the count (TensorFlow's SAME); max pooling
// ignores padded positions and records the argmax in a workspace for the
// backward pass.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/kernels/ktype.hpp"

namespace dtrain::kernels {

enum class PoolKind { kMax, kAvg };

struct Pool2dShape {
  PoolKind kind = PoolKind::kMax;
  int64_t n = 0;
  int64_t ih = 0, iw = 0, c = 0;
  int64_t oh = 0, ow = 0;
  int64_t kh = 0, kw = 0;
  int64_t sh = 1, sw = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  // Element type of x, y, dy and dx alike. bf16 max pooling's y is exact;
  // average pooling's y is rounded once. Where windows overlap, the bf16
  // backward rounds each partial sum of dx (oneDNN 2.6 adds the windows'
  // shares into dx in bf16): error up to ~2^-8 of the largest share; the
  // emulated bf16 path (bf16_path.hpp) adds them in f32 and rounds once.
  KType type = KType::kF32;

  std::vector<int64_t> key() const;
};

// Bytes of workspace pool2d_forward writes (0 for average pooling).
size_t pool2d_workspace_bytes(const Pool2dShape& s);
// x: (n, ih, iw, c); y: (n, oh, ow, c), overwritten; elements of s.type. workspace: at
// least pool2d_workspace_bytes(s) bytes, 16-byte aligned (null allowed when that is 0).
void pool2d_forward(const Pool2dShape& s, const void* x, void* y, void* workspace);
// dy: (n, oh, ow, c); dx: (n, ih, iw, c), overwritten; elements of s.type;
// workspace from the forward call on the same input. Thread-safe, like pool2d_forward.
void pool2d_backward(const Pool2dShape& s, const void* dy, void* dx, const void* workspace);

}  // namespace dtrain::kernels
