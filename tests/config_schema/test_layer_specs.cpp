// The job-file side of the sequence layers (embedding, position_embedding,
// layer_norm, global pools, dense on rank > 1): fields and Keras defaults,
// the resolved YAML, the model built from the job (shapes, variable names),
// and the messages for bad values.
#include <doctest.h>

#include "engine/model/model.hpp"
#include "job_test_util.hpp"
#include "engine/layers/embedding.hpp"
#include "engine/layers/layer_norm.hpp"
#include "engine/layers/position_embedding.hpp"
#include "engine/layers/registry.hpp"

namespace dtrain {
namespace {

using testing::load_error;
using testing::load_text;

const char* kSequenceJob = R"(model:
  input: {shape: [12], dtype: int32}
  layers:
    - {type: embedding, input_dim: 50, output_dim: 8}
    - {type: position_embedding, sequence_length: 16}
    - {type: dense, units: 6, activation: relu}
    - {type: layer_norm}
    - {type: global_avg_pool1d}
    - {type: dense, units: 12}
    - {type: reshape, target_shape: [2, 2, 3]}
    - {type: global_max_pool2d}
    - {type: dense, units: 12}
    - {type: reshape, target_shape: [2, 2, 3]}
    - {type: global_avg_pool2d}
    - {type: dense, units: 4}
)";

JobSpec load_ok(const std::string& yaml) {
  Result<JobSpec> r = load_text(yaml);
  REQUIRE_MESSAGE(r.ok(), r.error().message);
  return r.value();
}

TEST_CASE("layer specs: the sequence layers load with Keras defaults") {
  const JobSpec job = load_ok(kSequenceJob);
  const auto& l = job.model.layers;
  REQUIRE(l.size() == 12);
  CHECK(layer_options<EmbeddingSpec>(l[0]).input_dim == 50);
  CHECK(layer_options<EmbeddingSpec>(l[0]).output_dim == 8);
  CHECK(layer_options<EmbeddingSpec>(l[0]).embeddings_initializer.type == "random_uniform");
  CHECK(layer_options<EmbeddingSpec>(l[0]).embeddings_initializer.minval == -0.05f);
  CHECK(layer_options<EmbeddingSpec>(l[0]).embeddings_initializer.maxval == 0.05f);
  CHECK(layer_options<PositionEmbeddingSpec>(l[1]).sequence_length == 16);
  CHECK(layer_options<LayerNormSpec>(l[3]).epsilon == 1e-3f);
  CHECK(layer_options<LayerNormSpec>(l[3]).center);
  CHECK(layer_options<LayerNormSpec>(l[3]).scale);
  CHECK(l[4].name == "global_avg_pool1d");
  CHECK(l[7].name == "global_max_pool2d");
  CHECK(l[10].name == "global_avg_pool2d");
}

TEST_CASE("layer specs: every new field can be set, and the resolved YAML loads back to the same job") {
  const JobSpec job = load_ok(R"(model:
  input: {shape: [5], dtype: int32}
  layers:
    - {type: embedding, input_dim: 7, output_dim: 3, embeddings_initializer: {type: random_uniform, minval: -0.5, maxval: 0.25}}
    - {type: position_embedding, sequence_length: 9, name: pos}
    - {type: layer_norm, epsilon: 0.01, center: false, scale: false}
)");
  const auto& l = job.model.layers;
  CHECK(layer_options<EmbeddingSpec>(l[0]).embeddings_initializer.minval == -0.5f);
  CHECK(layer_options<EmbeddingSpec>(l[0]).embeddings_initializer.maxval == 0.25f);
  CHECK(l[1].name == "pos");
  CHECK(layer_options<LayerNormSpec>(l[2]).epsilon == 0.01f);
  CHECK_FALSE(layer_options<LayerNormSpec>(l[2]).center);
  CHECK_FALSE(layer_options<LayerNormSpec>(l[2]).scale);
  const std::string layers = job.resolved_yaml.substr(0, job.resolved_yaml.find("  loss:"));
  CHECK(layers == R"(model:
  input:
    shape: [5]
    dtype: int32
  layers:
    - type: embedding
      name: embedding
      input_dim: 7
      output_dim: 3
      embeddings_initializer:
        type: random_uniform
        minval: -0.5
        maxval: 0.25
    - type: position_embedding
      name: pos
      sequence_length: 9
    - type: layer_norm
      name: layer_norm
      epsilon: 0.01
      center: false
      scale: false
)");
  const JobSpec again = load_ok(job.resolved_yaml);
  CHECK(again.resolved_yaml == job.resolved_yaml);
  CHECK(again.model_hash == job.model_hash);
}

TEST_CASE("layer specs: the model built from the job has the shapes and Keras variable names") {
  const JobSpec job = load_ok(kSequenceJob);
  auto model = Model::build(job.model);
  REQUIRE_MESSAGE(model.ok(), (model.ok() ? std::string() : model.error().message));
  CHECK((*model)->summary() ==
        "layer                    type                output             params\n"
        "input                                        [12]               0\n"
        "embedding                embedding           [12, 8]            400\n"
        "position_embedding       position_embedding  [12, 8]            128\n"
        "dense                    dense               [12, 6]            54\n"
        "dense/relu               activation          [12, 6]            0\n"
        "layer_norm               layer_norm          [12, 6]            12\n"
        "global_avg_pool1d        global_avg_pool1d   [6]                0\n"
        "dense_1                  dense               [12]               84\n"
        "reshape                  reshape             [2, 2, 3]          0\n"
        "global_max_pool2d        global_max_pool2d   [3]                0\n"
        "dense_2                  dense               [12]               48\n"
        "reshape_1                reshape             [2, 2, 3]          0\n"
        "global_avg_pool2d        global_avg_pool2d   [3]                0\n"
        "dense_3                  dense               [4]                16\n"
        "total parameters: 742\n");
  std::vector<std::string> names;
  for (const VariableSpec& v : (*model)->variables()) names.push_back(v.name + " " + shape_str(v.shape));
  CHECK(names == std::vector<std::string>{"embedding/embeddings [50, 8]", "position_embedding/embeddings [16, 8]",
                                          "dense/kernel [8, 6]", "dense/bias [6]", "layer_norm/gamma [6]",
                                          "layer_norm/beta [6]", "dense_1/kernel [6, 12]", "dense_1/bias [12]",
                                          "dense_2/kernel [3, 12]", "dense_2/bias [12]", "dense_3/kernel [3, 4]",
                                          "dense_3/bias [4]"});
}

TEST_CASE("layer specs: bad values give pinned messages") {
  const std::string head = "model:\n  input: {shape: [6]}\n  layers:\n    - ";
  CHECK(load_error(head + "{type: embedding, input_dim: 0, output_dim: 4}\n") ==
        "job.yaml:4:36: model.layers[0].input_dim: 0 is below the minimum 1");
  CHECK(load_error(head + "{type: embedding, input_dim: 10}\n") ==
        "job.yaml:4:7: model.layers[0].output_dim: required key is missing; expected an integer >= 1");
  CHECK(load_error(head + "{type: embedding, input_dim: 10, output_dim: 4, vocab_size: 3}\n") ==
        "job.yaml:4:55: model.layers[0].vocab_size: unknown key; expected one of type, name, inputs, input_dim, output_dim, "
        "embeddings_initializer");
  CHECK(load_error(head + "{type: layer_norm, epsilon: 0}\n") ==
        "job.yaml:4:35: model.layers[0].epsilon: 0 is not above 0; expected a number > 0");
  CHECK(load_error(head + "{type: layer_norm, centre: false}\n") ==
        "job.yaml:4:26: model.layers[0].centre: unknown key; expected one of type, name, inputs, epsilon, center, scale "
        "(did you mean \"center\"?)");
  CHECK(load_error(head + "{type: position_embedding}\n") ==
        "job.yaml:4:7: model.layers[0].sequence_length: required key is missing; expected an integer >= 1");
  CHECK(load_error(head + "{type: global_avg_pool2d, size: 2}\n") ==
        "job.yaml:4:33: model.layers[0].size: unknown key; expected one of type, name, inputs");
}

TEST_CASE("layer specs: errors found when the model is built name the layer's place") {
  const auto build_error = [](const std::string& yaml) {
    const JobSpec job = load_ok(yaml);
    auto model = Model::build(job.model);
    return model.ok() ? std::string() : model.error().message;
  };
  CHECK(build_error("model:\n  input: {shape: [12, 4]}\n  layers:\n    - {type: position_embedding, sequence_length: 10}\n") ==
        "job.yaml:4:7: model.layers[0] (position_embedding): position embedding shorter than the sequence: "
        "sequence_length is 10 but the input (shape [12, 4]) has 12 steps; set sequence_length to at least 12");
  CHECK(build_error("model:\n  input: {shape: [6]}\n  layers:\n    - {type: global_avg_pool2d}\n") ==
        "job.yaml:4:7: model.layers[0] (global_avg_pool2d): global_avg_pool2d expects an image input (height, width, "
        "channels); got shape [6]; add {type: reshape, target_shape: [height, width, channels]} before it");
  CHECK(build_error("model:\n  input: {shape: [6], dtype: int32}\n  layers:\n    - {type: embedding, input_dim: 5, output_dim: 2, "
                    "embeddings_initializer: {type: random_uniform, minval: 1, maxval: 0}}\n") ==
        "job.yaml:4:7: model.layers[0] (embedding): embeddings: random_uniform needs finite minval <= maxval; got "
        "minval 1 and maxval 0");
  // Token ids: an embedding reads an int32 input, and only embeddings (or
  // reshape/flatten re-views) read one. Both problems in one pass.
  CHECK(build_error("model:\n  input: {shape: [6]}\n  layers:\n    - {type: embedding, input_dim: 5, output_dim: 2}\n"
                    "    - {type: embedding, input_dim: 5, output_dim: 2}\n") ==
        "job.yaml:4:7: model.layers[0] (embedding): embedding reads integer token ids, but the model input \"input\" is "
        "float32; declare it as ids: model.input: {shape: [6], dtype: int32}\n"
        "job.yaml:5:7: model.layers[1] (embedding): embedding reads integer token ids, but its input \"embedding\" is "
        "a layer output (float32); an embedding reads the model's int32 input (directly or through reshape/flatten)");
  CHECK(build_error("model:\n  input: {shape: [6], dtype: int32}\n  layers:\n    - {type: reshape, target_shape: [2, 3]}\n"
                    "    - {type: dense, units: 4}\n") ==
        "job.yaml:5:7: model.layers[1] (dense): dense cannot read the int32 token ids of \"reshape\"; ids go through an "
        "embedding first (type: embedding, input_dim: the vocabulary size)");
  CHECK(build_error("model:\n  input: {shape: [6], dtype: int32}\n  layers:\n    - {type: flatten}\n"
                    "    - {type: embedding, input_dim: 5, output_dim: 2}\n") == "");
}

}  // namespace
}  // namespace dtrain

