// Elementwise and reduction ops: CPU kernels (plain loops) and GPU kernels
// (engine/backend/cuda), run on the context's device through on_device().
// On the CPU the elementwise ops and sum_rows split their elements (sum_rows:
// its columns) over the OpenMP team; the results do not depend on the number
// of threads.
#include "engine/ops/core.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "engine/backend/cuda/gpu_ops.hpp"
#include "engine/kernels/parallel.hpp"
#include "engine/ops/dispatch.hpp"

namespace dtrain::ops {

namespace {
const float* in(const Tensor& t) { return static_cast<const float*>(t.raw()); }
float* out(Tensor& t) { return static_cast<float*>(t.raw()); }
// A scalar computed on a non-host device comes back to the host.
void count_scalar_read(const Context& ctx) {
  if (!ctx.device.is_host()) count_copy(kHost, ctx.device);
}
}  // namespace

void add_into(const Context& ctx, Tensor& acc, const Tensor& x) {
  assert(acc.numel() == x.numel());
  if (!x.device().same_memory(ctx.device) && x.device().kind != ctx.device.kind) wrong_device("add_into", x, ctx.device);
  on_device(
      ctx, "add_into", {&acc},
      [&] {
        float* a = out(acc);
        const float* g = in(x);
        kernels::parallel_ranges(acc.numel(), 1, [&](int64_t first, int64_t last) {
          for (int64_t i = first; i < last; ++i) a[i] += g[i];
        });
      },
      [&] { gpu::add_into(ctx.device, out(acc), in(x), acc.numel()); }, {x.device()});
}

void scale(const Context& ctx, Tensor& x, float s) {
  on_device(ctx, "scale", {&x}, [&] {
    float* p = out(x);
    kernels::parallel_ranges(x.numel(), 1, [&](int64_t first, int64_t last) {
      for (int64_t i = first; i < last; ++i) p[i] *= s;
    });
  }, [&] { gpu::scale(ctx.device, out(x), s, x.numel()); });
}

void mul(const Context& ctx, const Tensor& a, const Tensor& b, Tensor& o) {
  assert(a.numel() == b.numel() && a.numel() == o.numel());
  on_device(ctx, "mul", {&a, &b, &o}, [&] {
    const float* x = in(a);
    const float* y = in(b);
    float* z = out(o);
    kernels::parallel_ranges(o.numel(), 1, [&](int64_t first, int64_t last) {
      for (int64_t i = first; i < last; ++i) z[i] = x[i] * y[i];
    });
  }, [&] { gpu::mul(ctx.device, in(a), in(b), out(o), o.numel()); });
}

void sum_rows(const Context& ctx, const Tensor& x, Tensor& o) {
  const int64_t n = o.numel();
  const int64_t rows = n == 0 ? 0 : x.numel() / n;
  on_device(ctx, "sum_rows", {&x, &o}, [&] {
    float* s = out(o);
    const float* p = in(x);
    // Each column is summed in row order by one thread; a thread's columns
    // are whole 64-byte lines (16 floats) where n allows.
    const int64_t blocks = (n + 15) / 16;
    kernels::parallel_ranges(blocks, rows * 16, [&](int64_t first, int64_t last) {
      const int64_t lo = first * 16, hi = std::min(n, last * 16);
      std::fill(s + lo, s + hi, 0.0f);
      for (int64_t r = 0; r < rows; ++r) {
        const float* row = p + r * n;
        for (int64_t j = lo; j < hi; ++j) s[j] += row[j];
      }
    });
  }, [&] { gpu::sum_rows(ctx.device, in(x), out(o), rows, n); });
}

double sum_squares(const Context& ctx, const Tensor& t) {
  double total = 0.0;
  on_device(ctx, "sum_squares", {&t}, [&] {
    // Four independent partial sums in a fixed order.
    const float* x = in(t);
    const int64_t n = t.numel();
    double s[4] = {0.0, 0.0, 0.0, 0.0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
      for (int k = 0; k < 4; ++k) s[k] += static_cast<double>(x[i + k]) * static_cast<double>(x[i + k]);
    }
    for (; i < n; ++i) s[0] += static_cast<double>(x[i]) * static_cast<double>(x[i]);
    total = (s[0] + s[1]) + (s[2] + s[3]);
  }, [&] { total = gpu::sum_squares(ctx.device, in(t), t.numel()); });
  count_scalar_read(ctx);
  return total;
}

bool all_finite(const Context& ctx, const Tensor& t) {
  bool finite = true;
  on_device(ctx, "all_finite", {&t}, [&] {
    const float* x = in(t);
    float acc = 0.0f;  // x * 0 is NaN exactly for inf and NaN
    for (int64_t i = 0; i < t.numel(); ++i) acc += x[i] * 0.0f;
    finite = acc == 0.0f;
  }, [&] { finite = gpu::count_nonfinite(ctx.device, in(t), t.numel()) == 0; });
  count_scalar_read(ctx);
  return finite;
}

}  // namespace dtrain::ops
