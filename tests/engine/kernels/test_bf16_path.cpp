// The bf16 emulation (engine/kernels/bf16_path.hpp), forced on in-process:
// matmul, the three convolution passes and pooling on bf16 operands equal a
// double-precision loop over the same bf16 values (f32 results within 1e-5 of
// the largest, bf16 results within one bf16 ulp), and, where this CPU has
// native bf16, the native kernels within the same bounds.
#include <doctest.h>

#include <functional>
#include <optional>
#include <vector>

#include "engine/kernels/bf16_path.hpp"
#include "engine/kernels/conv.hpp"
#include "engine/kernels/matmul.hpp"
#include "engine/kernels/pool.hpp"
#include "tests/engine/kernels/kernel_test_util.hpp"

namespace dtrain::kernels {
namespace {

// Runs fn with the emulation forced (true) or not (false), then restores the probe's choice.
template <class F>
auto with_emulation(bool emulate, F&& fn) {
  set_bf16_emulation_for_testing(emulate);
  auto out = fn();
  set_bf16_emulation_for_testing(std::nullopt);
  return out;
}

// Checks run(emulated) against the reference, and run(native) too where oneDNN has bf16.
template <class Run>
void check_paths(const Run& run, const std::vector<double>& want, bool bf16_out) {
  const bool native = !bf16_emulated();
  for (bool emulate : {true, false}) {
    if (!emulate && !native) continue;
    CAPTURE(emulate);
    const std::vector<float> got = with_emulation(emulate, run);
    REQUIRE(got.size() == want.size());
    if (bf16_out) {
      CHECK(test::max_bf16_ulp_error(got, std::vector<float>(want.begin(), want.end()), 1e-5) <= 1.0);
    } else {
      CHECK(test::max_rel_error(got, want) < 1e-5);
    }
  }
}

struct ConvCase {
  Conv2dShape s;
  std::vector<float> x, w, dy;  // bf16-rounded
  std::vector<float> b;
};

ConvCase conv_case() {
  ConvCase c;
  Conv2dShape& s = c.s;
  s.n = 3, s.ih = 9, s.iw = 8, s.ic = 5, s.oc = 6, s.kh = 3, s.kw = 3, s.sh = 2, s.sw = 1;
  s.pad_top = 1, s.pad_bottom = 1, s.pad_left = 1, s.pad_right = 1;
  s.oh = (s.ih + 2 - 3) / 2 + 1, s.ow = s.iw;
  c.x = test::round_to_bf16(test::random_vector(static_cast<size_t>(s.n * s.ih * s.iw * s.ic), 11));
  c.w = test::round_to_bf16(test::random_vector(static_cast<size_t>(s.kh * s.kw * s.ic * s.oc), 12));
  c.dy = test::round_to_bf16(test::random_vector(static_cast<size_t>(s.n * s.oh * s.ow * s.oc), 13));
  c.b = test::random_vector(static_cast<size_t>(s.oc), 14);
  return c;
}

// Calls f(n, oh, ow, ih, iw, kh, kw, ci, co) for every tap of the convolution that lands inside the input.
void each_tap(const Conv2dShape& s, const std::function<void(int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                                                              int64_t, int64_t, int64_t)>& f) {
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t oh = 0; oh < s.oh; ++oh)
      for (int64_t ow = 0; ow < s.ow; ++ow)
        for (int64_t kh = 0; kh < s.kh; ++kh)
          for (int64_t kw = 0; kw < s.kw; ++kw) {
            const int64_t ih = oh * s.sh + kh - s.pad_top, iw = ow * s.sw + kw - s.pad_left;
            if (ih < 0 || iw < 0 || ih >= s.ih || iw >= s.iw) continue;
            for (int64_t ci = 0; ci < s.ic; ++ci)
              for (int64_t co = 0; co < s.oc; ++co) f(n, oh, ow, ih, iw, kh, kw, ci, co);
          }
}

TEST_CASE("bf16 path: emulated matmul equals a double loop on the bf16 values, as the native one does") {
  for (KType out : {KType::kF32, KType::kBf16}) {
    CAPTURE(ktype_name(out));
    MatmulShape s{13, 11, 37, false, true};
    s.a_type = s.b_type = KType::kBf16;
    s.c_type = out;
    const auto a = test::round_to_bf16(test::random_vector(static_cast<size_t>(s.m * s.k), 1));
    const auto b = test::round_to_bf16(test::random_vector(static_cast<size_t>(s.k * s.n), 2));  // (N, K)
    const auto bias = test::random_vector(static_cast<size_t>(s.n), 3);
    std::vector<double> want(static_cast<size_t>(s.m * s.n));
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        double acc = bias[static_cast<size_t>(j)];
        for (int64_t k = 0; k < s.k; ++k) acc += double(a[static_cast<size_t>(i * s.k + k)]) * b[static_cast<size_t>(j * s.k + k)];
        want[static_cast<size_t>(i * s.n + j)] = acc;
      }
    const auto a16 = test::to_bf16(a), b16 = test::to_bf16(b);
    check_paths([&] {
      std::vector<float> c(want.size());
      std::vector<uint16_t> c16(want.size());
      matmul(s, a16.data(), b16.data(), bias.data(), out == KType::kF32 ? static_cast<void*>(c.data()) : c16.data());
      return out == KType::kF32 ? c : test::from_bf16(c16);
    }, want, out == KType::kBf16);
  }
}

