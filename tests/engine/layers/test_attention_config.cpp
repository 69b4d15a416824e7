// multi_head_attention in a job: Keras variable names and shapes, the model
// summary, the backend support table, and the configuration and shape errors
// (the layer's numerics are in test_attention.cpp).
#include <doctest.h>

#include "config_schema/job_loader.hpp"
#include "engine/layers/attention.hpp"
#include "engine/layers/registry.hpp"
#include "engine/model/model.hpp"
#include "engine/ops/support.hpp"

namespace dtrain {
namespace {

TEST_CASE("attention: variables with Keras names and shapes; model summary with shapes; support table") {
  LoadOptions options;
  options.check_files = false;
  const std::string text = R"(model:
  input: {shape: [8, 4]}
  layers:
    - {type: multi_head_attention, num_heads: 2, key_dim: 3, value_dim: 5, output_shape: 6, use_causal_mask: true}
    - {type: multi_head_attention, num_heads: 1, key_dim: 2, use_bias: false, dropout: 0.1}
    - {type: flatten}
    - {type: dense, units: 3}
)";
  auto job = load_job_from_string(text, "mha.yaml", "/nonexistent", options);
  REQUIRE_MESSAGE(job.ok(), (job.ok() ? std::string() : job.error().message));
  // The resolved job (written beside checkpoints, hashed to recognise the
  // model) carries every attention field and loads back to itself.
  auto again = load_job_from_string(job->resolved_yaml, "resolved.yaml", "/nonexistent", options);
  REQUIRE(again.ok());
  CHECK(again->resolved_yaml == job->resolved_yaml);
  CHECK(again->model_hash == job->model_hash);
  CHECK(job->resolved_yaml.find("      num_heads: 2\n      key_dim: 3\n      value_dim: 5\n      output_shape: 6\n"
                                "      dropout: 0.0\n      use_bias: true\n      use_causal_mask: true\n") !=
        std::string::npos);
  for (const auto& change : {std::pair<std::string, std::string>{"num_heads: 2", "num_heads: 3"},
                              {"key_dim: 2", "key_dim: 4"}, {"value_dim: 5", "value_dim: 4"},
                              {"output_shape: 6", "output_shape: 5"}, {"dropout: 0.1", "dropout: 0.2"},
                              {"use_causal_mask: true", "use_causal_mask: false"}}) {
    const std::string& from = change.first;
    const std::string& to = change.second;
    CAPTURE(from);
    std::string changed = text;
    changed.replace(changed.find(from), from.size(), to);
    auto other = load_job_from_string(changed, "mha.yaml", "/nonexistent", options);
    REQUIRE(other.ok());
    CHECK(other->model_hash != job->model_hash);
  }
  const auto& l = layer_options<AttentionSpec>(job->model.layers[0]);
  CHECK(l.num_heads == 2);
  CHECK(l.key_dim == 3);
  CHECK(l.value_dim == std::optional<int64_t>(5));
  CHECK(l.output_shape == std::optional<int64_t>(6));
  CHECK(l.use_causal_mask);
  CHECK(l.dropout == 0.0f);
  const auto& l1 = layer_options<AttentionSpec>(job->model.layers[1]);
  CHECK(job->model.layers[1].name == "multi_head_attention_1");
  CHECK(!l1.value_dim.has_value());
  CHECK(!l1.output_shape.has_value());
  CHECK(!l1.use_causal_mask);
  CHECK(l1.dropout == 0.1f);
  auto model = Model::build(job->model);
  REQUIRE(model.ok());
  std::vector<std::string> got;
  for (const VariableSpec& v : (*model)->variables()) {
    got.push_back(v.name + " " + shape_str(v.shape) + " " + v.init.type);
  }
  CHECK(got == std::vector<std::string>{
                   "multi_head_attention/query/kernel [4, 2, 3] glorot_uniform",
                   "multi_head_attention/query/bias [2, 3] zeros",
                   "multi_head_attention/key/kernel [4, 2, 3] glorot_uniform",
                   "multi_head_attention/key/bias [2, 3] zeros",
                   "multi_head_attention/value/kernel [4, 2, 5] glorot_uniform",
                   "multi_head_attention/value/bias [2, 5] zeros",
                   "multi_head_attention/attention_output/kernel [2, 5, 6] glorot_uniform",
                   "multi_head_attention/attention_output/bias [6] zeros",
                   "multi_head_attention_1/query/kernel [6, 1, 2] glorot_uniform",
                   "multi_head_attention_1/key/kernel [6, 1, 2] glorot_uniform",
                   "multi_head_attention_1/value/kernel [6, 1, 2] glorot_uniform",
                   "multi_head_attention_1/attention_output/kernel [1, 2, 6] glorot_uniform",
                   "dense/kernel [48, 3] glorot_uniform",
                   "dense/bias [3] zeros"});
  CHECK((*model)->summary() ==
        "layer                    type                output             params\n"
        "input                                        [8, 4]             0\n"
        "multi_head_attention     multi_head_attention [8, 6]             176\n"
        "multi_head_attention_1   multi_head_attention [8, 6]             48\n"
        "flatten                  flatten             [48]               0\n"
        "dense                    dense               [3]                147\n"
        "total parameters: 371\n");
  CHECK((*model)->check_support(ops::Context{kHost, DType::bf16}).ok());
  CHECK((*model)->check_support(ops::Context{Device{DeviceKind::debug, 0}, DType::f32}).ok());
  const Status f16 = (*model)->check_support(ops::Context{kHost, DType::f16});
  REQUIRE_FALSE(f16.ok());
  CHECK(f16.error().message ==
        "mha.yaml:4:7: model.layers[0] (multi_head_attention): multi_head_attention cannot run on cpu:0 in float16: "
        "the cpu backend has no float16 matmul (oneDNN has no float16 matmul on the CPU)");
  CHECK(ops::supports("attention", ops::Context{kHost, DType::bf16}));
  CHECK_FALSE(ops::supports("attention", ops::Context{Device{DeviceKind::cuda, 0}, DType::f32}));
}

TEST_CASE("attention: configuration and shape errors") {
  LayerSpec s = default_layer_spec("multi_head_attention");
  s.name = "mha";
  layer_options<AttentionSpec>(s).num_heads = 2;
  layer_options<AttentionSpec>(s).key_dim = 3;
  REQUIRE(make_layer(s).ok());
  auto error = [](LayerSpec spec) { return make_layer(spec).error().message; };
  LayerSpec bad = s;
  layer_options<AttentionSpec>(bad).num_heads = 0;
  CHECK(error(bad) == "multi_head_attention: num_heads must be >= 1; got 0");
  bad = s;
  layer_options<AttentionSpec>(bad).key_dim = -1;
  CHECK(error(bad) == "multi_head_attention: key_dim must be >= 1; got -1");
  bad = s;
  layer_options<AttentionSpec>(bad).value_dim = 0;
  CHECK(error(bad) == "multi_head_attention: value_dim must be >= 1 (or null for key_dim); got 0");
  bad = s;
  layer_options<AttentionSpec>(bad).output_shape = 0;
  CHECK(error(bad) ==
        "multi_head_attention: output_shape must be >= 1 (or null for the input's last dimension); got 0");
  bad = s;
  layer_options<AttentionSpec>(bad).dropout = 1.0f;
  CHECK(error(bad) == "multi_head_attention: dropout must be in [0, 1); got 1");
  layer_options<AttentionSpec>(bad).dropout = -0.5f;
  CHECK(error(bad) == "multi_head_attention: dropout must be in [0, 1); got -0.5");

  auto layer = make_layer(s);
  REQUIRE(layer.ok());
  CHECK((*layer)->build({28, 28, 1}).error().message ==
        "multi_head_attention expects a sequence input (time, features); got shape [28, 28, 1]; add {type: reshape, "
        "target_shape: [time, features]} before it");
  CHECK((*layer)->build({16}).error().message ==
        "multi_head_attention expects a sequence input (time, features); got shape [16]; add {type: reshape, "
        "target_shape: [time, features]} before it");
  CHECK(*(*layer)->build({5, 4}) == Shape{5, 4});

  AttentionOptions two_heads;
  two_heads.num_heads = 2;
  two_heads.key_dim = 3;
  AttentionCore core(two_heads, "core");
  CHECK(core.build({4, 3}, {5, 2}, {6, 2}).error().message ==
        "multi_head_attention: key and value must have the same length (time steps); got key [5, 2] and value [6, 2]");
  CHECK(core.build({4, 3}, {5}, {5, 2}).error().message ==
        "multi_head_attention: the key must be a sequence (time, features); got shape [5]");
  CHECK(*core.build({4, 3}, {5, 2}, {5, 7}) == Shape{4, 3});
}

}  // namespace
}  // namespace dtrain
