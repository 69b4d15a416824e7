// oneDNN matmul wrapper against a double-precision triple loop, every
// transpose combination, with and without bias, one product or a batch; the bf16 variants against
// the f32 kernel on the same bf16-rounded inputs.
#include <doctest.h>
#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "engine/kernels/matmul.hpp"
#include "engine/base/status.hpp"
#include "tests/engine/kernels/kernel_test_util.hpp"

namespace dtrain::kernels {
namespace {

std::vector<double> reference(const MatmulShape& s, const std::vector<float>& a, const std::vector<float>& b,
                              const float* bias) {
  std::vector<double> c(static_cast<size_t>(s.m * s.n));
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      double acc = bias ? bias[j] : 0.0;
      for (int64_t k = 0; k < s.k; ++k) {
        const double av = s.trans_a ? a[static_cast<size_t>(k * s.m + i)] : a[static_cast<size_t>(i * s.k + k)];
        const double bv = s.trans_b ? b[static_cast<size_t>(j * s.k + k)] : b[static_cast<size_t>(k * s.n + j)];
        acc += av * bv;
      }
      c[static_cast<size_t>(i * s.n + j)] = acc;
    }
  }
  return c;
}

TEST_CASE("kernels::matmul matches a reference for every transpose and bias") {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (bool with_bias : {false, true}) {
        CAPTURE(ta);
        CAPTURE(tb);
        CAPTURE(with_bias);
        MatmulShape s{7, 5, 9};
        s.trans_a = ta;
        s.trans_b = tb;
        const auto a = test::random_vector(static_cast<size_t>(s.m * s.k), 1);
        const auto b = test::random_vector(static_cast<size_t>(s.k * s.n), 2);
        const auto bias = test::random_vector(static_cast<size_t>(s.n), 3);
        std::vector<float> c(static_cast<size_t>(s.m * s.n), 1e9f);
        matmul(s, a.data(), b.data(), with_bias ? bias.data() : nullptr, c.data());
        CHECK(test::max_rel_error(c, reference(s, a, b, with_bias ? bias.data() : nullptr)) < 1e-5);
      }
    }
  }
}

// A batch of products in one call equals each product on its own slice.
TEST_CASE("kernels::matmul batched: each product of the batch matches the reference on its slice") {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (bool with_bias : {false, true}) {
        CAPTURE(ta);
        CAPTURE(tb);
        CAPTURE(with_bias);
        MatmulShape s{6, 5, 4, ta, tb};
        s.batch = 3;
        const size_t sa = static_cast<size_t>(s.m * s.k), sb = static_cast<size_t>(s.k * s.n),
                     sc = static_cast<size_t>(s.m * s.n);
        const auto a = test::random_vector(3 * sa, 31);
        const auto b = test::random_vector(3 * sb, 32);
        const auto bias = test::random_vector(static_cast<size_t>(s.n), 33);
        std::vector<float> c(3 * sc, 1e9f);
        matmul(s, a.data(), b.data(), with_bias ? bias.data() : nullptr, c.data());
        MatmulShape one = s;
        one.batch = 1;
        for (size_t p = 0; p < 3; ++p) {
          CAPTURE(p);
          const std::vector<float> ap(a.begin() + static_cast<std::ptrdiff_t>(p * sa),
                                      a.begin() + static_cast<std::ptrdiff_t>((p + 1) * sa));
          const std::vector<float> bp(b.begin() + static_cast<std::ptrdiff_t>(p * sb),
                                      b.begin() + static_cast<std::ptrdiff_t>((p + 1) * sb));
          const std::vector<float> cp(c.begin() + static_cast<std::ptrdiff_t>(p * sc),
                                      c.begin() + static_cast<std::ptrdiff_t>((p + 1) * sc));
          CHECK(test::max_rel_error(cp, reference(one, ap, bp, with_bias ? bias.data() : nullptr)) < 1e-5);
        }
      }
    }
  }
}

TEST_CASE("kernels::matmul batched bf16 matches batched f32 on the same rounded values") {
  MatmulShape s{5, 7, 9, false, true};
  s.batch = 4;
  const auto a = test::round_to_bf16(test::random_vector(static_cast<size_t>(s.batch * s.m * s.k), 41));
  const auto b = test::round_to_bf16(test::random_vector(static_cast<size_t>(s.batch * s.k * s.n), 42));
  std::vector<float> want(static_cast<size_t>(s.batch * s.m * s.n), 1e9f);
  matmul(s, a.data(), b.data(), nullptr, want.data());
  MatmulShape t = s;
  t.a_type = t.b_type = KType::kBf16;
  const auto a16 = test::to_bf16(a), b16 = test::to_bf16(b);
  std::vector<float> got(want.size(), 1e9f);
  matmul(t, a16.data(), b16.data(), nullptr, got.data());
  CHECK(test::max_rel_error(got, want) < 1e-5);
}

