// oneDNN pooling wrappers against direct loops: max (with its workspace) and
// average excluding padding, VALID and asymmetric SAME; bf16 against f32.
#include <doctest.h>

#include <algorithm>
#include <limits>
#include <random>

#include "engine/kernels/padding.hpp"
#include "engine/kernels/pool.hpp"
#include "tests/engine/kernels/kernel_test_util.hpp"

namespace dtrain::kernels {
namespace {

Pool2dShape geometry(PoolKind kind, int64_t n, int64_t ih, int64_t iw, int64_t c, int64_t k, int64_t s, bool same) {
  const Window1d h = window_1d(ih, k, s, 1, same), w = window_1d(iw, k, s, 1, same);
  Pool2dShape g;
  g.kind = kind;
  g.n = n;
  g.ih = ih;
  g.iw = iw;
  g.c = c;
  g.oh = h.out;
  g.ow = w.out;
  g.kh = g.kw = k;
  g.sh = g.sw = s;
  g.pad_top = h.pad_before;
  g.pad_bottom = h.pad_after;
  g.pad_left = w.pad_before;
  g.pad_right = w.pad_after;
  return g;
}

void check_geometry(const Pool2dShape& g) {
  const auto x = test::random_vector(static_cast<size_t>(g.n * g.ih * g.iw * g.c), 1);
  const auto dy = test::random_vector(static_cast<size_t>(g.n * g.oh * g.ow * g.c), 2);
  std::vector<double> y_ref(dy.size()), dx_ref(x.size(), 0.0);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox)
        for (int64_t c = 0; c < g.c; ++c) {
          double best = -std::numeric_limits<double>::infinity(), sum = 0.0;
          size_t arg = 0;
          std::vector<size_t> taps;
          for (int64_t ky = 0; ky < g.kh; ++ky)
            for (int64_t kx = 0; kx < g.kw; ++kx) {
              const int64_t iy = oy * g.sh - g.pad_top + ky, ix = ox * g.sw - g.pad_left + kx;
              if (iy < 0 || iy >= g.ih || ix < 0 || ix >= g.iw) continue;
              const auto i = static_cast<size_t>(((n * g.ih + iy) * g.iw + ix) * g.c + c);
              taps.push_back(i);
              sum += x[i];
              if (x[i] > best) {
                best = x[i];
                arg = i;
              }
            }
          const auto o = static_cast<size_t>(((n * g.oh + oy) * g.ow + ox) * g.c + c);
          if (g.kind == PoolKind::kMax) {
            y_ref[o] = best;
            dx_ref[arg] += dy[o];
          } else {
            y_ref[o] = sum / static_cast<double>(taps.size());
            for (size_t i : taps) dx_ref[i] += dy[o] / static_cast<double>(taps.size());
          }
        }
  std::vector<float> y(y_ref.size(), 1e9f), dx(x.size(), 1e9f);
  const size_t ws_bytes = pool2d_workspace_bytes(g);
  CHECK((g.kind == PoolKind::kMax) == (ws_bytes > 0));
  std::vector<float> ws((ws_bytes + 3) / 4 + 1);
  pool2d_forward(g, x.data(), y.data(), ws.data());
  CHECK(test::max_rel_error(y, y_ref) < 1e-6);
  pool2d_backward(g, dy.data(), dx.data(), ws.data());
  CHECK(test::max_rel_error(dx, dx_ref) < 1e-6);
}

TEST_CASE("kernels::pool2d matches direct loops") {
  for (PoolKind kind : {PoolKind::kMax, PoolKind::kAvg}) {
    CAPTURE(static_cast<int>(kind));
    check_geometry(geometry(kind, 2, 8, 8, 4, 2, 2, false));
    check_geometry(geometry(kind, 2, 7, 9, 3, 3, 2, true));    // asymmetric SAME
    check_geometry(geometry(kind, 1, 6, 5, 16, 3, 1, true));   // overlapping windows
    check_geometry(geometry(kind, 3, 26, 26, 32, 2, 2, false));  // MNIST CNN shape
  }
}

// Ties go to the window's first tap in (kh, kw) order, as PyTorch's and
// oneDNN's reference do (after a ReLU most windows tie at 0): every dy lands
// on its window's top-left input inside the image, and overlapping windows
// add theirs there. A NaN is never the max; a window of NaNs gives the lowest
// float and routes no gradient.
TEST_CASE("kernels::pool2d max: ties go to the first tap, NaN is never the max") {
  for (const Pool2dShape& g : {geometry(PoolKind::kMax, 2, 8, 8, 12, 2, 2, false),
                               geometry(PoolKind::kMax, 1, 7, 9, 5, 3, 2, true)}) {
    const std::vector<float> x(static_cast<size_t>(g.n * g.ih * g.iw * g.c), 0.0f);
    const auto dy = test::random_vector(static_cast<size_t>(g.n * g.oh * g.ow * g.c), 3);
    std::vector<double> dx_ref(x.size(), 0.0);
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t oy = 0; oy < g.oh; ++oy)
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          const int64_t iy = std::max<int64_t>(0, oy * g.sh - g.pad_top), ix = std::max<int64_t>(0, ox * g.sw - g.pad_left);
          for (int64_t c = 0; c < g.c; ++c) {
            dx_ref[static_cast<size_t>(((n * g.ih + iy) * g.iw + ix) * g.c + c)] +=
                dy[static_cast<size_t>(((n * g.oh + oy) * g.ow + ox) * g.c + c)];
          }
        }
    std::vector<float> y(dy.size(), 1e9f), dx(x.size(), 1e9f);
    std::vector<float> ws((pool2d_workspace_bytes(g) + 3) / 4 + 1);
    pool2d_forward(g, x.data(), y.data(), ws.data());
    CHECK(std::all_of(y.begin(), y.end(), [](float v) { return v == 0.0f; }));
    pool2d_backward(g, dy.data(), dx.data(), ws.data());
    CHECK(test::max_rel_error(dx, dx_ref) < 1e-6);
  }
  Pool2dShape g = geometry(PoolKind::kMax, 1, 2, 2, 3, 2, 2, false);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // channel 0: NaN first, then 1, 3, 2; channel 1: all NaN; channel 2: -inf and NaN, then -1.
  const std::vector<float> x = {nan, nan, -std::numeric_limits<float>::infinity(), 1, nan, nan, 3, nan, nan, 2, nan, -1};
  std::vector<float> y(3), dx(12, 1e9f), ws((pool2d_workspace_bytes(g) + 3) / 4 + 1);
  pool2d_forward(g, x.data(), y.data(), ws.data());
  CHECK(y[0] == 3.0f);
  CHECK(y[1] == std::numeric_limits<float>::lowest());
  CHECK(y[2] == -1.0f);
  const std::vector<float> dy = {10, 20, 30};
  pool2d_backward(g, dy.data(), dx.data(), ws.data());
  CHECK(dx == std::vector<float>{0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 30});
}