TEST_CASE("bf16 path: emulated conv2d forward, backward data and backward weights equal a double loop") {
  const ConvCase c = conv_case();
  Conv2dShape s = c.s;
  s.x_type = s.w_type = s.dy_type = KType::kBf16;
  const auto x16 = test::to_bf16(c.x), w16 = test::to_bf16(c.w), dy16 = test::to_bf16(c.dy);
  auto w_at = [&](int64_t kh, int64_t kw, int64_t ci, int64_t co) {  // HWIO
    return double(c.w[static_cast<size_t>(((kh * s.kw + kw) * s.ic + ci) * s.oc + co)]);
  };
  SUBCASE("forward, y bf16") {
    std::vector<double> y(static_cast<size_t>(s.n * s.oh * s.ow * s.oc));
    for (size_t i = 0; i < y.size(); ++i) y[i] = c.b[i % static_cast<size_t>(s.oc)];
    each_tap(s, [&](int64_t n, int64_t oh, int64_t ow, int64_t ih, int64_t iw, int64_t kh, int64_t kw, int64_t ci,
                    int64_t co) {
      y[static_cast<size_t>(((n * s.oh + oh) * s.ow + ow) * s.oc + co)] +=
          double(c.x[static_cast<size_t>(((n * s.ih + ih) * s.iw + iw) * s.ic + ci)]) * w_at(kh, kw, ci, co);
    });
    Conv2dShape f = s;
    f.y_type = KType::kBf16;
    check_paths([&] {
      std::vector<uint16_t> out(y.size());
      conv2d_forward(f, x16.data(), w16.data(), c.b.data(), out.data());
      return test::from_bf16(out);
    }, y, true);
  }
  SUBCASE("backward data, dx f32") {
    std::vector<double> dx(c.x.size());
    each_tap(s, [&](int64_t n, int64_t oh, int64_t ow, int64_t ih, int64_t iw, int64_t kh, int64_t kw, int64_t ci,
                    int64_t co) {
      dx[static_cast<size_t>(((n * s.ih + ih) * s.iw + iw) * s.ic + ci)] +=
          double(c.dy[static_cast<size_t>(((n * s.oh + oh) * s.ow + ow) * s.oc + co)]) * w_at(kh, kw, ci, co);
    });
    check_paths([&] {
      std::vector<float> out(dx.size());
      conv2d_backward_data(s, dy16.data(), w16.data(), out.data());
      return out;
    }, dx, false);
  }
  SUBCASE("backward weights (dw and db in one vector)") {
    std::vector<double> want(c.w.size() + c.b.size());
    each_tap(s, [&](int64_t n, int64_t oh, int64_t ow, int64_t ih, int64_t iw, int64_t kh, int64_t kw, int64_t ci,
                    int64_t co) {
      want[static_cast<size_t>(((kh * s.kw + kw) * s.ic + ci) * s.oc + co)] +=
          double(c.x[static_cast<size_t>(((n * s.ih + ih) * s.iw + iw) * s.ic + ci)]) *
          c.dy[static_cast<size_t>(((n * s.oh + oh) * s.ow + ow) * s.oc + co)];
    });
    for (size_t i = 0; i < c.dy.size(); ++i) want[c.w.size() + i % c.b.size()] += c.dy[i];
    check_paths([&] {
      std::vector<float> dw(c.w.size()), db(c.b.size());
      conv2d_backward_weights(s, x16.data(), dy16.data(), dw.data(), db.data());
      dw.insert(dw.end(), db.begin(), db.end());
      return dw;
    }, want, false);
  }
}

