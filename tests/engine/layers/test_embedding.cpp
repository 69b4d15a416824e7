// Embedding: Keras params and shapes, int32 and float32 ids, the scatter-add
// gradient, and ids out of range (a data error from check_input; NaN rows and
// no out-of-bounds read in forward).
#include <doctest.h>

#include <cmath>

#include "engine/layers/embedding.hpp"
#include "engine/layers/registry.hpp"
#include "engine/model/model.hpp"
#include "tests/engine/layers/layer_test_util.hpp"
#include "engine/layers/dense.hpp"
#include "engine/layers/reshape.hpp"

namespace dtrain {
namespace {

Embedding make_embedding(int64_t input_dim, int64_t output_dim) {
  const EmbeddingSpec s{input_dim, output_dim};
  return Embedding(input_dim, output_dim, s.embeddings_initializer);
}

Tensor int_ids(const Shape& shape, const std::vector<int32_t>& values) {
  Tensor t = Tensor::empty(shape, DType::i32, kHost);
  std::copy(values.begin(), values.end(), t.host_data<int32_t>());
  return t;
}

TEST_CASE("embedding: Keras param, default initializer and output shapes") {
  Embedding e = make_embedding(10, 4);
  CHECK(e.type() == "embedding");
  CHECK(*e.build({7}) == Shape{7, 4});
  CHECK(*e.build({2, 3}) == Shape{2, 3, 4});
  const auto p = e.params();
  REQUIRE(p.size() == 1);
  CHECK(p[0].name == "embeddings");
  CHECK(p[0].shape == Shape{10, 4});
  CHECK(p[0].trainable);
  CHECK(p[0].init.type == "random_uniform");
  CHECK(p[0].init.minval == -0.05f);
  CHECK(p[0].init.maxval == 0.05f);
}

TEST_CASE("embedding: registry errors") {
  LayerSpec s = default_layer_spec("embedding");
  auto& o = layer_options<EmbeddingSpec>(s);
  o.output_dim = 3;
  // 0 is input_dim: auto left unresolved (no text data to take the vocabulary's size from).
  CHECK(make_layer(s).error().message ==
        "embedding: input_dim: auto takes the size of the vocabulary of the job's text data, and this job has none "
        "(data.train of format text or text_folder, or a vocabulary saved in model_dir); give the number of token ids");
  o.input_dim = -1;
  CHECK(make_layer(s).error().message == "embedding: input_dim (the number of token ids) must be >= 1; got -1");
  o.input_dim = 5;
  o.output_dim = 0;
  CHECK(make_layer(s).error().message == "embedding: output_dim must be >= 1; got 0");
}

TEST_CASE("embedding: forward gathers rows for int32 and float32 ids alike; backward scatter-adds") {
  Embedding e = make_embedding(4, 2);
  REQUIRE(e.build({3}).ok());
  std::vector<Tensor> params{Tensor::from({4, 2}, {0, 1, 10, 11, 20, 21, 30, 31})};
  const Tensor f_ids = Tensor::from({2, 3}, {3, 0, 3, 1, 1, 2});
  const Tensor i_ids = int_ids({2, 3}, {3, 0, 3, 1, 1, 2});
  const std::vector<float> want{30, 31, 0, 1, 30, 31, 10, 11, 10, 11, 20, 21};
  const Tensor dy = Tensor::from({2, 3, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  // Row 3 collects tokens 0 and 2, row 1 tokens 3 and 4.
  const std::vector<float> want_grad{3, 4, 16, 18, 11, 12, 6, 8};
  for (const Tensor* ids : {&f_ids, &i_ids}) {
    CAPTURE(dtype_name(ids->dtype()));
    Tensor y;
    LayerCache cache;
    e.forward({}, params, *ids, y, cache);
    CHECK(y.shape() == Shape{2, 3, 2});
    CHECK(y.to_vector() == want);
    std::vector<Tensor> grads{Tensor({4, 2}, 1e6f)};
    Tensor dx(Shape{2, 3}, 1e6f);
    e.backward({}, params, grads, *ids, y, dy, &dx, cache);
    CHECK(grads[0].to_vector() == want_grad);
    // Ids are not differentiable: the input gradient, when asked for, is zero.
    CHECK(dx.dtype() == DType::f32);
    CHECK(dx.to_vector() == std::vector<float>(6, 0.0f));
    e.backward({}, params, grads, *ids, y, dy, nullptr, cache);
    CHECK(grads[0].to_vector() == want_grad);
  }
}

TEST_CASE("embedding: an id that is out of range or not an integer is a data error naming its place, input and layer") {
  Embedding e = make_embedding(10, 3);
  REQUIRE(e.build({4}).ok());
  const InputCheck at{"embed", "model.input"};
  CHECK(e.check_input(Tensor::from({2, 4}, {0, 1, 2, 3, 9, 8, 7, 0}), at).ok());
  CHECK(e.check_input(int_ids({2, 4}, {0, 1, 2, 3, 9, 8, 7, 0}), at).ok());
  const auto message = [&](const Tensor& x, const InputCheck& where) {
    const Status s = e.check_input(x, where);
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().kind == ErrorKind::kData);
    return s.error().message;
  };
  // Without a place: the row of the batch and the position in the example.
  CHECK(message(Tensor::from({2, 4}, {0, 1, 2, 3, 9, 10, 7, 0}), at) ==
        "example 1, position 1: id 10 of model.input is out of range for layer \"embed\" (input_dim 10: ids 0..9)");
  CHECK(message(int_ids({2, 4}, {0, 1, -3, 3, 9, 8, 7, 0}), at) ==
        "example 0, position 2: id -3 of model.input is out of range for layer \"embed\" (input_dim 10: ids 0..9)");
  CHECK(message(Tensor::from({2, 4}, {0, 1, 2, 3, 9, 8, 2.5f, 0}), at) ==
        "example 1, position 2: id 2.5 of model.input is not a whole number for layer \"embed\" (input_dim 10: ids "
        "0..9)");
  CHECK(message(Tensor::from({1, 4}, {0, NAN, 2, 3}), at) ==
        "example 0, position 1: id nan of model.input is not a whole number for layer \"embed\" (input_dim 10: ids "
        "0..9)");
  // With a place: the data's name for the flat index of the bad id.
  const InputCheck located{"embed", "model.inputs.city", [](int64_t i) { return "train.csv:" + std::to_string(i + 2); }};
  CHECK(message(int_ids({2, 4}, {0, 1, 2, 3, 9, 8, 57, 0}), located) ==
        "train.csv:8: id 57 of model.inputs.city is out of range for layer \"embed\" (input_dim 10: ids 0..9)");
}

TEST_CASE("embedding: forward on bad ids gives NaN rows, reads nothing out of bounds, adds nothing to the gradient") {
  Embedding e = make_embedding(3, 2);
  REQUIRE(e.build({4}).ok());
  const Tensor table = Tensor::from({3, 2}, {1, 2, 3, 4, 5, 6});
  std::vector<Tensor> params{table.to(Device{DeviceKind::debug, 0})};
  // 3 is one past the last row, -1 one before the first, 1e9 far past it.
  const Tensor ids = Tensor::from({1, 4}, {3, 1, -1, 1e9f}).to(Device{DeviceKind::debug, 0});
  const ops::Context ctx{Device{DeviceKind::debug, 0}, DType::f32};
  ForwardContext fc;
  fc.ops = &ctx;
  Tensor y;
  LayerCache cache;
  e.forward(fc, params, ids, y, cache);
  const std::vector<float> out = y.to_vector();
  REQUIRE(out.size() == 8);
  for (int i : {0, 1, 4, 5, 6, 7}) CHECK(std::isnan(out[static_cast<size_t>(i)]));
  CHECK(out[2] == 3.0f);
  CHECK(out[3] == 4.0f);
  std::vector<Tensor> grads{Tensor::zeros({3, 2}, DType::f32, ctx.device)};
  e.backward(fc, params, grads, ids, y, Tensor::from({1, 4, 2}, {1, 1, 2, 2, 3, 3, 4, 4}).to(ctx.device), nullptr,
             cache);
  CHECK(grads[0].to_vector() == std::vector<float>{0, 0, 2, 2, 0, 0});
}

// A model whose embedding reads the int32 input through a reshape: the model
// checks its ids, and refuses features of another dtype; a model whose
// embedding follows a dense layer (float32, computed) is not built.
TEST_CASE("embedding: Model::check_input reaches the embedding through layers that only re-view the input") {
  ModelSpec spec;
  spec.input_shape = {2, 3};
  spec.input_dtype = "int32";
  LayerSpec reshape = default_layer_spec("reshape"), emb = default_layer_spec("embedding"),
            flat = default_layer_spec("flatten");
  layer_options<ReshapeSpec>(reshape).target_shape = {6};
  layer_options<EmbeddingSpec>(emb).input_dim = 5;
  layer_options<EmbeddingSpec>(emb).output_dim = 2;
  spec.layers = {reshape, emb, flat};
  auto model = Model::build(spec);
  REQUIRE(model.ok());
  CHECK((*model)->output_shape() == Shape{12});
  CHECK((*model)->check_input(int_ids({1, 2, 3}, {0, 1, 2, 3, 4, 0})).ok());
  const Status floats = (*model)->check_input(Tensor::from({1, 2, 3}, {0, 1, 2, 3, 4, 0}));
  REQUIRE_FALSE(floats.ok());
  CHECK(floats.error().message == "the data gives float32 features, but model.input.dtype is int32");
  const Status bad = (*model)->check_input(int_ids({1, 2, 3}, {0, 1, 2, 3, 4, 5}));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().kind == ErrorKind::kData);
  CHECK(bad.error().message ==
        "example 0, position 5: id 5 of model.input is out of range for layer \"embedding\" (input_dim 5: ids 0..4)");
  // The caller's place of a value: the model input, the row and the flat position in the input's example.
  const auto place = [](size_t input, int64_t row, int64_t position) {
    return "input " + std::to_string(input) + " row " + std::to_string(row) + " position " + std::to_string(position);
  };
  const Status placed = (*model)->check_input(int_ids({2, 2, 3}, {0, 1, 2, 3, 4, 0, 0, 1, 2, 3, 7, 0}), {}, place);
  REQUIRE_FALSE(placed.ok());
  CHECK(placed.error().message ==
        "input 0 row 1 position 4: id 7 of model.input is out of range for layer \"embedding\" (input_dim 5: ids 0..4)");

  LayerSpec dense = default_layer_spec("dense");
  layer_options<DenseSpec>(dense).units = 6;
  spec.input_shape = {6};
  spec.layers = {dense, emb};
  auto computed = Model::build(spec);
  REQUIRE_FALSE(computed.ok());
  CHECK(computed.error().message ==
        "model.layers[0] (dense): dense cannot read the int32 token ids of \"input\"; ids go through an embedding first "
        "(type: embedding, input_dim: the vocabulary size)\n"
        "model.layers[1] (embedding): embedding reads integer token ids, but its input \"dense\" is a layer output "
        "(float32); an embedding reads the model's int32 input (directly or through reshape/flatten)");
}

}  // namespace
}  // namespace dtrain