namespace dtrain {
namespace {

TEST_CASE("model.inputs: a named input, read by name, round-trips through the resolved job; its errors") {
  const JobSpec job = load_ok(R"(model:
  inputs: {tokens: {shape: [16], dtype: int32}}
  layers:
    - {name: emb, type: embedding, input_dim: 10, output_dim: 4, inputs: tokens}
    - {type: global_avg_pool1d}
    - {type: dense, units: 2}
)");
  CHECK(job.model.input_name == "tokens");
  CHECK(job.model.input_shape == std::vector<int64_t>{16});
  CHECK(job.model.input_dtype == "int32");
  CHECK(job.resolved_yaml.find("model:\n  inputs:\n    tokens:\n      shape: [16]\n      dtype: int32\n  layers:\n") == 0);
  const JobSpec again = load_ok(job.resolved_yaml);
  CHECK(again.model_hash == job.model_hash);
  auto model = Model::build(job.model);
  REQUIRE(model.ok());
  CHECK((*model)->input_name() == "tokens");
  CHECK((*model)->input_dtype() == DType::i32);
  // The default layer above the first is the named input too.
  CHECK(load_ok("model:\n  inputs: {x: {shape: [3]}}\n  layers:\n    - {type: dense, units: 2}\n").model.input_name == "x");

  CHECK(load_error("model:\n  layers:\n    - {type: dense, units: 2}\n") ==
        "job.yaml:2:3: model.input: required key is missing; expected a mapping such as {shape: [28, 28, 1]} (or "
        "inputs: {NAME: {shape: [...]}} to name it)");
  CHECK(load_error("model:\n  input: {shape: [3]}\n  inputs: {a: {shape: [16]}, b: {shape: [4]}}\n  layers:\n"
                   "    - {type: dense, units: 2}\n") ==
        "job.yaml:3:11: model.inputs: given together with input; expected only one of input, inputs");
  // Several inputs: each with its shape, dtype and place, in file order; the
  // resolved job keeps them all, and a changed second input changes the model hash.
  const JobSpec two = load_ok("model:\n  inputs: {a: {shape: [16], dtype: int32}, b: {shape: [4]}}\n  layers:\n"
                              "    - {type: concatenate, inputs: [a, b]}\n    - {type: dense, units: 2}\n");
  CHECK(two.model.input_name == "a");
  CHECK(two.model.input_where == "job.yaml:2:12");
  REQUIRE(two.model.extra_inputs.size() == 1);
  CHECK(two.model.extra_inputs[0].name == "b");
  CHECK(two.model.extra_inputs[0].shape == std::vector<int64_t>{4});
  CHECK(two.model.extra_inputs[0].dtype == "float32");
  CHECK(two.model.extra_inputs[0].where == "job.yaml:2:44");
  CHECK(two.resolved_yaml.find("model:\n  inputs:\n    a:\n      shape: [16]\n      dtype: int32\n    b:\n      shape: [4]\n"
                               "  layers:\n") == 0);
  CHECK(load_ok(two.resolved_yaml).model_hash == two.model_hash);
  CHECK(load_ok(two.resolved_yaml).model.extra_inputs.size() == 1);
  CHECK(load_ok("model:\n  inputs: {a: {shape: [16], dtype: int32}, b: {shape: [5]}}\n  layers:\n"
                "    - {type: concatenate, inputs: [a, b]}\n    - {type: dense, units: 2}\n")
            .model_hash != two.model_hash);
  CHECK(load_error("model:\n  inputs: {a: {dtype: int32}}\n  layers:\n    - {type: dense, units: 2}\n") ==
        "job.yaml:2:15: model.inputs.a.shape: required key is missing; expected a non-empty list of integers >= 1");
}

}  // namespace
}  // namespace dtrain
