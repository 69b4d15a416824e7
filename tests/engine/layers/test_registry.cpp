// The layer table: every row builds its type; spec validation messages.
#include <doctest.h>

#include "engine/layers/attention.hpp"
#include "engine/layers/batch_norm.hpp"
#include "engine/layers/conv2d.hpp"
#include "engine/layers/dense.hpp"
#include "engine/layers/dropout.hpp"
#include "engine/layers/embedding.hpp"
#include "engine/layers/pool2d.hpp"
#include "engine/layers/position_embedding.hpp"
#include "engine/layers/registry.hpp"
#include "engine/layers/reshape.hpp"

namespace dtrain {
namespace {

LayerSpec spec(const std::string& type) {
  LayerSpec s;
  if (find_layer_row(type) != nullptr) s = default_layer_spec(type);
  s.type = type;
  s.activation = "relu";
  if (auto* o = s.options.get<DenseSpec>()) o->units = 3;
  if (auto* o = s.options.get<Conv2dSpec>()) {
    o->filters = 2;
    o->kernel = {3};
  }
  if (auto* o = s.options.get<Pool2dSpec>()) o->size = {2};
  if (auto* o = s.options.get<ReshapeSpec>()) o->target_shape = {-1};
  if (auto* o = s.options.get<DropoutSpec>()) o->rate = 0.5f;
  if (auto* o = s.options.get<EmbeddingSpec>()) {
    o->input_dim = 5;
    o->output_dim = 4;
  }
  if (auto* o = s.options.get<PositionEmbeddingSpec>()) o->sequence_length = 6;
  if (auto* o = s.options.get<AttentionSpec>()) {
    o->num_heads = 2;
    o->key_dim = 3;
  }
  return s;
}

TEST_CASE("registry: table order and every type constructs and builds") {
  const std::vector<std::string> expected{
      "dense",      "conv2d",     "max_pool2d", "avg_pool2d", "global_avg_pool2d", "global_max_pool2d",
      "global_avg_pool1d", "flatten", "reshape", "zero_padding2d", "dropout", "batch_norm", "layer_norm",
      "activation", "leaky_relu", "embedding",  "position_embedding", "multi_head_attention", "add", "subtract", "multiply", "average", "maximum",
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
  layer_options<Conv2dSpec>(s).kernel = {3, 1};
  layer_options<Conv2dSpec>(s).strides = {2};
  layer_options<Conv2dSpec>(s).padding = "same";
  auto conv = make_layer(s);
  REQUIRE(conv.ok());
  CHECK(*(*conv)->build({7, 5, 1}) == Shape{4, 3, 2});
  CHECK((*conv)->params()[0].shape == Shape{3, 1, 1, 2});
  LayerSpec p = spec("max_pool2d");
  layer_options<Pool2dSpec>(p).size = {3, 2};
  auto pool = make_layer(p);
  REQUIRE(pool.ok());
  CHECK(*(*pool)->build({9, 9, 4}) == Shape{3, 4, 4});  // strides default to the size
}

TEST_CASE("registry: errors") {
  CHECK(make_layer(spec("desne")).error().message ==
        "unknown layer type \"desne\"; known types: dense, conv2d, max_pool2d, avg_pool2d, global_avg_pool2d, "
        "global_max_pool2d, global_avg_pool1d, flatten, reshape, zero_padding2d, dropout, batch_norm, layer_norm, "
        "activation, leaky_relu, embedding, position_embedding, multi_head_attention, add, subtract, multiply, average, maximum, concatenate (did you mean \"dense\"?)");
  LayerSpec d = spec("dense");
  layer_options<DenseSpec>(d).units = 0;  // units: auto left unresolved
  CHECK(make_layer(d).error().message ==
        "dense: units: auto takes the number of classes of the job's data (format text, text_folder or "
        "image_folder), and this job has none; give the number of units");
  layer_options<DenseSpec>(d).units = -2;
  CHECK(make_layer(d).error().message == "dense: units must be >= 1; got -2");
  LayerSpec c = spec("conv2d");
  auto& co = layer_options<Conv2dSpec>(c);
  co.kernel = {};
  CHECK(make_layer(c).error().message == "conv2d: kernel is required (e.g. kernel: 3 or kernel: [3, 5])");
  co.kernel = {3, 3, 3};
  CHECK(make_layer(c).error().message == "conv2d: kernel must have 1 or 2 entries (height, width); got [3, 3, 3]");
  co.kernel = {3};
  co.dilation = {0};
  CHECK(make_layer(c).error().message == "conv2d: dilation entries must be >= 1; got [0]");
  co.dilation = {};
  co.padding = "sme";
  CHECK(make_layer(c).error().message == "conv2d: padding must be \"valid\" or \"same\"; got \"sme\" (did you mean \"same\"?)");
  LayerSpec r = spec("dropout");
  layer_options<DropoutSpec>(r).rate = 1.0f;
  CHECK(make_layer(r).error().message == "dropout: rate must be in [0, 1); got 1");
  LayerSpec b = spec("batch_norm");
  layer_options<BatchNormSpec>(b).epsilon = 0.0f;
  CHECK(make_layer(b).error().message == "batch_norm: epsilon must be > 0; got 0");
  LayerSpec a = spec("activation");
  a.activation = "";
  CHECK(make_layer(a).error().message ==
        "activation: the activation field is required (one of relu, gelu, tanh, sigmoid, softmax)");
  CHECK(make_activation("tanhh").error().message ==
        "unknown activation \"tanhh\"; known: relu, gelu, tanh, sigmoid, softmax (did you mean \"tanh\"?)");
  LayerSpec rs = spec("reshape");
  layer_options<ReshapeSpec>(rs).target_shape = {};
  CHECK(make_layer(rs).error().message == "reshape: target_shape is required (without the batch dimension)");
}

}  // namespace
}  // namespace dtrain
