// Layer normalization: Keras params (gamma/beta by scale/center), per-row
// statistics on rank 2 and 3 inputs, build errors.
#include <doctest.h>

#include <cmath>

#include "engine/layers/layer_norm.hpp"
#include "engine/layers/registry.hpp"
#include "tests/engine/layers/layer_test_util.hpp"

namespace dtrain {
namespace {

TEST_CASE("layer_norm: Keras defaults and params") {
  LayerSpec s = default_layer_spec("layer_norm");
  auto made = make_layer(s);  // the spec's defaults: epsilon 1e-3, center and scale
  REQUIRE(made.ok());
  REQUIRE(*(*made)->build({4, 6}) == Shape{4, 6});
  const auto p = (*made)->params();
  REQUIRE(p.size() == 2);
  CHECK(p[0].name == "gamma");
  CHECK(p[0].shape == Shape{6});
  CHECK(p[0].init.type == "ones");
  CHECK(p[0].trainable);
  CHECK(p[1].name == "beta");
  CHECK(p[1].init.type == "zeros");
  CHECK(p[1].trainable);
  LayerNorm beta_only(1e-3f, true, false), gamma_only(1e-3f, false, true), neither(1e-3f, false, false);
  REQUIRE(beta_only.build({3}).ok());
  REQUIRE(gamma_only.build({3}).ok());
  REQUIRE(neither.build({3}).ok());
  REQUIRE(beta_only.params().size() == 1);
  CHECK(beta_only.params()[0].name == "beta");
  REQUIRE(gamma_only.params().size() == 1);
  CHECK(gamma_only.params()[0].name == "gamma");
  CHECK(neither.params().empty());
  CHECK(LayerNorm(1e-3f, true, true).build({}).error().message ==
        "layer_norm expects an input with a feature (last) dimension; got shape []");
  layer_options<LayerNormSpec>(s).epsilon = 0.0f;
  CHECK(make_layer(s).error().message == "layer_norm: epsilon must be > 0; got 0");
}

TEST_CASE("layer_norm: each row is normalised by its own mean and biased variance") {
  LayerNorm ln(1e-3f, true, true);
  REQUIRE(ln.build({2, 4}).ok());
  // Rows {1, 2, 3, 6} (mean 3, var 3.5), {0, 0, 4, 4} (mean 2, var 4), and two more.
  const Tensor x = Tensor::from({2, 2, 4}, {1, 2, 3, 6, 0, 0, 4, 4, 5, 5, 5, 5, -1, 1, -1, 1});
  std::vector<Tensor> params{Tensor::from({4}, {1, 2, 0.5f, -1}), Tensor::from({4}, {0, 1, 0, 0.25f})};
  Tensor y;
  LayerCache cache;
  ln.forward({}, params, x, y, cache);
  REQUIRE(y.shape() == Shape{2, 2, 4});
  const double s0 = 1.0 / std::sqrt(3.5 + 1e-3), s1 = 1.0 / std::sqrt(4.0 + 1e-3), s3 = 1.0 / std::sqrt(1.0 + 1e-3);
  CHECK(y[0] == doctest::Approx((1 - 3) * s0));
  CHECK(y[1] == doctest::Approx(2 * (2 - 3) * s0 + 1));
  CHECK(y[3] == doctest::Approx(-1 * (6 - 3) * s0 + 0.25));
  CHECK(y[6] == doctest::Approx(0.5 * (4 - 2) * s1));
  // A constant row has variance 0: xhat = 0, y = beta.
  CHECK(y[8] == doctest::Approx(0.0));
  CHECK(y[9] == doctest::Approx(1.0));
  CHECK(y[15] == doctest::Approx(-1 * 1 * s3 + 0.25));
}

}  // namespace
}  // namespace dtrain
