// The layer table: every row builds its type; spec validation messages.
#include <doctest.h>

#include "engine/layers/registry.hpp"

namespace dtrain {
namespace {

LayerSpec spec(const std::string& type) {
  LayerSpec s;
  s.type = type;
  s.units = 3;
  s.filters = 2;
  s.kernel = {3};
  s.size = {2};
  s.target_shape = {-1};
  s.rate = 0.5f;
  s.activation = "relu";
  s.input_dim = 5;
  s.output_dim = 4;
  s.sequence_length = 6;
  s.num_heads = 2;
  s.key_dim = 3;
  return s;
}

TEST_CASE("registry: table order and every type constructs and builds") {
  const std::vector<std::string> expected{
      "dense",      "conv2d",     "max_pool2d", "avg_pool2d", "global_avg_pool2d", "global_max_pool2d",
      "global_avg_pool1d", "flatten", "reshape", "zero_padding2d", "dropout", "batch_norm", "layer_norm",
      "activation", "embedding",  "position_embedding", "multi_head_attention", "add", "subtract", "multiply", "average", "maximum",
      "concatenate"};
  CHECK(layer_types() == expected);
  for (const std::string& t : layer_types()) {
    CAPTURE(t);
    auto layer = make_layer(spec(t));
    REQUIRE(layer.ok());
    CHECK((*layer)->type() == t);
    const Shape input = t == "dense" ? Shape{6} : t == "global_avg_pool1d" || t == "multi_head_attention" ? Shape{6, 2} : Shape{6, 6, 2};
    if ((*layer)->arity() == 1) {
      CHECK((*layer)->build(input).ok());
    } else {
      const std::vector<Shape> two{input, input};
      CHECK((*layer)->build_inputs(two).ok());
      CHECK_FALSE((*layer)->build(input).ok());  // a merge layer on one input is refused
    }
  }
}

TEST_CASE("registry: windows from the spec") {
  LayerSpec s = spec("conv2d");
  s.kernel = {3, 1};
  s.strides = {2};
  s.padding = "same";
  auto conv = make_layer(s);
  REQUIRE(conv.ok());
  CHECK(*(*conv)->build({7, 5, 1}) == Shape{4, 3, 2});
  CHECK((*conv)->params()[0].shape == Shape{3, 1, 1, 2});
  LayerSpec p = spec("max_pool2d");
  p.size = {3, 2};
  auto pool = make_layer(p);
  REQUIRE(pool.ok());
  CHECK(*(*pool)->build({9, 9, 4}) == Shape{3, 4, 4});  // strides default to the size
}

TEST_CASE("registry: errors") {
  CHECK(make_layer(spec("desne")).error().message ==
        "unknown layer type \"desne\"; known types: dense, conv2d, max_pool2d, avg_pool2d, global_avg_pool2d, "
        "global_max_pool2d, global_avg_pool1d, flatten, reshape, zero_padding2d, dropout, batch_norm, layer_norm, "
        "activation, embedding, position_embedding, multi_head_attention, add, subtract, multiply, average, maximum, concatenate (did you mean \"dense\"?)");
  LayerSpec d = spec("dense");
  d.units = 0;
  CHECK(make_layer(d).error().message == "dense: units must be >= 1; got 0");
  LayerSpec c = spec("conv2d");
  c.kernel = {};
  CHECK(make_layer(c).error().message == "conv2d: kernel is required (e.g. kernel: 3 or kernel: [3, 5])");
  c.kernel = {3, 3, 3};
  CHECK(make_layer(c).error().message == "conv2d: kernel must have 1 or 2 entries (height, width); got [3, 3, 3]");
  c.kernel = {3};
  c.dilation = {0};
  CHECK(make_layer(c).error().message == "conv2d: dilation entries must be >= 1; got [0]");
  c.dilation = {};
  c.padding = "sme";
  CHECK(make_layer(c).error().message == "conv2d: padding must be \"valid\" or \"same\"; got \"sme\" (did you mean \"same\"?)");
  LayerSpec r = spec("dropout");
  r.rate = 1.0f;
  CHECK(make_layer(r).error().message == "dropout: rate must be in [0, 1); got 1");
  LayerSpec b = spec("batch_norm");
  b.epsilon = 0.0f;
  CHECK(make_layer(b).error().message == "batch_norm: epsilon must be > 0; got 0");
  LayerSpec a = spec("activation");
  a.activation = "";
  CHECK(make_layer(a).error().message ==
        "activation: the activation field is required (one of relu, gelu, tanh, sigmoid, softmax)");
  CHECK(make_activation("tanhh").error().message ==
        "unknown activation \"tanhh\"; known: relu, gelu, tanh, sigmoid, softmax (did you mean \"tanh\"?)");
  LayerSpec rs = spec("reshape");
  rs.target_shape = {};
  CHECK(make_layer(rs).error().message == "reshape: target_shape is required (without the batch dimension)");
}

}  // namespace
}  // namespace dtrain
