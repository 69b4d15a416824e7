// Forward and backward values of every parametrised layer against PyTorch
// float64 references (reference/gen_layer_refs.py -> reference/layer_refs.json).
#include <doctest.h>

#include <fstream>
#include <set>
#include <nlohmann/json.hpp>

#include "engine/layers/attention.hpp"
#include "engine/layers/batch_norm.hpp"
#include "engine/layers/conv2d.hpp"
#include "engine/layers/dense.hpp"
#include "engine/layers/embedding.hpp"
#include "engine/layers/layer_norm.hpp"
#include "engine/layers/leaky_relu.hpp"
#include "engine/layers/pool2d.hpp"
#include "engine/layers/position_embedding.hpp"
#include "engine/layers/registry.hpp"
#include "engine/layers/zero_padding2d.hpp"
#include "tests/engine/layers/layer_test_util.hpp"

namespace dtrain {
namespace {

using nlohmann::json;

Tensor tensor_of(const json& j) {
  return Tensor::from(j.at("shape").get<Shape>(), j.at("data").get<std::vector<float>>());
}

template <class T>
void maybe(const json& l, const char* key, T& out) {
  if (l.contains(key)) out = l.at(key).get<T>();
}

LayerSpec spec_of(const json& l) {
  LayerSpec s = default_layer_spec(l.at("type").get<std::string>());
  s.activation = l.value("activation", std::string());
  if (auto* o = s.options.get<DenseSpec>()) {
    maybe(l, "units", o->units);
    maybe(l, "use_bias", o->use_bias);
  }
  if (auto* o = s.options.get<Conv2dSpec>()) {
    maybe(l, "filters", o->filters);
    maybe(l, "kernel", o->kernel);
    maybe(l, "strides", o->strides);
    maybe(l, "dilation", o->dilation);
    maybe(l, "padding", o->padding);
    maybe(l, "use_bias", o->use_bias);
  }
  if (auto* o = s.options.get<Pool2dSpec>()) {
    maybe(l, "size", o->size);
    maybe(l, "strides", o->strides);
    maybe(l, "padding", o->padding);
  }
  if (auto* o = s.options.get<BatchNormSpec>()) {
    maybe(l, "momentum", o->momentum);
    maybe(l, "epsilon", o->epsilon);
  }
  if (auto* o = s.options.get<LayerNormSpec>()) {
    maybe(l, "epsilon", o->epsilon);
    maybe(l, "center", o->center);
    maybe(l, "scale", o->scale);
  }
  if (auto* o = s.options.get<EmbeddingSpec>()) {
    maybe(l, "input_dim", o->input_dim);
    maybe(l, "output_dim", o->output_dim);
  }
  if (auto* o = s.options.get<PositionEmbeddingSpec>()) maybe(l, "sequence_length", o->sequence_length);
  if (auto* o = s.options.get<ZeroPadding2dSpec>()) maybe(l, "pad", o->padding);
  if (auto* o = s.options.get<AttentionSpec>()) {
    maybe(l, "num_heads", o->num_heads);
    maybe(l, "key_dim", o->key_dim);
    if (l.contains("value_dim")) o->value_dim = l.at("value_dim").get<int64_t>();
    if (l.contains("output_shape")) o->output_shape = l.at("output_shape").get<int64_t>();
    maybe(l, "use_causal_mask", o->use_causal_mask);
    maybe(l, "use_bias", o->use_bias);
  }
  if (auto* o = s.options.get<LeakyReluSpec>()) maybe(l, "negative_slope", o->negative_slope);
  return s;
}

json load_refs(const char* file) {
  std::ifstream in(std::string(DTRAIN_SOURCE_ROOT) + "/tests/engine/layers/reference/" + file);
  REQUIRE(in.good());
  return json::parse(in);
}

// Runs every case of `refs` through the layer its spec names; adds the
// layer types it covers to `covered`.
void check_cases(const json& refs, std::set<std::string>& covered) {
  for (const json& c : refs.at("cases")) {
    const std::string name = c.at("name").get<std::string>();
    CAPTURE(name);
    covered.insert(c.at("layer").at("type").get<std::string>());
    auto made = make_layer(spec_of(c.at("layer")));
    REQUIRE(made.ok());
    Layer& layer = **made;
    const Tensor x = tensor_of(c.at("x"));
    const Shape example(x.shape().begin() + 1, x.shape().end());
    REQUIRE(layer.build(example).ok());

    std::vector<Tensor> params;
    for (const json& p : c.at("params")) params.push_back(tensor_of(p));
    if (c.contains("moving")) {
      for (const json& p : c.at("moving")) params.push_back(tensor_of(p));
    }
    const auto specs = layer.params();
    REQUIRE(specs.size() == params.size());
    for (size_t i = 0; i < specs.size(); ++i) CHECK(specs[i].shape == params[i].shape());

    ForwardContext ctx;
    ctx.training = c.at("training").get<bool>();
    Tensor y;
    LayerCache cache;
    layer.forward(ctx, params, x, y, cache);
    test::check_close(y, tensor_of(c.at("y")), 1e-4, name + " y");

    std::vector<Tensor> grads;
    for (const Tensor& p : params) grads.emplace_back(p.shape(), 1e6f);
    Tensor dx;
    layer.backward(ctx, params, grads, x, y, tensor_of(c.at("dy")), &dx, cache);
    test::check_close(dx, tensor_of(c.at("dx")), 1e-4, name + " dx");
    const json& dparams = c.at("dparams");
    for (size_t i = 0; i < dparams.size(); ++i) {
      test::check_close_or_zero(grads[i], tensor_of(dparams[i]), 1e-4, name + " d" + specs[i].name);
    }
    if (c.contains("moving_after")) {
      const json& after = c.at("moving_after");
      for (size_t i = 0; i < after.size(); ++i) {
        test::check_close(params[dparams.size() + i], tensor_of(after[i]), 1e-5, name + " " + specs[dparams.size() + i].name);
      }
    }
  }
}

TEST_CASE("layers match PyTorch (and closed forms in NumPy) float64 references") {
  const json torch_refs = load_refs("layer_refs.json");
  REQUIRE(torch_refs.at("cases").size() >= 45);
  const json numpy_refs = load_refs("layer_refs_numpy.json");
  REQUIRE(numpy_refs.at("cases").size() >= 4);
  std::set<std::string> covered;
  check_cases(torch_refs, covered);
  check_cases(numpy_refs, covered);
  // Every layer type that computes has a reference; reshape and flatten only
  // re-view their input, dropout is random (tests/engine/layers/test_dropout.cpp),
  // and the merge layers, of several inputs, are checked against PyTorch as
  // a graph (tests/engine/model/test_graph.cpp).
  for (const std::string& type : layer_types()) {
    CAPTURE(type);
    LayerSpec spec;
    spec.type = type;
    const bool merge = type == "add" || type == "subtract" || type == "multiply" || type == "average" ||
                       type == "maximum" || type == "concatenate";
    if (merge) CHECK((*make_layer(spec))->arity() != 1);
    if (type != "reshape" && type != "flatten" && type != "dropout" && !merge) CHECK(covered.count(type) == 1);
  }
}

}  // namespace
}  // namespace dtrain
