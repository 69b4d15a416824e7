// oneDNN convolution wrappers against direct double-precision loops over
// NHWC/HWIO buffers: forward, backward-data, backward-weights (+ bias); the
// bf16 variants against the f32 kernels on the same bf16-rounded inputs.
#include <doctest.h>

#include <string>
#include <vector>

#include "engine/kernels/conv.hpp"
#include "engine/kernels/padding.hpp"
#include "engine/base/status.hpp"
#include "tests/engine/kernels/kernel_test_util.hpp"

namespace dtrain::kernels {
namespace {

Conv2dShape geometry(int64_t n, int64_t ih, int64_t iw, int64_t ic, int64_t oc, int64_t kh, int64_t kw, int64_t s,
                     int64_t d, bool same) {
  const Window1d h = window_1d(ih, kh, s, d, same), w = window_1d(iw, kw, s, d, same);
  Conv2dShape g;
  g.n = n;
  g.ih = ih;
  g.iw = iw;
  g.ic = ic;
  g.oh = h.out;
  g.ow = w.out;
  g.oc = oc;
  g.kh = kh;
  g.kw = kw;
  g.sh = g.sw = s;
  g.dh = g.dw = d;
  g.pad_top = h.pad_before;
  g.pad_bottom = h.pad_after;
  g.pad_left = w.pad_before;
  g.pad_right = w.pad_after;
  return g;
}

// Calls f(n, oy, ox, iy, ix, ky, kx) for every (output, kernel tap) pair that
// lands inside the input.
template <class F>
void for_each_tap(const Conv2dShape& g, F&& f) {
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox)
        for (int64_t ky = 0; ky < g.kh; ++ky)
          for (int64_t kx = 0; kx < g.kw; ++kx) {
            const int64_t iy = oy * g.sh - g.pad_top + ky * g.dh, ix = ox * g.sw - g.pad_left + kx * g.dw;
            if (iy >= 0 && iy < g.ih && ix >= 0 && ix < g.iw) f(n, oy, ox, iy, ix, ky, kx);
          }
}

void check_geometry(const Conv2dShape& g) {
  const auto x = test::random_vector(static_cast<size_t>(g.n * g.ih * g.iw * g.ic), 1);
  const auto w = test::random_vector(static_cast<size_t>(g.kh * g.kw * g.ic * g.oc), 2);
  const auto b = test::random_vector(static_cast<size_t>(g.oc), 3);
  const auto dy = test::random_vector(static_cast<size_t>(g.n * g.oh * g.ow * g.oc), 4);
  auto xi = [&](int64_t n, int64_t y, int64_t xx, int64_t c) { return static_cast<size_t>(((n * g.ih + y) * g.iw + xx) * g.ic + c); };
  auto yi = [&](int64_t n, int64_t y, int64_t xx, int64_t c) { return static_cast<size_t>(((n * g.oh + y) * g.ow + xx) * g.oc + c); };
  auto wi = [&](int64_t ky, int64_t kx, int64_t ci, int64_t co) { return static_cast<size_t>(((ky * g.kw + kx) * g.ic + ci) * g.oc + co); };

  std::vector<double> y_ref(dy.size()), dx_ref(x.size(), 0.0), dw_ref(w.size(), 0.0), db_ref(b.size(), 0.0);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox)
        for (int64_t co = 0; co < g.oc; ++co) {
          y_ref[yi(n, oy, ox, co)] = b[static_cast<size_t>(co)];
          db_ref[static_cast<size_t>(co)] += dy[yi(n, oy, ox, co)];
        }
  for_each_tap(g, [&](int64_t n, int64_t oy, int64_t ox, int64_t iy, int64_t ix, int64_t ky, int64_t kx) {
    for (int64_t ci = 0; ci < g.ic; ++ci)
      for (int64_t co = 0; co < g.oc; ++co) {
        y_ref[yi(n, oy, ox, co)] += double(x[xi(n, iy, ix, ci)]) * w[wi(ky, kx, ci, co)];
        dx_ref[xi(n, iy, ix, ci)] += double(dy[yi(n, oy, ox, co)]) * w[wi(ky, kx, ci, co)];
        dw_ref[wi(ky, kx, ci, co)] += double(dy[yi(n, oy, ox, co)]) * x[xi(n, iy, ix, ci)];
      }
  });

  std::vector<float> y(y_ref.size(), 1e9f), dx(x.size(), 1e9f), dw(w.size(), 1e9f), db(b.size(), 1e9f);
  conv2d_forward(g, x.data(), w.data(), b.data(), y.data());
  CHECK(test::max_rel_error(y, y_ref) < 1e-5);
  conv2d_backward_data(g, dy.data(), w.data(), dx.data());
  CHECK(test::max_rel_error(dx, dx_ref) < 1e-5);
  conv2d_backward_weights(g, x.data(), dy.data(), dw.data(), db.data());
  CHECK(test::max_rel_error(dw, dw_ref) < 1e-5);
  CHECK(test::max_rel_error(db, db_ref) < 1e-5);
  // Without bias: same weights gradient, and the forward has no offset.
  std::vector<float> dw2(w.size(), 1e9f);
  conv2d_backward_weights(g, x.data(), dy.data(), dw2.data(), nullptr);
  CHECK(test::max_rel_error(dw2, dw_ref) < 1e-5);
  std::vector<float> y2(y_ref.size());
  conv2d_forward(g, x.data(), w.data(), nullptr, y2.data());
  for (size_t i = 0; i < y_ref.size(); ++i) y_ref[i] -= b[i % static_cast<size_t>(g.oc)];
  CHECK(test::max_rel_error(y2, y_ref) < 1e-5);
}