TEST_CASE("bf16 path: emulated max and average pooling forward and backward equal a double loop") {
  for (PoolKind kind : {PoolKind::kMax, PoolKind::kAvg}) {
    CAPTURE(static_cast<int>(kind));
    Pool2dShape s;
    s.kind = kind, s.n = 2, s.ih = 6, s.iw = 7, s.c = 5, s.kh = 2, s.kw = 2, s.sh = 2, s.sw = 2;
    s.oh = 3, s.ow = 3, s.type = KType::kBf16;
    const auto x = test::round_to_bf16(test::random_vector(static_cast<size_t>(s.n * s.ih * s.iw * s.c), 21));
    const auto dy = test::round_to_bf16(test::random_vector(static_cast<size_t>(s.n * s.oh * s.ow * s.c), 22));
    std::vector<double> y(dy.size()), dx(x.size());
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t oh = 0; oh < s.oh; ++oh)
        for (int64_t ow = 0; ow < s.ow; ++ow)
          for (int64_t ch = 0; ch < s.c; ++ch) {
            const size_t o = static_cast<size_t>(((n * s.oh + oh) * s.ow + ow) * s.c + ch);
            double best = -1e30, sum = 0;
            size_t arg = 0;
            for (int64_t kh = 0; kh < 2; ++kh)
              for (int64_t kw = 0; kw < 2; ++kw) {
                const size_t i = static_cast<size_t>(((n * s.ih + oh * 2 + kh) * s.iw + ow * 2 + kw) * s.c + ch);
                sum += x[i];
                if (x[i] > best) best = x[i], arg = i;
              }
            y[o] = kind == PoolKind::kMax ? best : sum / 4;
            for (int64_t kh = 0; kh < 2; ++kh)
              for (int64_t kw = 0; kw < 2; ++kw) {
                const size_t i = static_cast<size_t>(((n * s.ih + oh * 2 + kh) * s.iw + ow * 2 + kw) * s.c + ch);
                if (kind == PoolKind::kAvg) dx[i] += dy[o] / 4;
              }
            if (kind == PoolKind::kMax) dx[arg] += dy[o];
          }
    const auto x16 = test::to_bf16(x), dy16 = test::to_bf16(dy);
    check_paths([&] {
      std::vector<uint8_t> ws(pool2d_workspace_bytes(s));
      std::vector<uint16_t> out(y.size()), grad(dx.size());
      pool2d_forward(s, x16.data(), out.data(), ws.data());
      pool2d_backward(s, dy16.data(), grad.data(), ws.data());
      std::vector<float> both = test::from_bf16(out);
      const auto g = test::from_bf16(grad);
      both.insert(both.end(), g.begin(), g.end());
      return both;
    }, [&] {
      std::vector<double> both = y;
      both.insert(both.end(), dx.begin(), dx.end());
      return both;
    }(), true);
  }
}

}  // namespace
}  // namespace dtrain::kernels