// n <= 512 distinct values, all exact in bf16 (k / 4 for -256 <= k < 256),
// shuffled: max pooling then has no ties that the f32 and bf16
// implementations might break differently.
std::vector<float> distinct_bf16_values(size_t n, uint64_t seed) {
  std::vector<float> v;
  for (int k = -256; k < 256; ++k) v.push_back(static_cast<float>(k) / 4.0f);
  std::shuffle(v.begin(), v.end(), std::mt19937_64(seed));
  v.resize(n);
  return v;
}

// Runs forward and backward in f32 and in bf16 on the same bf16 values.
// Tolerances: max pooling's y is exact (it picks one of the inputs); average
// pooling's y and a dx that receives one window's gradient are rounded once,
// so within one bf16 ulp (2^-8 relative) of the f32 result, give or take
// 1e-6 * max |result|. Where windows overlap, oneDNN 2.6 adds each window's
// share into the bf16 dx, rounding every partial sum, which can cancel:
// there the bound is scale-aware, 1e-2 * max |dx| (measured: 2.5e-3 to 3.4e-3).
void check_bf16_against_f32(const Pool2dShape& g, const std::vector<float>& x, bool backward) {
  const auto dy = test::round_to_bf16(test::random_vector(static_cast<size_t>(g.n * g.oh * g.ow * g.c), 52));
  std::vector<float> y_ref(dy.size(), 1e9f), dx_ref(x.size(), 1e9f);
  std::vector<float> ws((pool2d_workspace_bytes(g) + 3) / 4 + 1);
  pool2d_forward(g, x.data(), y_ref.data(), ws.data());
  pool2d_backward(g, dy.data(), dx_ref.data(), ws.data());

  Pool2dShape h = g;
  h.type = KType::kBf16;
  const auto x16 = test::to_bf16(x), dy16 = test::to_bf16(dy);
  std::vector<uint16_t> y16(dy.size(), 0x7fc0), dx16(x.size(), 0x7fc0);
  std::vector<float> ws16((pool2d_workspace_bytes(h) + 3) / 4 + 1);
  pool2d_forward(h, x16.data(), y16.data(), ws16.data());
  if (g.kind == PoolKind::kMax) {
    CHECK(test::from_bf16(y16) == y_ref);
  } else {
    CHECK(test::max_bf16_ulp_error(test::from_bf16(y16), y_ref, 1e-6 * test::max_abs(y_ref)) <= 1.0);
  }
  if (!backward) return;
  pool2d_backward(h, dy16.data(), dx16.data(), ws16.data());
  if (g.kh > g.sh || g.kw > g.sw) {
    CHECK(test::max_rel_error(test::from_bf16(dx16), dx_ref) < 1e-2);
  } else {
    CHECK(test::max_bf16_ulp_error(test::from_bf16(dx16), dx_ref, 1e-6 * test::max_abs(dx_ref)) <= 1.0);
  }
}

TEST_CASE("kernels::pool2d bf16 matches f32") {
  for (PoolKind kind : {PoolKind::kMax, PoolKind::kAvg}) {
    CAPTURE(static_cast<int>(kind));
    for (const Pool2dShape& g : {geometry(kind, 2, 8, 8, 4, 2, 2, false), geometry(kind, 2, 7, 9, 3, 3, 2, true),
                                 geometry(kind, 1, 6, 5, 16, 3, 1, true)}) {
      check_bf16_against_f32(g, distinct_bf16_values(static_cast<size_t>(g.n * g.ih * g.iw * g.c), 51), true);
    }
    // mnist_cnn's pools, forward only: random inputs have ties, which the
    // two implementations may route dy through differently.
    for (const Pool2dShape& g : {geometry(kind, 64, 28, 28, 32, 2, 2, true), geometry(kind, 64, 14, 14, 64, 2, 2, true)}) {
      check_bf16_against_f32(g, test::round_to_bf16(test::random_vector(static_cast<size_t>(g.n * g.ih * g.iw * g.c), 53)),
                             false);
    }
  }
}

}  // namespace
}  // namespace dtrain::kernels
