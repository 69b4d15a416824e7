// Forward and backward values of every parametrised layer against PyTorch
// float64 references (reference/gen_layer_refs.py -> reference/layer_refs.json).
#include <doctest.h>

#include <fstream>
#include <set>
#include <nlohmann/json.hpp>

#include "engine/layers/registry.hpp"
#include "tests/engine/layers/layer_test_util.hpp"

namespace dtrain {
namespace {

using nlohmann::json;

Tensor tensor_of(const json& j) {
  return Tensor::from(j.at("shape").get<Shape>(), j.at("data").get<std::vector<float>>());
}

LayerSpec spec_of(const json& l) {
  LayerSpec s;
  s.type = l.at("type").get<std::string>();
  s.units = l.value("units", int64_t{0});
  s.filters = l.value("filters", int64_t{0});
  s.kernel = l.value("kernel", std::vector<int64_t>{});
  s.strides = l.value("strides", std::vector<int64_t>{});
  s.dilation = l.value("dilation", std::vector<int64_t>{});
  s.size = l.value("size", std::vector<int64_t>{});
  s.padding = l.value("padding", std::string("valid"));
  s.use_bias = l.value("use_bias", true);
  s.activation = l.value("activation", std::string());
  s.momentum = l.value("momentum", 0.99f);
  s.epsilon = l.value("epsilon", 1e-3f);
  s.center = l.value("center", true);
  s.scale = l.value("scale", true);
  s.input_dim = l.value("input_dim", int64_t{0});
  s.output_dim = l.value("output_dim", int64_t{0});
  s.sequence_length = l.value("sequence_length", int64_t{0});
  s.pad = l.value("pad", std::vector<int64_t>{});
  s.num_heads = l.value("num_heads", int64_t{0});
  s.key_dim = l.value("key_dim", int64_t{0});
  if (l.contains("value_dim")) s.value_dim = l.at("value_dim").get<int64_t>();
  if (l.contains("output_shape")) s.output_shape = l.at("output_shape").get<int64_t>();
  s.use_causal_mask = l.value("use_causal_mask", false);
  return s;
}

TEST_CASE("layers match PyTorch float64 references") {
  std::ifstream in(std::string(DTRAIN_SOURCE_ROOT) + "/tests/engine/layers/reference/layer_refs.json");
  REQUIRE(in.good());
  const json refs = json::parse(in);
  REQUIRE(refs.at("cases").size() >= 45);
  std::set<std::string> covered;
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
