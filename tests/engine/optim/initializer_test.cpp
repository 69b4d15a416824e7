// Tests for initialize(): statistics of glorot_uniform, he_normal and
// random_uniform, bounds, truncation, determinism in (seed, name, index), the
// constant kinds, and check_initializer.
#include <doctest.h>

#include <cmath>

#include "engine/optim/initializers.hpp"

namespace dtrain {
namespace {

struct Stats {
  double mean, variance, min, max;
};

Stats stats_of(const Tensor& t) {
  double sum = 0.0, sq = 0.0, lo = INFINITY, hi = -INFINITY;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double x = t[i];
    sum += x;
    sq += x * x;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  const double n = static_cast<double>(t.numel());
  return {sum / n, sq / n - (sum / n) * (sum / n), lo, hi};
}

Tensor initialized(const Shape& shape, const std::string& type, uint64_t seed, const std::string& name) {
  Tensor t(shape);
  REQUIRE(initialize(t, InitializerSpec{type, 0.0f}, seed, name).ok());
  return t;
}

TEST_CASE("glorot_uniform is U(-l, l) with l = sqrt(6 / (fan_in + fan_out))") {
  const Tensor t = initialized({400, 600}, "glorot_uniform", 42, "dense/kernel");
  const double limit = std::sqrt(6.0 / 1000.0);
  const Stats s = stats_of(t);
  CHECK(s.min >= -limit);
  CHECK(s.max < limit);
  CHECK(s.min < -0.99 * limit);  // fills the whole interval
  CHECK(s.max > 0.99 * limit);
  CHECK(std::fabs(s.mean) < 0.01 * limit);
  CHECK(s.variance == doctest::Approx(limit * limit / 3.0).epsilon(0.01));
}

TEST_CASE("conv kernels use Keras fans: fan_in = kh*kw*in, fan_out = kh*kw*out") {
  const Tensor t = initialized({3, 3, 16, 32}, "glorot_uniform", 1, "conv2d/kernel");
  const double limit = std::sqrt(6.0 / (9.0 * 16.0 + 9.0 * 32.0));
  const Stats s = stats_of(t);
  CHECK(s.max < limit);
  CHECK(s.max > 0.98 * limit);
  CHECK(s.min >= -limit);
}

TEST_CASE("he_normal is a normal truncated at 2 sigma with stddev sqrt(2 / fan_in)") {
  const Tensor t = initialized({3, 3, 64, 128}, "he_normal", 7, "conv/kernel");
  const double fan_in = 3.0 * 3.0 * 64.0;
  const double sigma = std::sqrt(2.0 / fan_in) / 0.87962566103423978;  // of the untruncated normal
  const Stats s = stats_of(t);
  CHECK(s.min >= -2.0 * sigma * (1.0 + 1e-6));
  CHECK(s.max <= 2.0 * sigma * (1.0 + 1e-6));
  CHECK(s.max > 1.95 * sigma);  // truncated, not clipped to a narrower range
  CHECK(std::fabs(s.mean) < 0.01 * sigma);
  // The truncated distribution has stddev sqrt(2 / fan_in) exactly.
  CHECK(std::sqrt(s.variance) == doctest::Approx(std::sqrt(2.0 / fan_in)).epsilon(0.01));
  // Truncation redraws rather than clamps: no mass piles up at the bound.
  int64_t at_bound = 0;
  for (int64_t i = 0; i < t.numel(); ++i) at_bound += std::fabs(t[i]) >= 1.999 * sigma ? 1 : 0;
  CHECK(at_bound < t.numel() / 1000);
}

TEST_CASE("initial values are a pure function of seed, name and index") {
  const Tensor a = initialized({64, 32}, "glorot_uniform", 5, "dense/kernel");
  const Tensor b = initialized({64, 32}, "glorot_uniform", 5, "dense/kernel");
  CHECK(a.to_vector() == b.to_vector());
  const Tensor other_name = initialized({64, 32}, "glorot_uniform", 5, "dense_1/kernel");
  const Tensor other_seed = initialized({64, 32}, "glorot_uniform", 6, "dense/kernel");
  int64_t same_name = 0, same_seed = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    same_name += a[i] == other_name[i] ? 1 : 0;
    same_seed += a[i] == other_seed[i] ? 1 : 0;
  }
  CHECK(same_name < 3);
  CHECK(same_seed < 3);
  // Element i does not depend on how many elements follow: a (16, 32) kernel's
  // values are the first 512 uniforms of the (64, 32) one, rescaled by the limit.
  const Tensor h1 = initialized({3, 3, 8, 8}, "he_normal", 9, "c/kernel");
  const Tensor h2 = initialized({3, 3, 8, 8}, "he_normal", 9, "c/kernel");
  CHECK(h1.to_vector() == h2.to_vector());
  const Tensor small = initialized({16, 32}, "glorot_uniform", 5, "dense/kernel");
  const double ratio = std::sqrt(6.0 / 48.0) / std::sqrt(6.0 / 96.0);
  for (int64_t i = 0; i < small.numel(); ++i) {
    REQUIRE(a[i] * ratio == doctest::Approx(small[i]).epsilon(1e-5));
  }
}

TEST_CASE("random_uniform is U(minval, maxval), by default Keras' U(-0.05, 0.05), independent of the shape") {
  InitializerSpec spec{"random_uniform", 0.0f};
  Tensor t(Shape{1000, 64});
  REQUIRE(initialize(t, spec, 3, "embedding/embeddings").ok());
  Stats s = stats_of(t);
  CHECK(s.min >= -0.05);
  CHECK(s.max < 0.05);
  CHECK(s.min < -0.049);
  CHECK(s.max > 0.049);
  CHECK(std::fabs(s.mean) < 5e-4);
  CHECK(s.variance == doctest::Approx(0.1 * 0.1 / 12.0).epsilon(0.01));
  // Unlike glorot, the bounds do not depend on the fans.
  Tensor small(Shape{10, 2});
  REQUIRE(initialize(small, spec, 3, "embedding/embeddings").ok());
  for (int64_t i = 0; i < small.numel(); ++i) CHECK(small[i] == t[i]);
  spec.minval = 2.0f;
  spec.maxval = 3.0f;
  REQUIRE(initialize(t, spec, 3, "embedding/embeddings").ok());
  s = stats_of(t);
  CHECK(s.min >= 2.0);
  CHECK(s.max < 3.0);
  CHECK(s.mean == doctest::Approx(2.5).epsilon(1e-3));
}

TEST_CASE("check_initializer: random_uniform needs finite minval <= maxval") {
  InitializerSpec spec{"random_uniform", 0.0f};
  CHECK(check_initializer(spec).ok());
  spec.minval = 1.0f;
  spec.maxval = 1.0f;
  CHECK(check_initializer(spec).ok());  // a constant, as Keras allows
  spec.maxval = 0.5f;
  const Status bad = check_initializer(spec);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().kind == ErrorKind::kConfig);
  CHECK(bad.error().message == "random_uniform needs finite minval <= maxval; got minval 1 and maxval 0.5");
  CHECK(check_initializer(InitializerSpec{"glorot_uniform", 0.0f}).ok());
}

TEST_CASE("zeros, ones and constant") {
  CHECK(initialized({3}, "zeros", 1, "b").to_vector() == std::vector<float>{0.0f, 0.0f, 0.0f});
  CHECK(initialized({2}, "ones", 1, "b").to_vector() == std::vector<float>{1.0f, 1.0f});
  Tensor c(Shape{2, 2});
  REQUIRE(initialize(c, InitializerSpec{"constant", 0.5f}, 1, "b").ok());
  CHECK(c.to_vector() == std::vector<float>(4, 0.5f));
}

TEST_CASE("an unknown initializer names the variable") {
  Tensor t(Shape{2});
  Status s = initialize(t, InitializerSpec{"glorot_unifrom", 0.0f}, 1, "dense/kernel");
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().kind == ErrorKind::kConfig);
  CHECK(s.error().message ==
        "dense/kernel: initializer \"glorot_unifrom\" is not one of glorot_uniform, he_normal, random_uniform, zeros, "
        "ones, constant (did you mean \"glorot_uniform\"?)");
}

}  // namespace
}  // namespace dtrain