TEST_CASE("kernels::matmul with K = 0 gives the bias (or zeros)") {
  const std::vector<float> bias{1.0f, 2.0f, 3.0f};
  std::vector<float> c(6, 7.0f);
  matmul({2, 3, 0}, nullptr, nullptr, bias.data(), c.data());
  CHECK(c == std::vector<float>{1, 2, 3, 1, 2, 3});
  matmul({2, 3, 0}, nullptr, nullptr, nullptr, c.data());
  CHECK(c == std::vector<float>(6, 0.0f));
  MatmulShape batched{1, 3, 0};
  batched.batch = 2;
  matmul(batched, nullptr, nullptr, bias.data(), c.data());
  CHECK(c == std::vector<float>{1, 2, 3, 1, 2, 3});
}

TEST_CASE("kernels::matmul on MNIST-sized operands") {
  MatmulShape s{64, 128, 784};
  const auto a = test::random_vector(static_cast<size_t>(s.m * s.k), 4);
  const auto b = test::random_vector(static_cast<size_t>(s.k * s.n), 5);
  std::vector<float> c(static_cast<size_t>(s.m * s.n));
  matmul(s, a.data(), b.data(), nullptr, c.data());
  CHECK(test::max_rel_error(c, reference(s, a, b, nullptr)) < 1e-5);
}

// bf16 a and b against the f32 kernel on the same values (inputs rounded to
// bf16 first): the products are exact in f32 either way, so only the
// accumulation order and the final rounding of c may differ. Tolerances:
//   c f32:  scale-aware error < 1e-5 (f32 accumulation order);
//   c bf16: every element within one bf16 ulp (2^-8 relative) of the f32
//           result, give or take 1e-5 * max |c| for the accumulation order.
void check_bf16_against_f32(const MatmulShape& s, bool with_bias, uint64_t seed) {
  const auto a = test::round_to_bf16(test::random_vector(static_cast<size_t>(s.m * s.k), seed));
  const auto b = test::round_to_bf16(test::random_vector(static_cast<size_t>(s.k * s.n), seed + 1));
  const auto bias_v = test::random_vector(static_cast<size_t>(s.n), seed + 2);
  const float* bias = with_bias ? bias_v.data() : nullptr;
  const auto a16 = test::to_bf16(a), b16 = test::to_bf16(b);
  std::vector<float> want(static_cast<size_t>(s.m * s.n), 1e9f);
  matmul(s, a.data(), b.data(), bias, want.data());

  MatmulShape t = s;
  t.a_type = t.b_type = KType::kBf16;
  t.c_type = KType::kF32;
  std::vector<float> got(want.size(), 1e9f);
  matmul(t, a16.data(), b16.data(), bias, got.data());
  CHECK(test::max_rel_error(got, want) < 1e-5);

  t.c_type = KType::kBf16;
  std::vector<uint16_t> got16(want.size(), 0x7fc0);
  matmul(t, a16.data(), b16.data(), bias, got16.data());
  CHECK(test::max_bf16_ulp_error(test::from_bf16(got16), want, 1e-5 * test::max_abs(want)) <= 1.0);
}

TEST_CASE("kernels::matmul bf16 matches f32 for every transpose and bias (odd sizes)") {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (bool with_bias : {false, true}) {
        CAPTURE(ta);
        CAPTURE(tb);
        CAPTURE(with_bias);
        check_bf16_against_f32({7, 5, 3, ta, tb}, with_bias, 11);
        check_bf16_against_f32({13, 17, 33, ta, tb}, with_bias, 12);
      }
    }
  }
}

TEST_CASE("kernels::matmul bf16 matches f32 on mnist_cnn's dense layers") {
  // Per layer: forward y = x W + b, backward-data dx = dy W^T, backward-weights dW = x^T dy.
  for (int64_t batch : {64, 256}) {
    for (const auto& io : {std::pair<int64_t, int64_t>{3136, 128}, {128, 10}}) {
      const int64_t in = io.first, out = io.second;
      CAPTURE(batch);
      CAPTURE(in);
      check_bf16_against_f32({batch, out, in}, true, 21);
      check_bf16_against_f32({batch, in, out, false, true}, false, 22);
      check_bf16_against_f32({in, out, batch, true, false}, false, 23);
    }
  }
}

TEST_CASE("kernels::matmul bf16 with K = 0 gives the bias (or zeros) in c's type") {
  const std::vector<float> bias{1.0f, 2.5f, -3.0f};
  MatmulShape s{2, 3, 0};
  s.a_type = s.b_type = s.c_type = KType::kBf16;
  std::vector<uint16_t> c(6, 0x7fc0);
  matmul(s, nullptr, nullptr, bias.data(), c.data());
  CHECK(test::from_bf16(c) == std::vector<float>{1, 2.5f, -3, 1, 2.5f, -3});
  matmul(s, nullptr, nullptr, nullptr, c.data());
  CHECK(test::from_bf16(c) == std::vector<float>(6, 0.0f));
}

