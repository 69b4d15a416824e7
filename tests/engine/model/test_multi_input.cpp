// A model of two inputs (model.inputs): int32 token ids through an embedding
// and float features through a dense layer, forward and backward against
// PyTorch float64 (reference/gen_multi_input_refs.py ->
// reference/multi_input_refs.json), finite differences, the per-input data
// checks, and the errors of several inputs.
#include <doctest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "config_schema/job_loader.hpp"
#include "engine/model/model.hpp"
#include "tests/engine/model/model_test_util.hpp"

namespace dtrain {
namespace {

using namespace model_testing;

Tensor ids_of(const json& j) {
  const Tensor f = tensor_of(j);
  Tensor t = Tensor::zeros(f.shape(), DType::i32, kHost);
  for (int64_t i = 0; i < f.numel(); ++i) t.host_data<int32_t>()[i] = static_cast<int32_t>(f[i]);
  return t;
}

const json& refs() {
  static const json r = read_refs("multi_input_refs.json");
  return r;
}

Result<std::unique_ptr<Model>> model_of(const std::string& yaml) { return model_testing::model_of(yaml, "multi.yaml"); }
std::string model_error(const std::string& yaml) { return model_testing::model_error(yaml, "multi.yaml"); }

Run run_model(const Model& model, const std::vector<Tensor>& values) {
  const json& r = refs();
  ReplicaState rs = model.make_replica_state();
  for (size_t i = 0; i < model.variables().size(); ++i) rs.values[i] = values[i];
  ForwardContext fc{true, 1, 0, 0, &rs.ctx};
  const Tensor tokens = ids_of(r.at("tokens"));
  const std::vector<Tensor> extra = {tensor_of(r.at("numbers"))};
  Run out;
  out.y = model.forward(fc, rs, tokens, extra).clone();
  model.backward(fc, rs, tokens, tensor_of(r.at("dy")), {}, extra);
  for (const Tensor& g : rs.grads) out.grads.push_back(g.clone());
  return out;
}

std::vector<Tensor> ref_values(const Model& model) {
  std::vector<Tensor> values;
  for (const VariableSpec& v : model.variables()) values.push_back(tensor_of(refs().at("params").at(v.name)).clone());
  return values;
}

TEST_CASE("multi-input: token ids and float features in one model match PyTorch float64") {
  auto model = model_of(refs().at("yaml").get<std::string>());
  REQUIRE_MESSAGE(model.ok(), (model.ok() ? "" : model.error().message));
  const Model& m = **model;
  REQUIRE(m.num_inputs() == 2);
  CHECK(m.inputs()[0].name == "tokens");
  CHECK(m.inputs()[0].dtype == DType::i32);
  CHECK(m.inputs()[1].name == "numbers");
  CHECK(m.inputs()[1].shape == Shape{4});
  CHECK(m.inputs()[1].where == "multi.yaml:4:5");
  const Run got = run_model(m, ref_values(m));
  const Tensor y = tensor_of(refs().at("y"));
  REQUIRE(got.y.shape() == y.shape());
  for (int64_t i = 0; i < y.numel(); ++i) CHECK(rel_err(got.y[i], y[i]) < 1e-5);
  for (size_t v = 0; v < m.variables().size(); ++v) {
    INFO(m.variables()[v].name);
    const Tensor want = tensor_of(refs().at("grads").at(m.variables()[v].name));
    REQUIRE(got.grads[v].shape() == want.shape());
    double worst = 0;
    for (int64_t i = 0; i < want.numel(); ++i) worst = std::max(worst, rel_err(got.grads[v][i], want[i]));
    CHECK(worst < 1e-4);
  }
  // Both inputs are listed, with their dtypes, in the graph validate --graph prints.
  const std::string graph = m.graph_summary();
  INFO(graph);
  CHECK(graph.find("\ntokens     input (int32)         [5]                          0  \n") != std::string::npos);
  CHECK(graph.find("\nnumbers    input                 [4]                          0  \n") != std::string::npos);
  CHECK(graph.find("\nembed      embedding             [5, 3]                      21  tokens\n") != std::string::npos);
}

TEST_CASE("multi-input: finite differences of sum(y * dy) over every parameter") {
  auto model = model_of(refs().at("yaml").get<std::string>());
  REQUIRE(model.ok());
  const Model& m = **model;
  check_finite_differences(m, ref_values(m), tensor_of(refs().at("dy")),
                           [&](const std::vector<Tensor>& values) { return run_model(m, values); });
}

TEST_CASE("multi-input: check_input checks each input's dtype and the ids of the input the embedding reads") {
  auto model = model_of(refs().at("yaml").get<std::string>());
  REQUIRE(model.ok());
  const Model& m = **model;
  const Tensor tokens = ids_of(refs().at("tokens"));
  const Tensor numbers = tensor_of(refs().at("numbers"));
  CHECK(m.check_input(tokens, {&numbers, 1}).ok());
  const Status floats = m.check_input(tensor_of(refs().at("tokens")), {&numbers, 1});
  REQUIRE(!floats.ok());
  CHECK(floats.error().message == "the data gives float32 features for \"tokens\", but model.inputs.tokens.dtype is int32");
  const Tensor ids = ids_of(refs().at("numbers"));
  const Status second = m.check_input(tokens, {&ids, 1});
  REQUIRE(!second.ok());
  CHECK(second.error().message == "the data gives int32 features for \"numbers\", but model.inputs.numbers.dtype is float32");
  Tensor bad = tokens.clone();
  bad.host_data<int32_t>()[7] = 7;
  const Status range = m.check_input(bad, {&numbers, 1});
  REQUIRE(!range.ok());
  // tokens (4, 5): flat index 7 is row 1, position 2.
  CHECK(range.error().message ==
        "example 1, position 2: id 7 of model.inputs.tokens is out of range for layer \"embed\" (input_dim 7: ids 0..6)");
}

TEST_CASE("multi-input: the model's errors, each with its place") {
  const std::string head = "model:\n  inputs:\n    a: {shape: [3]}\n    b: {shape: [2]}\n  layers:\n";
  // The first layer has no inputs: and there are two model inputs.
  CHECK(model_error(head + "    - {name: d, type: dense, units: 2}\n") ==
        "multi.yaml:6:7: model.layers[0] (dense): inputs: not given, so the layer would read the model's input, but the "
        "model has 2 inputs (a, b); name the one it reads, e.g. inputs: a");
  // An input no layer reads.
  CHECK(model_error(head + "    - {name: d, type: dense, units: 2, inputs: a}\n") ==
        "multi.yaml:4:5: model.inputs.b: no layer reads the input \"b\" on the way to the output; read it with inputs: "
        "b (or remove it)");
  // An unknown name suggests the inputs too.
  CHECK(model_error(head + "    - {name: c, type: concatenate, inputs: [a, bb]}\n") ==
        "multi.yaml:6:48: model.layers[0] (concatenate): inputs: unknown layer \"bb\" (did you mean \"b\"?)");
  // A layer named like an input.
  CHECK(model_error(head + "    - {name: c, type: concatenate, inputs: [a, b]}\n    - {name: b, type: dense, units: 1}\n")
            .find("duplicate layer name \"b\" (it is a model input)") != std::string::npos);
  CHECK(model_error(head + "    - {name: c, type: concatenate, inputs: [a, b]}\n") == "");
  // A block's layers may read any model input, as a layer above the block's use.
  CHECK(model_error("model:\n  inputs:\n    a: {shape: [3]}\n    b: {shape: [3]}\n  blocks:\n    mix:\n      layers:\n"
                    "        - {name: d, type: dense, units: 3}\n        - {name: out, type: add, inputs: [d, b]}\n"
                    "  layers:\n    - {name: m, block: mix, inputs: a}\n    - {type: dense, units: 2}\n") == "");
}

}  // namespace
}  // namespace dtrain