TEST_CASE("kernels::conv2d matches direct loops") {
  SUBCASE("valid 3x3, 1 -> 8 channels") { check_geometry(geometry(2, 8, 8, 1, 8, 3, 3, 1, 1, false)); }
  SUBCASE("same 3x3, 16 -> 32 channels (blocked weights)") { check_geometry(geometry(2, 7, 7, 16, 32, 3, 3, 1, 1, true)); }
  SUBCASE("same 3x3 stride 2, asymmetric pad") { check_geometry(geometry(3, 8, 9, 3, 5, 3, 3, 2, 1, true)); }
  SUBCASE("same 5x2 dilation 2") { check_geometry(geometry(2, 9, 7, 4, 6, 5, 2, 1, 2, true)); }
  SUBCASE("valid 2x3 dilation 2 stride 2") { check_geometry(geometry(1, 10, 11, 2, 3, 2, 3, 2, 2, false)); }
  SUBCASE("MNIST conv2: 5x5, 32 -> 64 channels") { check_geometry(geometry(2, 12, 12, 32, 64, 5, 5, 1, 1, false)); }
}

// bf16 operands against the f32 kernels on the same values (x, w, dy rounded
// to bf16 first; bias f32): products are exact in f32 either way, so only the
// accumulation order and the final rounding may differ. Tolerances:
//   f32 result (y, dx, dw, db): scale-aware error < 1e-5;
//   bf16 result (y, dx): every element within one bf16 ulp (2^-8 relative)
//   of the f32 result, give or take 1e-5 * max |result|.
void check_bf16_against_f32(Conv2dShape g) {
  const auto x = test::round_to_bf16(test::random_vector(static_cast<size_t>(g.n * g.ih * g.iw * g.ic), 31));
  const auto w = test::round_to_bf16(test::random_vector(static_cast<size_t>(g.kh * g.kw * g.ic * g.oc), 32));
  const auto b = test::random_vector(static_cast<size_t>(g.oc), 33);
  const auto dy = test::round_to_bf16(test::random_vector(static_cast<size_t>(g.n * g.oh * g.ow * g.oc), 34));
  const auto x16 = test::to_bf16(x), w16 = test::to_bf16(w), dy16 = test::to_bf16(dy);
  auto check_f32 = [](const std::vector<float>& got, const std::vector<float>& want) {
    CHECK(test::max_rel_error(got, want) < 1e-5);
  };
  auto check_bf16 = [](const std::vector<uint16_t>& got, const std::vector<float>& want) {
    CHECK(test::max_bf16_ulp_error(test::from_bf16(got), want, 1e-5 * test::max_abs(want)) <= 1.0);
  };

  std::vector<float> y_ref(dy.size(), 1e9f), dx_ref(x.size(), 1e9f), dw_ref(w.size(), 1e9f), db_ref(b.size(), 1e9f);
  conv2d_forward(g, x.data(), w.data(), b.data(), y_ref.data());
  conv2d_backward_data(g, dy.data(), w.data(), dx_ref.data());
  conv2d_backward_weights(g, x.data(), dy.data(), dw_ref.data(), db_ref.data());

  Conv2dShape h = g;
  h.x_type = h.w_type = h.dy_type = KType::kBf16;
  for (KType out : {KType::kF32, KType::kBf16}) {
    CAPTURE(ktype_name(out));
    h.y_type = h.dx_type = out;
    std::vector<float> y(y_ref.size(), 1e9f), dx(x.size(), 1e9f);
    std::vector<uint16_t> y16(y_ref.size(), 0x7fc0), dx16(x.size(), 0x7fc0);
    conv2d_forward(h, x16.data(), w16.data(), b.data(), out == KType::kF32 ? static_cast<void*>(y.data()) : y16.data());
    conv2d_backward_data(h, dy16.data(), w16.data(), out == KType::kF32 ? static_cast<void*>(dx.data()) : dx16.data());
    if (out == KType::kF32) {
      check_f32(y, y_ref);
      check_f32(dx, dx_ref);
    } else {
      check_bf16(y16, y_ref);
      check_bf16(dx16, dx_ref);
    }
  }
  std::vector<float> dw(w.size(), 1e9f), db(b.size(), 1e9f);
  conv2d_backward_weights(h, x16.data(), dy16.data(), dw.data(), db.data());
  check_f32(dw, dw_ref);
  check_f32(db, db_ref);
  conv2d_backward_weights(h, x16.data(), dy16.data(), dw.data(), nullptr);
  check_f32(dw, dw_ref);
}

