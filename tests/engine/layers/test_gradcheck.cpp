// The gradient checker itself must catch a wrong backward; then finite
// differences for the layers of the model-graph work (dense on rank > 2
// inputs, layer_norm, global pools, embedding, position_embedding).
#include <doctest.h>

#include "engine/layers/registry.hpp"
#include "tests/engine/layers/layer_test_util.hpp"
#include "engine/layers/dense.hpp"
#include "engine/layers/embedding.hpp"
#include "engine/layers/layer_norm.hpp"
#include "engine/layers/position_embedding.hpp"

namespace dtrain {
namespace {

// y = w * x^2 elementwise with a scalar w; backward off by `error` (relative).
class Square : public Layer {
 public:
  explicit Square(float error) : error_(error) {}
  std::string type() const override { return "square"; }
  Result<Shape> build(const Shape& input) override { return input; }
  std::vector<ParamSpec> params() const override { return {{"w", {1}, {}, true}}; }
  void forward(const ForwardContext&, std::span<Tensor> p, const Tensor& x, Tensor& y, LayerCache&) const override {
    y = Tensor(x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) y[i] = p[0][0] * x[i] * x[i];
  }
  void backward(const ForwardContext&, std::span<const Tensor> p, std::span<Tensor> g, const Tensor& x,
                const Tensor&, const Tensor& dy, Tensor* dx, const LayerCache&) const override {
    g[0].zero();
    *dx = Tensor(x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) {
      (*dx)[i] = (1.0f + error_) * 2.0f * p[0][0] * x[i] * dy[i];
      g[0][0] += x[i] * x[i] * dy[i];
    }
  }

 private:
  float error_;
};

TEST_CASE("gradient checker: accepts a right backward and rejects a 5% wrong one") {
  const Tensor x = test::random_tensor({3, 4}, 1);
  const std::vector<Tensor> params{Tensor::from({1}, {1.5f})};
  const auto good = test::gradient_errors(Square(0.0f), params, x);
  CHECK(good.dx < 1e-3);
  CHECK(good.params.at(0) < 1e-3);
  const auto bad = test::gradient_errors(Square(0.05f), params, x);
  CHECK(bad.dx > 0.04);
  CHECK(bad.params.at(0) < 1e-3);
}

std::unique_ptr<Layer> built(LayerSpec spec, const Shape& input) {
  auto layer = make_layer(spec);
  REQUIRE_MESSAGE(layer.ok(), (layer.ok() ? std::string() : layer.error().message));
  auto out = (*layer)->build(input);
  REQUIRE_MESSAGE(out.ok(), (out.ok() ? std::string() : out.error().message));
  return std::move(*layer);
}

LayerSpec spec_of(const std::string& type) { return default_layer_spec(type); }

TEST_CASE("gradient check: dense on rank 3 and rank 4 inputs") {
  for (bool use_bias : {true, false}) {
    CAPTURE(use_bias);
    LayerSpec s = spec_of("dense");
    layer_options<DenseSpec>(s).units = 4;
    layer_options<DenseSpec>(s).use_bias = use_bias;
    auto d3 = built(s, {3, 5});
    test::check_gradients(*d3, test::make_params(*d3, 21), test::random_tensor({2, 3, 5}, 22));
    auto d4 = built(s, {2, 3, 5});
    test::check_gradients(*d4, test::make_params(*d4, 23), test::random_tensor({2, 2, 3, 5}, 24));
  }
}

TEST_CASE("gradient check: layer_norm with and without center and scale") {
  for (const bool center : {true, false}) {
    for (const bool scale : {true, false}) {
      CAPTURE(center);
      CAPTURE(scale);
      LayerSpec s = spec_of("layer_norm");
      layer_options<LayerNormSpec>(s).center = center;
      layer_options<LayerNormSpec>(s).scale = scale;
      auto ln = built(s, {3, 6});
      // Random gamma and beta (make_params would give ones and zeros, which
      // hides a gamma left out of dx).
      std::vector<Tensor> params;
      for (const ParamSpec& p : ln->params()) params.push_back(test::random_tensor(p.shape, 31 + params.size(), 0.7f));
      test::GradCheckOptions opt;
      opt.eps = 3e-3;
      test::check_gradients(*ln, params, test::random_tensor({2, 3, 6}, 33, 2.0f), opt);
    }
  }
  LayerSpec flat = spec_of("layer_norm");
  layer_options<LayerNormSpec>(flat).epsilon = 0.5f;  // a large epsilon must still be in both directions
  auto ln = built(flat, {5});
  test::check_gradients(*ln, {test::random_tensor({5}, 34), test::random_tensor({5}, 35)},
                        test::random_tensor({4, 5}, 36));
}

TEST_CASE("gradient check: global pools") {
  auto gap2d = built(spec_of("global_avg_pool2d"), {3, 4, 2});
  test::check_gradients(*gap2d, {}, test::random_tensor({2, 3, 4, 2}, 41));
  // Distinct values 0.05 apart, so the +-eps perturbation never moves the argmax.
  auto gmp2d = built(spec_of("global_max_pool2d"), {3, 4, 2});
  test::check_gradients(*gmp2d, {}, test::distinct_tensor({2, 3, 4, 2}, 42));
  auto gap1d = built(spec_of("global_avg_pool1d"), {5, 3});
  test::check_gradients(*gap1d, {}, test::random_tensor({2, 5, 3}, 43));
}

TEST_CASE("gradient check: embedding (param gradient only: ids are not differentiable)") {
  LayerSpec s = spec_of("embedding");
  layer_options<EmbeddingSpec>(s).input_dim = 6;
  layer_options<EmbeddingSpec>(s).output_dim = 3;
  auto emb = built(s, {4});
  // Ids with repeats (3 twice, 0 three times); 2 and 4 appear nowhere.
  const Tensor ids = Tensor::from({3, 4}, {3, 0, 1, 3, 0, 5, 0, 1, 5, 5, 1, 0});
  test::GradCheckOptions opt;
  opt.check_dx = false;
  test::check_gradients(*emb, test::make_params(*emb, 51), ids, opt);
}

TEST_CASE("gradient check: position_embedding, shorter and as long as the table") {
  LayerSpec s = spec_of("position_embedding");
  layer_options<PositionEmbeddingSpec>(s).sequence_length = 5;
  auto shorter = built(s, {3, 4});
  test::check_gradients(*shorter, test::make_params(*shorter, 61), test::random_tensor({2, 3, 4}, 62));
  auto full = built(s, {2, 5, 4});
  test::check_gradients(*full, test::make_params(*full, 63), test::random_tensor({2, 2, 5, 4}, 64));
}

}  // namespace
}  // namespace dtrain