TEST_CASE("kernels::matmul names unsupported operand types") {
  auto message = [](KType a, KType b, KType c) {
    MatmulShape s{2, 2, 2};
    s.a_type = a;
    s.b_type = b;
    s.c_type = c;
    std::vector<float> buf(4, 0.0f);
    try {
      matmul(s, buf.data(), buf.data(), nullptr, buf.data());
    } catch (const ErrorException& e) {
      return e.error.message;
    }
    return std::string("no error");
  };
  const std::string supported = "; it implements f32 x f32 -> f32 and bf16 x bf16 -> f32 or bf16";
  CHECK(message(KType::kF32, KType::kBf16, KType::kF32) ==
        "kernels::matmul does not implement a f32 x b bf16 -> c f32" + supported);
  CHECK(message(KType::kF32, KType::kF32, KType::kBf16) ==
        "kernels::matmul does not implement a f32 x b f32 -> c bf16" + supported);
  CHECK(message(KType::kBf16, KType::kF32, KType::kF32) ==
        "kernels::matmul does not implement a bf16 x b f32 -> c f32" + supported);
}

TEST_CASE("kernels::matmul in blocks: the same bits for any thread count, and the reference's values") {
  const int saved = omp_get_max_threads();
  for (bool ta : {false, true}) {
    CAPTURE(ta);
    MatmulShape s{1000, 200, 300, ta, false};
    const auto a = test::random_vector(static_cast<size_t>(s.m * s.k), 31);
    const auto b = test::random_vector(static_cast<size_t>(s.k * s.n), 32);
    std::vector<float> one;
    for (int threads : {1, 2, 3}) {
      CAPTURE(threads);
      omp_set_num_threads(threads);
      std::vector<float> c(static_cast<size_t>(s.m * s.n));
      matmul(s, a.data(), b.data(), nullptr, c.data());
      if (threads == 1) {
        CHECK(test::max_rel_error(c, reference(s, a, b, nullptr)) < 1e-5);
        one = c;
      } else {
        CHECK(c == one);
      }
    }
  }
  MatmulShape batched{64, 64, 64};
  batched.batch = 64;
  const auto a = test::random_vector(static_cast<size_t>(batched.batch * 64 * 64), 33);
  const auto b = test::random_vector(static_cast<size_t>(batched.batch * 64 * 64), 34);
  std::vector<float> one;
  for (int threads : {1, 2, 3}) {
    CAPTURE(threads);
    omp_set_num_threads(threads);
    std::vector<float> c(a.size());
    matmul(batched, a.data(), b.data(), nullptr, c.data());
    if (threads == 1) one = c;
    CHECK(c == one);
  }
  omp_set_num_threads(saved);
}

// Predict's guarantee: a row's bits do not depend on the rows beside it.
// Without row_invariant oneDNN 2.6's AVX2 sgemm fails this (rows in a 1-3 row
// tail of its 6-row groups, M = 1's gemv), so the AVX2-cap suite checks it.
TEST_CASE("kernels::matmul row_invariant: a row's bits are the same in any batch and at any position") {
  const int64_t rows = 150;
  for (const auto& [n, k] : std::vector<std::pair<int64_t, int64_t>>{{3, 968}, {10, 128}, {128, 784}, {512, 512}}) {
    for (bool tb : {false, true}) {
      CAPTURE(n);
      CAPTURE(k);
      CAPTURE(tb);
      const auto a = test::random_vector(static_cast<size_t>(rows * k), 41);
      const auto b = test::random_vector(static_cast<size_t>(k * n), 42);
      const auto bias = test::random_vector(static_cast<size_t>(n), 43);
      MatmulShape s{rows, n, k, false, tb};
      s.row_invariant = true;
      std::vector<float> whole(static_cast<size_t>(rows * n));
      matmul(s, a.data(), b.data(), bias.data(), whole.data());
      CHECK(test::max_rel_error(whole, reference(s, a, b, bias.data())) < 1e-5);
      for (const auto& [first, count] : std::vector<std::pair<int64_t, int64_t>>{
               {0, 1}, {5, 1}, {3, 2}, {1, 7}, {2, 8}, {10, 30}, {7, 49}, {50, 97}, {1, 149}}) {
        CAPTURE(first);
        CAPTURE(count);
        MatmulShape part = s;
        part.m = count;
        std::vector<float> c(static_cast<size_t>(count * n));
        matmul(part, a.data() + first * k, b.data(), bias.data(), c.data());
        CHECK(std::equal(c.begin(), c.end(), whole.begin() + first * n));
      }
    }
  }
}

}  // namespace
}  // namespace dtrain::kernels
