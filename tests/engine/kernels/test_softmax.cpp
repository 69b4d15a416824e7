// Softmax row kernels: the polynomial exp against exp in double (within one
// float ulp), its vectorised loop bit for bit against the scalar function,
// special values, and softmax / its backward against float64 references for
// row lengths around the 8 partial sums (tails), masked rows included.
#include <doctest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/kernels/softmax.hpp"
#include "tests/engine/kernels/kernel_test_util.hpp"

namespace dtrain::kernels {
namespace {

// |got - want| in units of the float spacing at want.
double ulps(float got, double want) {
  const auto w = static_cast<float>(want);
  const float step = std::nextafter(std::fabs(w), std::numeric_limits<float>::infinity()) - std::fabs(w);
  return std::fabs(static_cast<double>(got) - want) / static_cast<double>(step);
}

TEST_CASE("kernels::softmax exp is within one ulp of exp over [-87, 0], 0 below, NaN for NaN") {
  // Every 97th float between -87 and 0 (about 9 million values).
  std::vector<float> v;
  for (uint32_t u = std::bit_cast<uint32_t>(-0.0f); u <= std::bit_cast<uint32_t>(-87.0f); u += 97) {
    v.push_back(std::bit_cast<float>(u));
  }
  v.push_back(-87.0f);
  std::vector<float> y(v.size());
  detail::softmax_exp_row(v.data(), y.data(), static_cast<int64_t>(v.size()));
  double worst = 0.0;
  size_t differ = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    worst = std::max(worst, ulps(y[i], std::exp(static_cast<double>(v[i]))));
    differ += std::bit_cast<uint32_t>(y[i]) != std::bit_cast<uint32_t>(detail::softmax_exp(v[i]));
  }
  MESSAGE("worst error ", worst, " ulp over ", v.size(), " values");
  CHECK(worst <= 1.0);
  CHECK(differ == 0);  // the vectorised loop rounds like the scalar code
  CHECK(detail::softmax_exp(0.0f) == 1.0f);
  CHECK(detail::softmax_exp(-0.0f) == 1.0f);
  CHECK(detail::softmax_exp(-87.5f) == 0.0f);
  CHECK(detail::softmax_exp(-1e30f) == 0.0f);
  CHECK(detail::softmax_exp(-std::numeric_limits<float>::infinity()) == 0.0f);
  CHECK(std::isnan(detail::softmax_exp(std::numeric_limits<float>::quiet_NaN())));
  CHECK(std::isnan(detail::softmax_exp(-std::numeric_limits<float>::quiet_NaN())));
}

std::vector<double> softmax_ref(const float* x, int64_t valid, int64_t n) {
  double m = x[0];
  for (int64_t j = 1; j < valid; ++j) m = std::max(m, static_cast<double>(x[j]));
  std::vector<double> y(static_cast<size_t>(n), 0.0);
  double s = 0.0;
  for (int64_t j = 0; j < valid; ++j) s += std::exp(x[j] - m);
  for (int64_t j = 0; j < valid; ++j) y[static_cast<size_t>(j)] = std::exp(x[j] - m) / s;
  return y;
}

TEST_CASE("kernels::softmax_row matches float64 softmax, zeroes masked entries, works in place") {
  for (int64_t n : {1, 2, 7, 8, 9, 16, 17, 63, 64, 65, 200}) {
    for (int64_t valid : {int64_t{1}, (n + 1) / 2, n}) {
      CAPTURE(n);
      CAPTURE(valid);
      std::vector<float> x = test::random_vector(static_cast<size_t>(n), static_cast<uint64_t>(n * 100 + valid));
      for (float& v : x) v *= 4.0f;
      std::vector<float> y(static_cast<size_t>(n), -1.0f);
      softmax_row(x.data(), y.data(), valid, n);
      CHECK(test::max_rel_error(y, softmax_ref(x.data(), valid, n)) < 1e-6);
      for (int64_t j = valid; j < n; ++j) CHECK(y[static_cast<size_t>(j)] == 0.0f);
      std::vector<float> inplace = x;
      softmax_row(inplace.data(), inplace.data(), valid, n);
      CHECK(inplace == y);
    }
  }
  // Far-apart logits: the small terms vanish, the largest gets 1.
  const std::vector<float> x{0.0f, -200.0f, 150.0f, -std::numeric_limits<float>::infinity()};
  std::vector<float> y(4);
  softmax_row(x.data(), y.data(), 4, 4);
  CHECK(y == std::vector<float>{0.0f, 0.0f, 1.0f, 0.0f});
  const std::vector<float> bad{1.0f, std::numeric_limits<float>::quiet_NaN(), 2.0f};
  std::vector<float> z(3);
  softmax_row(bad.data(), z.data(), 3, 3);
  for (float v : z) CHECK(std::isnan(v));
}

TEST_CASE("kernels::softmax_backward_row matches float64 and may write over g") {
  for (int64_t n : {1, 5, 8, 13, 64, 100}) {
    CAPTURE(n);
    std::vector<float> x = test::random_vector(static_cast<size_t>(n), static_cast<uint64_t>(n));
    std::vector<float> y(static_cast<size_t>(n));
    softmax_row(x.data(), y.data(), n, n);
    const std::vector<float> g = test::random_vector(static_cast<size_t>(n), static_cast<uint64_t>(n + 1));
    double dot = 0.0;
    for (size_t j = 0; j < y.size(); ++j) dot += static_cast<double>(g[j]) * y[j];
    std::vector<double> want(y.size());
    for (size_t j = 0; j < y.size(); ++j) want[j] = y[j] * (g[j] - dot);
    std::vector<float> dx(y.size());
    softmax_backward_row(y.data(), g.data(), dx.data(), n);
    CHECK(test::max_rel_error(dx, want) < 1e-6);
    std::vector<float> inplace = g;
    softmax_backward_row(y.data(), inplace.data(), inplace.data(), n);
    CHECK(inplace == dx);
  }
}

}  // namespace
}  // namespace dtrain::kernels
