// Position embedding: keras_hub param, y = x + embeddings[:T], gradients,
// and the build errors (a sequence longer than the table).
#include <doctest.h>

#include "engine/layers/position_embedding.hpp"
#include "engine/layers/registry.hpp"
#include "tests/engine/layers/layer_test_util.hpp"

namespace dtrain {
namespace {

TEST_CASE("position_embedding: param and shapes") {
  PositionEmbedding pe(8);
  CHECK(pe.type() == "position_embedding");
  CHECK(*pe.build({5, 3}) == Shape{5, 3});
  const auto p = pe.params();
  REQUIRE(p.size() == 1);
  CHECK(p[0].name == "embeddings");
  CHECK(p[0].shape == Shape{8, 3});
  CHECK(p[0].init.type == "glorot_uniform");
  CHECK(p[0].trainable);
  CHECK(*pe.build({2, 8, 3}) == Shape{2, 8, 3});
}

TEST_CASE("position_embedding: build errors name both lengths") {
  CHECK(PositionEmbedding(10).build({12, 4}).error().message ==
        "position embedding shorter than the sequence: sequence_length is 10 but the input (shape [12, 4]) has 12 "
        "steps; set sequence_length to at least 12");
  CHECK(PositionEmbedding(10).build({12}).error().message ==
        "position_embedding expects a sequence input (steps, features); got shape [12]; "
        "add {type: reshape, target_shape: [steps, features]} before it");
  LayerSpec s;
  s.type = "position_embedding";
  CHECK(make_layer(s).error().message == "position_embedding: sequence_length must be >= 1; got 0");
}

TEST_CASE("position_embedding: adds the first T rows; dx = dy; rows past T get no gradient") {
  PositionEmbedding pe(3);
  REQUIRE(pe.build({2, 2}).ok());
  std::vector<Tensor> params{Tensor::from({3, 2}, {10, 20, 30, 40, 50, 60})};
  const Tensor x = Tensor::from({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor y;
  LayerCache cache;
  pe.forward({}, params, x, y, cache);
  CHECK(y.to_vector() == std::vector<float>{11, 22, 33, 44, 15, 26, 37, 48});
  const Tensor dy = Tensor::from({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  std::vector<Tensor> grads{Tensor({3, 2}, 1e6f)};
  Tensor dx;
  pe.backward({}, params, grads, x, y, dy, &dx, cache);
  CHECK(grads[0].to_vector() == std::vector<float>{6, 8, 10, 12, 0, 0});
  CHECK(dx.to_vector() == dy.to_vector());
}

}  // namespace
}  // namespace dtrain
