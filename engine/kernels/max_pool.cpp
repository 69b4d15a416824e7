// float32 max pooling (engine/kernels/max_pool.hpp).
#include "engine/kernels/max_pool.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "engine/cpu_isa.hpp"
#include "engine/kernels/parallel.hpp"


namespace dtrain::kernels {

namespace {

// Calls fn(offset of the input pixel's first channel, tap index ky * kw + kx)
// for each tap of output position (n, oy, ox) inside the input, in (ky, kx) order.
template <class F>
[[gnu::always_inline]] inline void for_each_tap(const Pool2dShape& s, int64_t n, int64_t oy, int64_t ox, F&& fn) {
  for (int64_t ky = 0; ky < s.kh; ++ky) {
    const int64_t iy = oy * s.sh - s.pad_top + ky;
    if (iy < 0 || iy >= s.ih) continue;
    for (int64_t kx = 0; kx < s.kw; ++kx) {
      const int64_t ix = ox * s.sw - s.pad_left + kx;
      if (ix < 0 || ix >= s.iw) continue;
      fn(((n * s.ih + iy) * s.iw + ix) * s.c, static_cast<int32_t>(ky * s.kw + kx));
    }
  }
}

// Output rows [r0, r1) of the (n * oh) rows: y and taps of each output
// position start at the lowest float and -1, then every tap inside the input
// replaces them where it is greater (NaN never is).
[[gnu::always_inline]] inline void forward_body(const Pool2dShape& s, const float* __restrict x, int64_t r0, int64_t r1,
                                                float* __restrict y, int32_t* __restrict taps) {
  const int64_t c = s.c;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t n = r / s.oh, oy = r % s.oh;
    for (int64_t ox = 0; ox < s.ow; ++ox) {
      float* __restrict best = y + (r * s.ow + ox) * c;
      int32_t* __restrict arg = taps + (r * s.ow + ox) * c;
      for (int64_t j = 0; j < c; ++j) {
        best[j] = std::numeric_limits<float>::lowest();
        arg[j] = -1;
      }
      for_each_tap(s, n, oy, ox, [&](int64_t at, int32_t tap) {
        const float* __restrict in = x + at;
        for (int64_t j = 0; j < c; ++j) {
          const bool greater = in[j] > best[j];
          best[j] = greater ? in[j] : best[j];
          arg[j] = greater ? tap : arg[j];
        }
      });
    }
  }
}

// Images [n0, n1): dx zeroed, then each output position's dy added to the tap
// that gave its max, output positions in order (the same sum order for every
// build and thread count). Adding 0 where a lane's tap differs leaves dx's
// bits as they are: dx starts at +0 and a sum of floats is never -0.
[[gnu::always_inline]] inline void backward_body(const Pool2dShape& s, const float* __restrict dy,
                                                 const int32_t* __restrict taps, int64_t n0, int64_t n1,
                                                 float* __restrict dx) {
  const int64_t c = s.c;
  std::memset(dx + n0 * s.ih * s.iw * c, 0, static_cast<size_t>((n1 - n0) * s.ih * s.iw * c) * sizeof(float));
  for (int64_t n = n0; n < n1; ++n) {
    for (int64_t oy = 0; oy < s.oh; ++oy) {
      for (int64_t ox = 0; ox < s.ow; ++ox) {
        const int64_t o = ((n * s.oh + oy) * s.ow + ox) * c;
        const float* __restrict g = dy + o;
        const int32_t* __restrict arg = taps + o;
        for_each_tap(s, n, oy, ox, [&](int64_t at, int32_t tap) {
          float* __restrict out = dx + at;
          for (int64_t j = 0; j < c; ++j) out[j] += arg[j] == tap ? g[j] : 0.0f;
        });
      }
    }
  }
}

using ForwardFn = void (*)(const Pool2dShape&, const float*, int64_t, int64_t, float*, int32_t*);
using BackwardFn = void (*)(const Pool2dShape&, const float*, const int32_t*, int64_t, int64_t, float*);

DTRAIN_V4 void forward_v4(const Pool2dShape& s, const float* x, int64_t r0, int64_t r1, float* y, int32_t* t) {
  forward_body(s, x, r0, r1, y, t);
}
DTRAIN_V3 void forward_v3(const Pool2dShape& s, const float* x, int64_t r0, int64_t r1, float* y, int32_t* t) {
  forward_body(s, x, r0, r1, y, t);
}
void forward_base(const Pool2dShape& s, const float* x, int64_t r0, int64_t r1, float* y, int32_t* t) {
  forward_body(s, x, r0, r1, y, t);
}
DTRAIN_V4 void backward_v4(const Pool2dShape& s, const float* dy, const int32_t* t, int64_t n0, int64_t n1, float* dx) {
  backward_body(s, dy, t, n0, n1, dx);
}
DTRAIN_V3 void backward_v3(const Pool2dShape& s, const float* dy, const int32_t* t, int64_t n0, int64_t n1, float* dx) {
  backward_body(s, dy, t, n0, n1, dx);
}
void backward_base(const Pool2dShape& s, const float* dy, const int32_t* t, int64_t n0, int64_t n1, float* dx) {
  backward_body(s, dy, t, n0, n1, dx);
}

}  // namespace

size_t max_pool_f32_workspace_bytes(const Pool2dShape& s) {
  return static_cast<size_t>(s.n * s.oh * s.ow * s.c) * sizeof(int32_t);
}

void max_pool_f32_forward(const Pool2dShape& s, const float* x, float* y, int32_t* taps) {
  static const ForwardFn fn = pick_for_cpu_isa<ForwardFn>(&forward_v4, &forward_v3, &forward_base);
  parallel_ranges(s.n * s.oh, s.ow * s.c * std::max<int64_t>(1, s.kh * s.kw),
                  [&](int64_t r0, int64_t r1) { fn(s, x, r0, r1, y, taps); });
}

void max_pool_f32_backward(const Pool2dShape& s, const float* dy, float* dx, const int32_t* taps) {
  static const BackwardFn fn = pick_for_cpu_isa<BackwardFn>(&backward_v4, &backward_v3, &backward_base);
  parallel_ranges(s.n, s.ih * s.iw * s.c + s.oh * s.ow * s.c * std::max<int64_t>(1, s.kh * s.kw),
                  [&](int64_t n0, int64_t n1) { fn(s, dy, taps, n0, n1, dx); });
}

}  // namespace dtrain::kernels