TEST_CASE("kernels::conv2d bf16 matches f32") {
  SUBCASE("mnist_cnn conv1: same 3x3, 1 -> 32, 28x28, batch 64") {
    check_bf16_against_f32(geometry(64, 28, 28, 1, 32, 3, 3, 1, 1, true));
  }
  SUBCASE("mnist_cnn conv2: same 3x3, 32 -> 64, 14x14, batch 64") {
    check_bf16_against_f32(geometry(64, 14, 14, 32, 64, 3, 3, 1, 1, true));
  }
  SUBCASE("valid 3x3, 3 -> 5 channels, odd sizes") { check_bf16_against_f32(geometry(3, 7, 5, 3, 5, 3, 3, 1, 1, false)); }
  SUBCASE("same 3x3 stride 2, asymmetric pad") { check_bf16_against_f32(geometry(3, 8, 9, 3, 5, 3, 3, 2, 1, true)); }
  SUBCASE("same 5x2 dilation 2") { check_bf16_against_f32(geometry(2, 9, 7, 4, 6, 5, 2, 1, 2, true)); }
}

TEST_CASE("kernels::conv2d bf16 forward with fused relu matches f32") {
  for (bool mnist : {false, true}) {
    CAPTURE(mnist);
    Conv2dShape g = mnist ? geometry(64, 14, 14, 32, 64, 3, 3, 1, 1, true) : geometry(3, 7, 5, 3, 5, 3, 3, 1, 1, false);
    g.relu = true;
    const auto x = test::round_to_bf16(test::random_vector(static_cast<size_t>(g.n * g.ih * g.iw * g.ic), 41));
    const auto w = test::round_to_bf16(test::random_vector(static_cast<size_t>(g.kh * g.kw * g.ic * g.oc), 42));
    const auto b = test::random_vector(static_cast<size_t>(g.oc), 43);
    std::vector<float> y_ref(static_cast<size_t>(g.n * g.oh * g.ow * g.oc), 1e9f);
    conv2d_forward(g, x.data(), w.data(), b.data(), y_ref.data());
    size_t zeros = 0;
    for (float v : y_ref) zeros += v == 0.0f;
    CHECK(zeros > y_ref.size() / 4);  // the relu did clip

    Conv2dShape h = g;
    h.x_type = h.w_type = KType::kBf16;
    const auto x16 = test::to_bf16(x), w16 = test::to_bf16(w);
    std::vector<float> y(y_ref.size(), 1e9f);
    conv2d_forward(h, x16.data(), w16.data(), b.data(), y.data());
    CHECK(test::max_rel_error(y, y_ref) < 1e-5);
    h.y_type = KType::kBf16;
    std::vector<uint16_t> y16(y_ref.size(), 0x7fc0);
    conv2d_forward(h, x16.data(), w16.data(), b.data(), y16.data());
    CHECK(test::max_bf16_ulp_error(test::from_bf16(y16), y_ref, 1e-5 * test::max_abs(y_ref)) <= 1.0);
    size_t negative = 0;
    for (uint16_t v : y16) negative += (v & 0x8000) != 0 && v != 0x8000;
    CHECK(negative == 0);
  }
}

// The message of the ErrorException `call` throws (or "no error").
template <class F>
std::string error_of(F&& call) {
  try {
    call();
  } catch (const ErrorException& e) {
    return e.error.message;
  }
  return "no error";
}

TEST_CASE("kernels::conv2d names unsupported operand types") {
  Conv2dShape g = geometry(1, 3, 3, 1, 1, 1, 1, 1, 1, false);
  std::vector<float> buf(16, 0.0f);
  Conv2dShape f = g;
  f.w_type = KType::kBf16;
  CHECK(error_of([&] { conv2d_forward(f, buf.data(), buf.data(), nullptr, buf.data()); }) ==
        "kernels::conv2d_forward does not implement x f32, w bf16 -> y f32; it implements x, w f32 -> y f32 and "
        "x, w bf16 -> y f32 or bf16");
  Conv2dShape d = g;
  d.dx_type = KType::kBf16;
  CHECK(error_of([&] { conv2d_backward_data(d, buf.data(), buf.data(), buf.data()); }) ==
        "kernels::conv2d_backward_data does not implement dy f32, w f32 -> dx bf16; it implements dy, w f32 -> dx "
        "f32 and dy, w bf16 -> dx f32 or bf16");
  Conv2dShape w = g;
  w.x_type = KType::kBf16;
  CHECK(error_of([&] { conv2d_backward_weights(w, buf.data(), buf.data(), buf.data(), nullptr); }) ==
        "kernels::conv2d_backward_weights does not implement x bf16, dy f32 -> dw f32; it implements x, dy f32 -> "
        "dw f32 and x, dy bf16 -> dw f32");
}

}  // namespace
}  // namespace dtrain::kernels
