// Elementwise and reduction ops: CPU kernels (plain loops), run on the
// context's device through on_device().
#include "engine/ops/core.hpp"

#include <cassert>
#include <cmath>

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
        const int64_t n = acc.numel();
        for (int64_t i = 0; i < n; ++i) a[i] += g[i];
      },
      {x.device()});
}

void scale(const Context& ctx, Tensor& x, float s) {
  on_device(ctx, "scale", {&x}, [&] {
    float* p = out(x);
    for (int64_t i = 0; i < x.numel(); ++i) p[i] *= s;
  });
}

void mul(const Context& ctx, const Tensor& a, const Tensor& b, Tensor& o) {
  assert(a.numel() == b.numel() && a.numel() == o.numel());
  on_device(ctx, "mul", {&a, &b, &o}, [&] {
    const float* x = in(a);
    const float* y = in(b);
    float* z = out(o);
    for (int64_t i = 0; i < o.numel(); ++i) z[i] = x[i] * y[i];
  });
}

void sum_rows(const Context& ctx, const Tensor& x, Tensor& o) {
  const int64_t n = o.numel();
  const int64_t rows = n == 0 ? 0 : x.numel() / n;
  on_device(ctx, "sum_rows", {&x, &o}, [&] {
    float* s = out(o);
    const float* p = in(x);
    std::fill(s, s + n, 0.0f);
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = p + r * n;
      for (int64_t j = 0; j < n; ++j) s[j] += row[j];
    }
  });
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
  });
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
  });
  count_scalar_read(ctx);
  return finite;
}

}  // namespace dtrain::ops
